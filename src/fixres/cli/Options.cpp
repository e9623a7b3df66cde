// Shared option groups.
#include "fixres/cli/Options.h"

#include "fixres/cli/Flags.h"
#include "fixres/common/Log.h"

namespace fixres::cli {
void addClusterOptions(CLI::App& app, ClusterOptions& o) {
  ClusterOptions::visitSettings(o, SettingsBinder{app});
}

distributed::WorldInfo resolveWorld(const ClusterOptions& o) {
  auto world = distributed::detectWorld(o.flags, distributed::currentEnvironment());
  log::setRank(world.rank, world.worldSize);
  return world;
}

}  // namespace fixres::cli

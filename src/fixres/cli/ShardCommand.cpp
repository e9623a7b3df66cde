// `fixres shard`: an image folder (or shards) -> shuffled tar shards in the WebDataset layout,
// with their index (data/ShardWriter.h).
#include <algorithm>
#include <iostream>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/cli/SharedRows.h"
#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"
#include "fixres/data/Dataset.h"
#include "fixres/data/ShardWriter.h"

namespace fixres::cli {

Command addShardCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "shard", "Write an image folder as shuffled tar shards (WebDataset layout) with an index");
  auto s = std::make_shared<data::ShardRequest>();
  bindSetting(*sub, kDatasetPathRow, s->datasetPath)->required();
  bindSetting(*sub, kOutRow, s->outDir)->required();
  data::ShardRequest::visitSettings(*s, SettingsBinder{*sub});
  bindSetting(*sub, engine::kSeedRow, s->seed);
  return {sub, [s]() -> int {
            checkOutputPath("--out", s->outDir, {{"--dataset-path", s->datasetPath}});
            auto dataset = data::openDataset(s->datasetPath);
            installStopHandlers();  // Ctrl-C removes what was written
            const auto r = data::writeShards(*dataset, s->writeOptions());
            if (r.stopSignal != 0) {
              log::warn("shard: stopped by ", stopSignalName(r.stopSignal), ", nothing written to ",
                        s->outDir);
              return 128 + r.stopSignal;
            }
            std::cout << "wrote " << r.samples << " samples in " << r.shards << " shard(s), "
                      << dataset->classes().size() << " classes -> " << s->outDir << std::endl;
            return 0;
          }};
}

}  // namespace fixres::cli

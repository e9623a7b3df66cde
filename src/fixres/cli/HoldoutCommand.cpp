// `fixres holdout`: carve a held-out split from DATA/train/ (data/Holdout.h), the split the
// sweep chooses its test size on, for data that came with train/ and val/ only.
#include <iostream>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/cli/SharedRows.h"
#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"
#include "fixres/data/Holdout.h"

namespace fixres::cli {

Command addHoldoutCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "holdout",
      "Move a seeded fraction of each class of DATA/train/ to DATA/holdout/: the held-out split "
      "sweep chooses on (before training on DATA/train/)");
  auto s = std::make_shared<data::HoldoutRequest>();
  bindSetting(*sub, kImnetPathRow, s->imnetPath)->required();
  data::HoldoutRequest::visitSettings(*s, SettingsBinder{*sub});
  bindSetting(*sub, engine::kSeedRow, s->seed);
  return {sub, [s]() -> int {
            const auto plan = data::planHoldout(s->imnetPath + "/train", s->imnetPath + "/holdout",
                                                s->fraction, static_cast<uint64_t>(s->seed));
            installStopHandlers();  // Ctrl-C moves every image back
            const int signal = data::carveHoldout(plan);
            if (signal != 0) {
              log::warn("holdout: stopped by signal ", signal, ", every image moved back to ",
                        plan.trainRoot);
              return 128 + signal;
            }
            int64_t kept = 0, moved = 0;
            for (size_t c = 0; c < plan.classes.size(); ++c) {
              kept += plan.kept[c];
              moved += plan.moved[c];
            }
            std::cout << "holdout: " << moved << " images of " << plan.classes.size()
                      << " classes moved to " << plan.holdoutRoot << ", " << kept << " left in "
                      << plan.trainRoot << " (fraction " << s->fraction << ", seed " << s->seed
                      << ")" << std::endl;
            return 0;
          }};
}

}  // namespace fixres::cli

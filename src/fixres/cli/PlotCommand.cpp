// `fixres plot RUN_DIR [--out FILE.svg]`: the curves of a train or finetune run (loss, learning
// rate, top-1 per epoch on the training batches and held out) as one SVG, from its metrics.jsonl.
#include <sys/stat.h>

#include <iostream>
#include <string>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/cli/SharedRows.h"
#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/engine/RunCurves.h"

namespace fixres::cli {

Command addPlotCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "plot", "Draw a run's curves (loss, learning rate, top-1 per epoch) from its metrics.jsonl");
  struct State {
    std::string runDir, out;
  };
  auto s = std::make_shared<State>();
  bindSetting(*sub, engine::kPlotRunDirRow, s->runDir)->required();
  bindSetting(*sub, kOutRow, s->out);
  return {sub, [s]() -> int {
            struct stat st {};
            FIXRES_CHECK(::stat(s->runDir.c_str(), &st) == 0, DataError, "run folder ", s->runDir,
                         " does not exist");
            FIXRES_CHECK(S_ISDIR(st.st_mode), DataError, s->runDir, " is not a folder");
            const std::string metrics = s->runDir + "/metrics.jsonl";
            FIXRES_CHECK(fileExists(metrics), DataError, s->runDir,
                         " has no metrics.jsonl (not the run folder of fixres train or finetune)");
            const std::string out = s->out.empty() ? s->runDir + "/curves.svg" : s->out;
            checkOutputPath("--out", out);
            checkOutputFolder(out, "the plot");
            const auto curves = engine::readRunCurves(metrics);
            std::string title = s->runDir;
            while (title.size() > 1 && title.back() == '/') title.pop_back();
            title = title.substr(title.find_last_of('/') + 1);
            writeFileAtomic(out, engine::runCurvesSvg(curves, title));
            std::cout << "wrote " << out << " (" << curves.steps.size() << " progress records, "
                      << curves.top1.size() << " top-1 series)" << std::endl;
            return 0;
          }};
}

}  // namespace fixres::cli

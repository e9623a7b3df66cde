// `fixres import`: IDX files (Fashion-MNIST by default) -> image folder with train/, holdout/
// and val/, cached and idempotent.
#include <iostream>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/cli/SharedRows.h"
#include "fixres/common/Log.h"
#include "fixres/common/StopSignal.h"
#include "fixres/data/Import.h"

namespace fixres::cli {

Command addImportCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "import", "Turn IDX files (Fashion-MNIST from the Debian package) into an image folder");
  auto o = std::make_shared<data::ImportOptions>();
  data::ImportOptions::visitSettings(*o, SettingsBinder{*sub});
  bindSetting(*sub, kOutRow, o->outDir)->required();
  return {sub, [o]() -> int {
            checkOutputPath("--out", o->outDir, {{"--source", o->sourceDir}});
            if (!o->numericClasses) o->classNames = data::fashionMnistClassNames();
            installStopHandlers();  // Ctrl-C removes the partly written folder
            auto r = data::importIdx(*o);
            if (r.stopSignal != 0) {
              log::warn("import: stopped by signal ", r.stopSignal, ", nothing written to ",
                        o->outDir);
              return 128 + r.stopSignal;
            }
            std::cout << (r.alreadyThere ? "already imported: " : "imported: ") << o->outDir
                      << " (train " << r.train << ", holdout " << r.holdout << ", val " << r.val
                      << ")" << std::endl;
            return 0;
          }};
}

}  // namespace fixres::cli

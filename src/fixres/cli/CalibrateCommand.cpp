// `fixres calibrate`: FixRes without labels, the BatchNorm statistics re-estimated at the test
// resolution from unlabelled images, written as a weight file that eval, extract and finetune read.
#include <iostream>
#include <string>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/cli/RunOptions.h"
#include "fixres/cli/SharedRows.h"
#include "fixres/common/Log.h"
#include "fixres/engine/CalibrationJob.h"
#include "fixres/engine/OnnxExport.h"
#include "fixres/engine/OpenVinoModel.h"

namespace fixres::cli {

Command addCalibrateCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "calibrate",
      "Re-estimate every BatchNorm's statistics at the test resolution from unlabelled images "
      "(no gradient, no labels) and write the weights");
  struct State {
    engine::CalibrationJob job;
    engine::ModelSpec model;
    EvalFlags eval;  // the job's eval settings, numerics and --cpu
  };
  auto s = std::make_shared<State>();
  engine::CalibrationJob& j = s->job;
  addConfigFile(*sub);
  addModelOptions(*sub, s->model);
  bindSetting(*sub, kDatasetPathRow, j.datasetPath)->required();
  bindSetting(*sub, engine::kInputSizeRow, s->eval.inputSize);
  addEvalFlags(*sub, s->eval);
  bindSetting(*sub, engine::kSkipBadImagesRow, s->eval.settings.skipBadImages);
  bindSetting(*sub, engine::kSeedRow, j.seed);
  engine::CalibrationJob::visitSettings(j, SettingsBinder{*sub});
  bindSetting(*sub, kOutRow, j.out)->required();
  return {sub, [s, sub]() -> int {
            checkOutputPath("--out", s->job.out, givenInputs(*sub, {"--out"}));
            if (s->job.layout == engine::ExportLayout::kOpenVino)  // OUT.xml and OUT.bin
              checkOutputPath("--out", engine::openVinoBinPath(s->job.out),
                              givenInputs(*sub, {"--out"}));
            engine::CalibrationJob job = s->job;
            job.model = modelRequest(s->eval, s->model);
            job.eval = s->eval.settings;
            job.numerics = s->eval.numerics.options();
            job.cpu = s->eval.cpu;
            int size = 0;
            const auto r = engine::runCalibration(job, &size);
            std::cout << "calibrated " << r.layers << " BatchNorm layers of "
                      << s->model.architectureName() << " at " << size << " px on " << r.images
                      << " images (" << r.batches << " batches) -> " << job.out << std::endl;
            return 0;
          }};
}

}  // namespace fixres::cli

// The calibrate subcommand's flow.
#include "fixres/engine/CalibrationJob.h"

#include "fixres/common/Error.h"
#include "fixres/data/Dataset.h"

namespace fixres::engine {

CalibrationResult runCalibration(const CalibrationJob& job, int* size) {
  FIXRES_CHECK(!job.model.spec.weightPath.empty(), UsageError,
               "calibrate needs --weight-path (the trained weights to calibrate)");
  const ResolvedModel model = resolveModel(job.model, {job.inputSize});
  if (size != nullptr) *size = model.size();
  auto dataset = data::openUnlabelledImages(job.datasetPath);
  int64_t classes = model.spec.numClasses;
  if (classes == 0) classes = static_cast<int64_t>(data::declaredClasses(job.datasetPath).size());
  FIXRES_CHECK(classes >= 1, UsageError, "calibrate: ", job.datasetPath,
               " has no class folders and no shard index naming the classes: give --num-classes "
               "(the classifier's size)");
  const auto run = makeRunDevice(0, job.cpu, job.numerics);
  auto built = buildModel(model, classes, run, job.seed);
  CalibrateOptions o;
  o.eval = model.evalOptions(job.eval, model.size(), run, job.seed);
  o.maxImages = job.maxImages;
  const CalibrationResult r = calibrate(built.model, dataset, o);
  built.model->to(torch::kCPU);
  if (job.layout == ExportLayout::kTimmHub || job.layout == ExportLayout::kOnnx ||
      job.layout == ExportLayout::kOpenVino) {
    // The hub folder and the ONNX model record the preprocessing just calibrated with.
    ModelSpec spec = job.model.spec;
    spec.numClasses = classes;
    exportModel(*built.model, job.layout, exportCard(spec, model.input), job.out);
  } else {
    exportWeights(*built.model, job.layout, job.out);
  }
  return r;
}

}  // namespace fixres::engine

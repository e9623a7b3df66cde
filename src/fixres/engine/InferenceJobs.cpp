// The predict and extract jobs (InferenceJobs.h).
#include "fixres/engine/InferenceJobs.h"

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/data/ImageInputs.h"
#include "fixres/data/Npy.h"

namespace fixres::engine {

PredictJob::PredictJob(const PredictRequest& request, std::istream& standardInput)
    : request_(request) {
  const ModelSpec& spec = request.model.spec;
  FIXRES_CHECK(!spec.weightPath.empty(), UsageError,
               "predict needs --weight-path (a weight file, run folder or timm hub folder) or "
               "--pretrained");
  model_ = resolveModel(request.model, {});
  std::string why;
  classes_ = model_.classCount(&why);
  // A state dict without this architecture's classifier: most likely another architecture's.
  FIXRES_CHECK(classes_ > 0 || why.empty(), WeightsError, spec.weightPath, " does not fit ",
               spec.architectureName(), ": ", why, "; wrong --architecture?");
  FIXRES_CHECK(classes_ > 0, UsageError, "predict cannot tell the number of classes of ",
               spec.weightPath, ": give --num-classes or --class-names");
  const auto& names = model_.classNames;
  FIXRES_CHECK(
      names.empty() || static_cast<int64_t>(names.size()) == classes_, DataError,
      request.model.classNamesFile.empty() ? spec.weightPath : request.model.classNamesFile, ": ",
      names.size(), " class names, but the weights have ", classes_, " classes");
  model_.spec.numClasses = classes_;
  images_ = data::openImageInputs(request.inputs, standardInput);
}

std::vector<PredictRow> PredictJob::run(const RunDevice& device,
                                        distributed::Communicator& comm) const {
  auto model = buildModel(model_, classes_, device).model;
  auto o = model_.evalOptions(request_.eval, model_.size(), device);
  return predict(model, images_, o, request_.output, comm);
}

ExtractJob::ExtractJob(const ExtractRequest& request) : request_(request) {
  FIXRES_CHECK(!request.model.spec.weightPath.empty(), UsageError, "extract needs --weight-path");
  model_ = resolveModel(request.model, {224});
  dataset_ = data::openDataset(request.datasetPath);
}

ExtractResult ExtractJob::run(const RunDevice& device, distributed::Communicator& comm) const {
  const std::string& dir = request_.savePath;
  // The output folder exists before the work whose results it takes.
  if (comm.rank() == 0) makeDirectories(dir);
  auto model = buildModel(model_, static_cast<int64_t>(dataset_->classes().size()), device).model;
  auto o = model_.evalOptions(request_.eval, model_.size(), device);
  auto out = extract(model, dataset_, o, comm);
  ExtractResult r;
  if (comm.rank() != 0) return r;
  const std::string a = model_.spec.architectureOrDefault();
  data::writeNpy(dir + "/labels.npy", out.labels);
  data::writeNpy(dir + "/" + a + "_logits.npy", out.logits);
  data::writeNpy(dir + "/" + a + "_softmax.npy",
                 torch::softmax(out.logits.to(torch::kFloat64), 1).to(torch::kFloat32));
  data::writeNpy(dir + "/" + a + "_embedding.npy", out.embeddings);
  r.images = out.labels.size(0);
  r.classes = out.logits.size(1);
  r.embedding = out.embeddings.size(1);
  return r;
}

}  // namespace fixres::engine

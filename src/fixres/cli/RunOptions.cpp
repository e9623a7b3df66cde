// Shared option groups of the run subcommands.
#include "fixres/cli/RunOptions.h"

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/models/Registry.h"
#include "fixres/models/WeightIO.h"

namespace fixres::cli {

void addModelOptions(CLI::App& app, ModelFlags& f) {
  app.add_option("--architecture", f.architecture,
                 "Model name (FixRes or torchvision spelling: ResNet50, resnet50, "
                 "IGAM_Resnext101_32x48d, ...)")
      ->capture_default_str()
      ->group("Model");
  app.add_option("--weight-path,--resnet-weight-path", f.weightPath,
                 "Weights: torch.save file (state dict, FixRes {'model': ...}, or a fixres "
                 "checkpoint)")
      ->group("Model");
  app.add_option("--num-classes", f.numClasses, "Classifier size (0: number of dataset classes)")
      ->capture_default_str()
      ->group("Model");
  app.add_flag("--skip-classifier", f.skipClassifier,
               "Load every weight but the classifier (for another number of classes)")
      ->group("Model");
}

void addTrainingOptions(CLI::App& app, engine::RunConfig& c, ModelFlags& model,
                        std::string& imnetPath) {
  addModelOptions(app, model);
  app.add_option("--imnet-path", imnetPath, "Image folder root holding train/ and val/")
      ->required()
      ->group("Data");
  app.add_option("--input-size", c.inputSize, "Resolution (train: train size; finetune: test size)")
      ->capture_default_str()
      ->group("Data");
  app.add_option("--batch", c.batch, "Images per process and step")
      ->capture_default_str()
      ->group("Data");
  app.add_option("--workers", c.workers, "Loader threads per process")
      ->capture_default_str()
      ->group("Data");
  app.add_option("--accumulation-steps", c.accumulationSteps,
                 "Micro-batches of --batch whose gradients add up to one optimizer step")
      ->capture_default_str()
      ->group("Optimisation");
  addNumericsOptions(app, c.precision, c.memoryFormat, &c.normalizeOn, "Optimisation");
  app.add_option("--transform", c.trainTransform, "Train transform: full, torch, val, v2-train")
      ->capture_default_str()
      ->group("Data");
  app.add_option("--resize-mode", c.resizeMode, "Val resize: fixres (height set) or shorter")
      ->capture_default_str()
      ->group("Data");
  app.add_option("--sampler", c.sampler, "ra (repeated augmentation) or distributed")
      ->capture_default_str()
      ->group("Data");
  app.add_option("--repetitions", c.repetitions, "Repeated augmentation: copies of each image")
      ->capture_default_str()
      ->group("Data");
  app.add_option("--iteration-cap", c.iterationCap,
                 "Max iterations per epoch (-1: FixRes cap 5005*512/total batch for train)")
      ->capture_default_str()
      ->group("Data");
  app.add_flag("--skip-bad-images", c.skipBadImages,
               "Skip unreadable images (counted) instead of failing")
      ->group("Data");
  app.add_option("--epochs", c.epochs, "Epochs")->capture_default_str()->group("Optimisation");
  app.add_option("--learning-rate", c.learningRate,
                 "Base learning rate, scaled 8 x lr x batch x processes / 512 unless --absolute-lr")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_flag("--absolute-lr", c.absoluteLr, "Use --learning-rate as is (no linear scaling)")
      ->group("Optimisation");
  app.add_option("--momentum", c.momentum, "SGD momentum")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_option("--weight-decay", c.weightDecay, "SGD weight decay")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_flag("--nesterov", c.nesterov, "Nesterov momentum")->group("Optimisation");
  app.add_option("--lr-schedule", c.lrSchedule, "step (StepLR), cosine or constant")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_option("--lr-step", c.lrStep, "StepLR period in epochs")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_option("--lr-gamma", c.lrGamma, "StepLR factor")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_option("--warmup-epochs", c.warmupEpochs, "Linear warm-up (epochs)")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_option("--label-smoothing", c.labelSmoothing, "Label smoothing")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_option("--eval-every", c.evalEvery, "Evaluate every K epochs (and after the last)")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_option("--seed", c.seed, "Seed of initialisation, sampling and augmentation")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_option("--stop-after-steps", c.stopAfterSteps,
                 "Stop (with a checkpoint) after this many steps in total; rerun to resume")
      ->group("Optimisation");
  app.add_option("--log-every", c.logEvery, "Progress line every N iterations")
      ->capture_default_str()
      ->group("Output");
}

void addNumericsOptions(CLI::App& app, std::string& precision, std::string& memoryFormat,
                        std::string* normalizeOn, const std::string& group) {
  app.add_option("--precision", precision,
                 "auto (bf16 autocast on CUDA, fp32 on CPU), fp32 or bf16")
      ->capture_default_str()
      ->group(group);
  app.add_option("--memory-format", memoryFormat,
                 "auto (channels-last on CUDA), contiguous or channels-last")
      ->capture_default_str()
      ->group(group);
  if (normalizeOn) {
    app.add_option("--normalize-on", *normalizeOn,
                   "auto (device on CUDA), cpu or device: where uint8 images become normalised "
                   "floats (device: 4x smaller batches to copy)")
        ->capture_default_str()
        ->group("Data");
  }
}

torch::Device deviceFor(const distributed::WorldInfo& world, bool cpuOnly) {
  if (!cpuOnly && torch::cuda::is_available()) {
    int n = static_cast<int>(torch::cuda::device_count());
    // Fixed input shapes (every batch but an epoch's last): let cuDNN time its algorithms once
    // per shape and keep the fastest, as PyTorch's torch.backends.cudnn.benchmark = True.
    at::globalContext().setBenchmarkCuDNN(true);
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(world.localRank % n));
  }
  return torch::kCPU;
}

std::string runFolder(const std::string& shared, const std::string& mode, const std::string& job) {
  return (shared.empty() ? std::string("runs") : shared) + "/" + mode + "/" + job;
}

std::unique_ptr<distributed::Communicator> connectWorld(const ClusterOptions& cluster,
                                                        distributed::WorldInfo& world, bool cuda) {
  world = resolveWorld(cluster);
  distributed::ConnectOptions co;
  co.backend = distributed::parseBackend(cluster.backend);
  co.cuda = cuda;
  co.networkInterface = cluster.networkInterface;
  auto comm = distributed::connect(world, co);
  if (world.distributed())
    log::info("world: ", world.worldSize, " processes (", world.source, "), backend ",
              comm->backendName());
  return comm;
}

models::ResNet loadModel(const ModelFlags& f, int64_t datasetClasses, torch::Device device,
                         const std::string& command) {
  FIXRES_CHECK(!f.weightPath.empty(), UsageError, command, " needs --weight-path");
  auto model =
      models::createModel(f.architecture, f.numClasses > 0 ? f.numClasses : datasetClasses);
  models::LoadOptions lo;
  lo.skipClassifier = f.skipClassifier;
  models::loadWeightsFile(*model, f.weightPath, lo);
  model->to(device);
  return model;
}

void addEvalFlags(CLI::App& app, EvalFlags& f) {
  app.add_option("--resize-mode", f.resizeMode, "fixres (height set, the reference) or shorter")
      ->capture_default_str()
      ->group("Data");
  app.add_option("--batch", f.batch, "Images per process and step")
      ->capture_default_str()
      ->group("Data");
  app.add_option("--workers", f.workers, "Loader threads per process")
      ->capture_default_str()
      ->group("Data");
  app.add_flag("--test-flip", f.testFlip, "Average logits with the horizontally flipped image")
      ->group("Data");
  addNumericsOptions(app, f.precision, f.memoryFormat, &f.normalizeOn, "Options");
  app.add_flag("--cpu", f.cpu, "Run on the CPU even when CUDA is available");
}

engine::EvalOptions valOptions(int size, const EvalFlags& f, torch::Device device) {
  engine::EvalOptions o;
  o.transform.kind = image::TransformKind::kVal;
  o.transform.inputSize = size;
  o.transform.resizeMode = image::parseResizeMode(f.resizeMode);
  o.batch = f.batch;
  o.workers = f.workers;
  o.testFlip = f.testFlip;
  o.device = device;
  o.precision = engine::parsePrecision(f.precision, device);
  o.channelsLast = engine::parseChannelsLast(f.memoryFormat, device);
  o.normalizeOnDevice = engine::parseNormalizeOnDevice(f.normalizeOn, device);
  return o;
}

std::vector<int> parseSizes(const std::string& text, const std::string& flag) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      int v = std::stoi(item, &used);
      FIXRES_CHECK(used == item.size() && v >= 8 && v <= 4096, UsageError, flag,
                   " values must be integers in [8, 4096], got '", item, "'");
      out.push_back(v);
    } catch (const std::logic_error&) {
      FIXRES_FAIL(UsageError, flag, " must be a comma-separated list of sizes, got '", text, "'");
    }
  }
  FIXRES_CHECK(!out.empty(), UsageError, flag, " is empty");
  return out;
}

}  // namespace fixres::cli

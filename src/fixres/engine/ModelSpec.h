// What a run's model is: architecture, classifier size, starting weights and the preprocessing
// its weights expect. Bound directly by the CLI (--architecture, --num-classes, --weight-path,
// --skip-classifier) and turned into a model on a device by buildModel, the one place models
// are built for train, finetune, eval, extract and sweep.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fixres/common/Download.h"
#include "fixres/common/Setting.h"
#include "fixres/image/Transform.h"
#include "fixres/models/Model.h"
#include "fixres/models/Registry.h"
#include "fixres/models/WeightIO.h"
#include "fixres/runtime/Numerics.h"
#include "fixres/runtime/Preprocessing.h"

namespace fixres::engine {

// The sizes a model is fed (--input-size, --sizes, --train-size, a run's sizes): integers in
// [8, 4096], the one range of every flag and list of them.
inline constexpr Range kImageSizes = Range::integers(8, 4096);
// --architecture where it only names a network.
inline constexpr CommandHelp kArchitectureHelp[] = {
    {"suggest-resolution",
     "The network whose output stride the suggestion is rounded to (sizes off the stride cost "
     "accuracy: docs/resolution.md)"},
    {nullptr, nullptr}};

// The commands that train a model (flags of training alone: dropout, stochastic depth).
inline constexpr const char* kTrainingCommands = "train,finetune,sweep";

// Rows other commands bind too, by these names (cli/Flags.h: bindSetting).
inline constexpr Setting kUseEmaRow{
    "use_ema",
    "--use-ema",
    "Model",
    "Load the checkpoint's EMA weights (model_ema, saved by runs with --model-ema) "
    "instead of its model",
    {},
    SettingRole::kCompared,
    "finetune"};
inline constexpr Setting kArchitectureRow{
    "architecture",
    "--architecture,--model",
    "Model",
    "Model name, in FixRes's, torchvision's or timm's spelling (docs/models.md; an "
    "unknown name is refused with the list of known ones; default: a model folder's "
    "when --weight-path names one, else ResNet50)",
    {},
    SettingRole::kDefinesRun,
    "",
    "",
    kArchitectureHelp};
inline constexpr Setting kNumClassesRow{
    "num_classes",
    "--num-classes",
    "Model",
    "Classifier size (0: a model folder's, else the number of dataset classes)",
    Range::integers(0, 1000000),
    SettingRole::kDefinesRun};

// The architecture of a model whose flags, --pretrained and model folder name none.
inline constexpr const char* kDefaultArchitecture = "ResNet50";

struct ModelSpec {
  // Any name of models::knownArchitectures(); unset when not given (--pretrained's or a model
  // folder's applies, else kDefaultArchitecture: architectureName()).
  std::optional<std::string> architecture;
  std::string efficientNetModel;  // with architecture "EfficientNet" (the reference's spelling)
  int64_t numClasses = 0;         // 0: the number of classes of the dataset
  // Empty: random initialisation (seeded). A local file, or an http(s) URL (optionally
  // "URL#sha256=HEX") fetched into download.cacheDir first (common/Download.h).
  std::string weightPath;
  bool skipClassifier = false;  // load every weight but the classifier
  // Load the file's EMA weights (a checkpoint's "model_ema", --use-ema) instead of its "model".
  bool useEma = false;
  // Preprocessing overrides: empty mean/std: the architecture's (ImageNet's; 0.5 for PNASNet).
  std::vector<float> mean, std;
  // The resize filter; unset when not given (a model folder's applies, else bilinear, the
  // reference's: filter()).
  std::optional<image::Filter> interpolation;
  // Dropout and drop-path rates in training (< 0: the architecture's default).
  double dropRate = -1, dropPathRate = -1;
  // Vision transformers: the image size the position embedding is laid out for (0: the size the
  // run feeds, runSize), and whether inputs of other sizes resample it per forward pass.
  int imgSize = 0;
  bool dynamicImgSize = false;
  // The size the subcommand feeds the model (set by it before buildModel; 0: the architecture's).
  int runSize = 0;
  // Where and how a weightPath URL is fetched (--cache-dir, --download-timeout); not a setting
  // of the run (config.json does not record it).
  DownloadOptions download;

  // The settings (common/Setting.h); --pretrained, --cache-dir and --download-timeout are the
  // CLI's (RunOptions.h).
  template <typename Self, typename V>
  static void visitSettings(Self& m, V&& v) {
    v(kArchitectureRow, m.architecture);
    v(Setting{"efficientnet_model",
              "--EfficientNet-models",
              "Model",
              "With --architecture EfficientNet (the reference's spelling): the timm model, e.g. "
              "tf_efficientnet_b0_ap, tf_efficientnet_l2_ns",
              {},
              SettingRole::kDefinesRun},
      m.efficientNetModel);
    v(Setting{"interpolation", "--interpolation", "Model",
              "Resize filter: bilinear (the reference's) or bicubic (timm's recipes; default: a "
              "model folder's, else bilinear)"},
      m.interpolation, image::interpolations());
    v(Setting{"mean", "--mean", "Model",
              "Normalisation mean R G B (default: the architecture's; ImageNet's)"},
      m.mean);
    v(Setting{"std", "--std", "Model",
              "Normalisation std R G B (default: the architecture's; ImageNet's)"},
      m.std);
    v(Setting{"drop_rate", "--drop-rate", "Model",
              "Dropout before the classifier in training (default: the architecture's own, "
              "docs/models.md)",
              Range::reals(0, 0.99).orValue(-1, "the architecture's"), SettingRole::kCompared,
              kTrainingCommands},
      m.dropRate);
    v(Setting{"drop_path_rate", "--drop-path-rate", "Model",
              "Stochastic depth in training, rising linearly to this rate over the blocks, for "
              "architectures that have it (default: the architecture's own, docs/models.md)",
              Range::reals(0, 0.99).orValue(-1, "the architecture's"), SettingRole::kCompared,
              kTrainingCommands},
      m.dropPathRate);
    v(Setting{"img_size", "--img-size", "Model",
              "With a position embedding: the image size it is laid out for, as timm's "
              "create_model(img_size=...) (not the input size: that is --input-size); the "
              "weights' embedding is resampled to it (bicubic) when they load (0: the size the "
              "command runs at)",
              kImageSizes.orValue(0, "the size the command runs at")},
      m.imgSize);
    v(Setting{"dynamic_img_size", "--dynamic-img-size", "Model",
              "With a position embedding: resample it per input, so that one model "
              "takes images of any size (timm's dynamic_img_size; sweep and several --input-size "
              "values turn it on)"},
      m.dynamicImgSize);
    v(kNumClassesRow, m.numClasses);
    v(Setting{"weight_path", "--weight-path,--resnet-weight-path", "Model",
              "Weights: torch.save file (zip or pre-1.6: state dict, FixRes {'model': ...}, or a "
              "fixres checkpoint), safetensors state dict, an http(s) URL fetched into the "
              "cache first (URL#sha256=HEX: checked against that SHA-256 or its first 8+ digits), "
              "or a model folder: a train/finetune run folder or a timm hub folder (its "
              "architecture, classes and test preprocessing apply where not given)"},
      m.weightPath);
    v(Setting{"skip_classifier", "--skip-classifier", "Model",
              "Load every weight but the classifier (for another number of classes)"},
      m.skipClassifier);
    v(kUseEmaRow, m.useEma);
  }

  // This spec for a command that feeds the model images of `sizes`: runSize the first, and a
  // dynamic position embedding when they differ. UsageError naming `flag` and the size for one
  // under the architecture's minimum.
  ModelSpec forSizes(const std::vector<int>& sizes, const char* flag = "--input-size") const;
  // The registry name: efficientNetModel for "EfficientNet", else the architecture (its default
  // when unset). UsageError when --EfficientNet-models is missing or given with another
  // architecture.
  std::string architectureName() const;
  // The architecture as given or completed, kDefaultArchitecture when unset ("EfficientNet" for
  // the reference's spelling).
  std::string architectureOrDefault() const { return architecture.value_or(kDefaultArchitecture); }
  image::Filter filter() const { return interpolation.value_or(image::Filter::kBilinear); }
  // Whether --architecture or --EfficientNet-models named the network.
  bool architectureGiven() const { return architecture || !efficientNetModel.empty(); }
  // This spec with the defaults of what was left unset (architecture, filter) written in: what a
  // run records in config.json.
  ModelSpec withDefaults() const;
  models::ArchInfo info() const { return models::architectureInfo(architectureName()); }
  // The preprocessing of this model's inputs at runSize (else the architecture's test size):
  // its normalisation and filter, FixRes's crop and resize rule (resolveModel weighs the flags
  // and a model folder's against them).
  Preprocessing preprocessing() const;
  // UsageError naming the flag for an unknown architecture, bad overrides or a malformed
  // "#sha256=" part of a weight URL.
  void validate() const;
};

// The file buildModel loads: spec.weightPath; a model folder's weight file (ModelCard.h: a run's
// checkpoint.pth, a hub folder's model.safetensors); or for an http(s) URL its copy in the cache,
// fetched first when missing (models::fetchWeightFile: WeightsError for a failed download or a
// file that is not a weight file fixres reads, OutputError for a cache that cannot be written).
// "" when spec.weightPath is empty.
std::string localWeightFile(const ModelSpec& spec);

// The number of outputs of the classifier in spec's weight file (its "model" or "state_dict"
// entry, "module." names too), 0 when there is no file or no such tensor. Reads only the header.
// When the file is a state dict without that tensor, `why` (when given) says so, naming the
// tensor and the file's first tensors (weights of another architecture, most likely).
int64_t classifierSizeIn(const ModelSpec& spec, std::string* why = nullptr);

}  // namespace fixres::engine

// What a model folder says about its model: a train or finetune run folder (config.json and
// checkpoint.pth) or a timm hub folder (config.json in timm's layout and model.safetensors, as
// `fixres export --format timm-hub` or timm's push_to_hub writes it; a `fixres sweep` folder is
// one too, its config.json naming the chosen weight file in fixres.weights). Such a folder is
// accepted wherever a weight file is (--weight-path): its weights, architecture, classes and
// test-time preprocessing come from it. The hub folder's config.json is written here too.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fixres/engine/ModelSpec.h"

namespace fixres::engine {

enum class ModelFolderKind { kRun, kTimmHub };

struct ModelCard {
  ModelFolderKind kind = ModelFolderKind::kRun;
  std::string folder;
  std::string weightFile;         // checkpoint.pth or model.safetensors
  std::string architecture;       // a registry name (fixres's or timm's spelling)
  std::string efficientNetModel;  // a run's --EfficientNet-models with architecture EfficientNet
  int64_t numClasses = 0;         // 0: unknown
  int trainSize = 0;              // timm's input_size
  int testSize = 0;               // the test resolution (timm's test_input_size)
  double cropPct = 0.875, testCropPct = 0.875;  // fixres's val transform: S / int(S * 256 / 224)
  std::vector<float> mean, std;                 // empty: the architecture's
  std::optional<image::Filter> filter;
  std::optional<image::ResizeMode> resizeMode;  // fixres's height rule or the shorter side
  std::vector<std::string> classNames;          // empty: not recorded
  std::string license;                          // "" when not recorded
  std::string source;     // the weights it started from (a run's --weight-path)
  std::string trainPath;  // a run's training images (its config.json's train_path), "" if none
  // What a sweep chose to run the model in (fixres.runtime, fixres.precision of a sweep folder's
  // config.json): the default of predict, eval and extract. None: not recorded.
  std::optional<RuntimeChoice> runtime;
  std::optional<PrecisionChoice> precision;

  // The test preprocessing the card records (a card exportCard made: the record it was given):
  // the test size, test crop, resize rule, filter, mean and std (the defaults where it records
  // none; not dynamic).
  Preprocessing test() const;
};

// Whether `path` is a folder (a weight *file* is not).
bool isModelFolder(const std::string& path);

// Reads the folder: a run folder has config.json with a "mode" and checkpoint.pth; a hub folder
// config.json with "architecture" (timm's layout, also its older single-dict form) and
// model.safetensors. The test size is a finetune run's --input-size, a train run's evaluation
// size, the hub config's test_input_size (else input_size). A run's class names are its
// config.json's class_names, else the class folders its train_path declares (when it is still
// there). WeightsError (exit 4) naming the folder and the file when it is neither, or a file is
// missing or malformed.
ModelCard readModelFolder(const std::string& path);

// The card's values where `spec` was not given them: architecture, classifier size, filter,
// mean and std (unset, 0 or empty: not given, on the command line or by --config).
void applyModelCard(const ModelCard& card, ModelSpec& spec);

// The license of weights fine-tuned or trained from `weightPath`: FixRes's published files
// (dl.fbaipublicfiles.com/FixRes*) are CC BY-NC 4.0, and so is what is derived from them; ""
// otherwise (unknown).
std::string derivedLicense(const std::string& weightPath);

// What an export records besides the model and its test preprocessing: given values win over
// the model folder's.
struct CardOverrides {
  int trainSize = 0;           // 0: the folder's, else the architecture's
  std::string classNamesFile;  // "": the folder's names
  std::string license;         // "": the folder's, else derivedLicense
};

// The card of the model `spec` builds, recording `test` (its resolved test preprocessing: size,
// crop, resize rule, filter, mean, std) unchanged: its model folder's other entries when
// spec.weightPath is one, else the architecture's train size, then `overrides`; architecture
// (timm's name) and classifier size are the spec's. DataError naming the names file when it
// cannot be read or its count is not the classifier's.
ModelCard exportCard(const ModelSpec& spec, const Preprocessing& test,
                     const CardOverrides& overrides = {});

// One name per line (a trailing newline ends the last); DataError naming the file when it is
// unreadable, empty or holds a blank line.
std::vector<std::string> readClassNames(const std::string& path);

// timm's hub config.json for the card: architecture, num_classes, num_features, global_pool,
// label_names, pretrained_cfg {input_size, test_input_size, crop_pct, test_crop_pct, crop_mode,
// interpolation, mean, std, num_classes, first_conv, classifier, license}, and "fixres" with the
// resize rule (timm resizes the shorter side; fixres's own rule sets the height) and the source.
// `model` gives the classifier's and the first conv's names and the feature width.
nlohmann::ordered_json timmHubConfig(const ModelCard& card, models::ModelImpl& model);

}  // namespace fixres::engine

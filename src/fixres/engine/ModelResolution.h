// Resolution once: what a command was given about its model (the spec its flags filled, the sizes
// and resize rule it was given, a class-names file) becomes, in one call, the model a job runs:
// the sizes to feed it, its preprocessing, its classes and their names. The model folder is read
// here and nowhere else in an inference job; buildModel takes the result, so the sizes a model is
// built for are the sizes it is fed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fixres/common/Setting.h"
#include "fixres/engine/Evaluator.h"
#include "fixres/engine/ModelCard.h"
#include "fixres/engine/ModelSpec.h"

namespace fixres::engine {

// "224,288": sizes in kImageSizes (ModelSpec.h); UsageError naming `flag` for an empty list, a
// value that is not an integer or one out of range.
std::vector<int> parseSizeList(const std::string& text, const std::string& flag);
// The syntax of a size list row (eval's --input-size, sweep's --sizes): parseSizeList.
inline constexpr ListSyntax<int> kSizeListSyntax{
    [](const std::vector<std::string>& given, const std::string& flag) {
      return parseSizeList(given.back(), flag);
    }};

// What --crop-pct is to export (the others: the help of its row).
inline constexpr CommandHelp kCropPctHelp[] = {
    {"export",
     "The test crop fraction recorded with the weights (timm's test_crop_pct; default: a model "
     "folder's, else 0.875)"},
    {nullptr, nullptr}};
// The commands that resolve a model's test preprocessing from their flags.
inline constexpr const char* kInferenceCommands = "eval,predict,extract,calibrate,export";

// What the command was given. A field left empty was not given: the model folder's value, else
// the command's default, applies.
struct ModelRequest {
  ModelSpec spec;                               // the model flags (a folder's card applied)
  std::vector<int> sizes;                       // --input-size as given
  std::optional<image::ResizeMode> resizeMode;  // --resize-mode as given
  std::optional<double> cropPct;                // --crop-pct as given
  std::string classNamesFile;                   // --class-names

  // The rows of the test preprocessing that the request owns: bound as optionals, so that a
  // model folder's value applies where the flag was not given. (--input-size is each command's:
  // a list for eval, one size elsewhere.)
  template <typename Self, typename V>
  static void visitSettings(Self& r, V&& v) {
    v(kResizeModeRow.offeredOnlyTo(kInferenceCommands), r.resizeMode, image::resizeModes());
    v(Setting{"", "--crop-pct", "Data",
              "Centre crop as a fraction of the resized side: the image is resized to "
              "floor(S / crop) and S is cut from it, as timm's crop_pct (default: a model "
              "folder's test_crop_pct, else 0.875, FixRes's 224 of 256)",
              kCropFractions, SettingRole::kInvocation, kInferenceCommands, "", kCropPctHelp},
      r.cropPct);
  }
};

struct ResolvedModel {
  ModelSpec spec;  // built for input.sizes (a dynamic position embedding when they differ)
  // The test preprocessing, resolved once: sizes, crop, resize rule, filter, mean, std.
  Preprocessing input;
  std::optional<ModelCard> card;        // the model folder's, when --weight-path names one
  std::vector<std::string> classNames;  // --class-names, else the folder's; empty: unknown
  // A bare weight file without --input-size: the preprocessing assumed, in one line (buildModel
  // logs it once the weights are loaded); "" otherwise.
  std::string assumption;
  int size() const { return input.size(); }
  const std::vector<int>& sizes() const { return input.sizes; }
  // The evaluation at `size` with this model's preprocessing record.
  EvalOptions evalOptions(const EvalSettings& settings, int size, const RunDevice& run,
                          uint64_t seed = 0) const;
  const Preprocessing& preprocessing() const { return input; }
  // The numerics to run the model in: `given`, with the model folder's runtime and precision (a
  // sweep's choice) where --runtime and --precision were not given, said in one line, then the
  // defaults. On CUDA, or where this build or CPU lacks what the folder names, LibTorch runs it
  // (a warning says so).
  NumericsOptions numerics(NumericsRequest given, bool onCpu) const;
  // The classifier's size: --num-classes, else the weight file's classifier, else the number of
  // class names; 0 when none of them tells (then `why`, when given, says what the weight file
  // holds instead of the classifier, if it is a state dict without one).
  int64_t classCount(std::string* why = nullptr) const;
};

// The one resolution of a model's test preprocessing. The sizes: given, else the folder's test
// size, else `defaultSizes` (empty: the architecture's test size). The crop and the resize rule:
// given, else the folder's, else FixRes's (0.875, the height rule). Filter, mean and std: the
// spec's (its flags, else the folder's, else the architecture's). DataError for an unreadable
// --class-names file; WeightsError for a damaged model folder.
ResolvedModel resolveModel(const ModelRequest& request, const std::vector<int>& defaultSizes);

// A model whose preprocessing is already known (a run's, a sweep cell's, made from the spec's
// own preprocessing()): `input` as given, dynamic where its sizes differ.
ResolvedModel resolvedFor(const ModelSpec& spec, const Preprocessing& input);
// A spec whose sizes are already known (a run's training and evaluation sizes), FixRes's crop
// and resize rule.
ResolvedModel resolvedForSizes(const ModelSpec& spec, const std::vector<int>& sizes);

struct BuiltModel {
  models::Model model{nullptr};
  models::LoadReport weights;  // loaded == 0 when no weight file was given
};

// Builds the resolved spec's architecture, for its sizes, with spec.numClasses outputs (or
// `datasetClasses`), initialised from torch's generator seeded with `seed` (the same weights on
// every rank), loads spec.weightPath when given (localWeightFile: a URL is fetched before the model
// is built; WeightsError on a bad file, naming the URL and 'fixres weights fetch --refresh' for a
// cached copy), moves it to run.device and converts it to channels-last when run.numerics say so.
BuiltModel buildModel(const ResolvedModel& model, int64_t datasetClasses, const RunDevice& run,
                      uint64_t seed = 0);

}  // namespace fixres::engine

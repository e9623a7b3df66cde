// The table of shared flags.
#include "fixres/cli/Flags.h"

#include "fixres/common/Error.h"

namespace fixres::cli {
namespace {

// An unsigned integer flag (a seed): "-1" would otherwise wrap around to 2^64 - 1.
std::string nonNegative(const std::string& value) {
  const auto first = value.find_first_not_of(" \t");
  if (first == std::string::npos || value[first] != '-') return "";
  return "must be >= 0, got " + value;
}

}  // namespace

const std::vector<FlagSpec>& sharedFlags() {
  static const std::vector<FlagSpec> kFlags = {
      {"--architecture",
       "Model name (FixRes or torchvision spelling: ResNet50, resnet50, IGAM_Resnext101_32x48d, "
       "...)",
       "Model", ""},
      {"--weight-path,--resnet-weight-path",
       "Weights: torch.save file (state dict, FixRes {'model': ...}, or a fixres checkpoint)",
       "Model", ""},
      {"--num-classes", "Classifier size (0: number of dataset classes)", "Model", ""},
      {"--skip-classifier", "Load every weight but the classifier (for another number of classes)",
       "Model", ""},
      {"--imnet-path", "Image folder root holding train/ and val/ (and holdout/ when imported)",
       "Data", ""},
      {"--dataset-path", "Image folder to read (one sub-folder per class)", "Data", ""},
      {"--input-size",
       "Resolution in px (train: the train size; finetune, eval, extract: the test size; eval "
       "takes a comma-separated list)",
       "Data", ""},
      {"--batch", "Images per process and step", "Data", ""},
      {"--workers", "Loader threads per process", "Data", ""},
      {"--resize-mode", "Val resize: fixres (height set, the reference) or shorter (torchvision)",
       "Data", ""},
      {"--test-flip", "Average logits with the horizontally flipped image", "Data", ""},
      {"--skip-bad-images", "Skip unreadable images (counted) instead of failing", "Data", ""},
      {"--normalize-on",
       "auto (device on CUDA), cpu or device: where uint8 images become normalised floats "
       "(device: 4x smaller batches to copy)",
       "Numerics", ""},
      {"--precision", "auto (bf16 autocast on CUDA, fp32 on CPU), fp32 or bf16", "Numerics", ""},
      {"--memory-format", "auto (channels-last on CUDA), contiguous or channels-last", "Numerics",
       ""},
      {"--seed", "Seed of initialisation, sampling and augmentation (>= 0)", "Optimisation", "",
       nonNegative},
      {"--absolute-lr",
       "Use the learning rate as given (no linear scaling 8 x lr x batch x processes / 512)",
       "Optimisation", ""},
      {"--cpu", "Run on the CPU even when CUDA is available", "Device", ""},
      {"--train-size", "The resolution the model was trained at (K_train)", "Resolution", ""},
      {"--finetune",
       "FixRes fine-tuning (classifier + last BN): sweep fine-tunes at each resolution, bench "
       "train times that step",
       "Options", ""},
      {"--out",
       "Output folder (import: the image folder; sweep: sweep.json, sweep.svg and the "
       "fine-tuning runs)",
       "Output", ""},
      {"--save-path", "Folder of the .npy files (written by extract, read by eval-softmax)",
       "Output", ""},
  };
  return kFlags;
}

const FlagSpec& sharedFlag(const std::string& name) {
  for (const auto& f : sharedFlags()) {
    if (f.names.substr(0, f.names.find(',')) == name) return f;
  }
  FIXRES_FAIL(InternalError, "no shared flag ", name);
}

CLI::Option* withSpec(CLI::Option* opt, const FlagSpec& f) {
  opt->group(f.group);
  if (!f.envName.empty()) opt->envname(f.envName);
  if (f.check != nullptr)
    opt->check(CLI::Validator([c = f.check](std::string& v) { return c(v); }, ""));
  return opt;
}

CLI::Option* addSharedFlag(CLI::App& app, const std::string& name, bool& target) {
  const FlagSpec& f = sharedFlag(name);
  return withSpec(app.add_flag(f.names, target, f.help), f);
}

}  // namespace fixres::cli

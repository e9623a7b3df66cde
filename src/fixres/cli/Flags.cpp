// The table of shared flags, the value checks and --config.
#include "fixres/cli/Flags.h"

#include <cstdint>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <sstream>

#include "fixres/cli/ConfigFile.h"
#include "fixres/common/Error.h"

namespace fixres::cli {
namespace {

// The whole of `text` as an integer (false for anything else, out-of-range values included).
bool parseWholeInt(const std::string& text, int64_t& out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return false;
  out = v;
  return true;
}

std::string rangeText(int64_t lo, int64_t hi) {
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

}  // namespace

CLI::Validator intIn(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& v) -> std::string {
        int64_t x = 0;
        if (parseWholeInt(v, x) && x >= lo && x <= hi) return "";
        return "must be an integer in " + rangeText(lo, hi) + ", got '" + v + "'";
      },
      rangeText(lo, hi));
}

CLI::Validator allOrAtLeastOne(int64_t hi) {
  const std::string text = hi == INT64_MAX ? "-1 (all) or a positive integer"
                                           : "-1 (all) or an integer in " + rangeText(1, hi);
  return CLI::Validator(
      [hi, text](std::string& v) -> std::string {
        int64_t x = 0;
        if (parseWholeInt(v, x) && (x == -1 || (x >= 1 && x <= hi))) return "";
        return "must be " + text + ", got '" + v + "'";
      },
      hi == INT64_MAX ? "-1 or >= 1" : "-1 or " + rangeText(1, hi));
}

CLI::Validator finiteIn(double lo, double hi, bool openLow) {
  std::ostringstream range;
  range << (openLow ? "(" : "[") << lo << ", " << hi << "]";
  const std::string text = range.str();
  return CLI::Validator(
      [lo, hi, openLow, text](std::string& v) -> std::string {
        char* end = nullptr;
        const double x = v.empty() ? NAN : std::strtod(v.c_str(), &end);
        const bool whole = !v.empty() && end == v.c_str() + v.size();
        if (whole && std::isfinite(x) && (openLow ? x > lo : x >= lo) && x <= hi) return "";
        return "must be a finite number in " + text + ", got '" + v + "'";
      },
      text);
}

CLI::Validator intListIn(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& v) -> std::string {
        std::stringstream ss(v);
        std::string item;
        bool ok = !v.empty() && v.back() != ',';
        int64_t x = 0;
        while (ok && std::getline(ss, item, ',')) ok = parseWholeInt(item, x) && x >= lo && x <= hi;
        if (ok) return "";
        return "must be integers in " + rangeText(lo, hi) + " separated by commas, got '" + v + "'";
      },
      rangeText(lo, hi));
}

const std::vector<FlagSpec>& sharedFlags() {
  static const std::vector<FlagSpec> kFlags = {
      {"--architecture",
       "Model name (FixRes, torchvision or timm spelling: ResNet50, resnet50, "
       "IGAM_Resnext101_32x48d, tf_efficientnet_b0, efficientnet_b2, EfficientNet with "
       "--EfficientNet-models, ...)",
       "Model", ""},
      {"--EfficientNet-models",
       "With --architecture EfficientNet (the reference's spelling): the timm model, e.g. "
       "tf_efficientnet_b0_ap, tf_efficientnet_l2_ns",
       "Model", ""},
      {"--interpolation", "Resize filter: bilinear (the reference's) or bicubic (timm's recipes)",
       "Model", ""},
      {"--mean", "Normalisation mean R G B (default: the architecture's; ImageNet's)", "Model", ""},
      {"--std", "Normalisation std R G B (default: the architecture's; ImageNet's)", "Model", ""},
      {"--drop-rate",
       "Dropout before the classifier in training (default: the architecture's; EfficientNet: the "
       "paper's per model, PNASNet: 0)",
       "Model", "", finiteIn(0, 0.99)},
      {"--drop-path-rate",
       "Stochastic depth in training, rising linearly to this rate over the blocks (EfficientNet; "
       "default 0.2)",
       "Model", "", finiteIn(0, 0.99)},
      {"--weight-path,--resnet-weight-path",
       "Weights: torch.save file (zip or pre-1.6: state dict, FixRes {'model': ...}, or a fixres "
       "checkpoint), safetensors state dict, or an http(s) URL fetched into the cache first "
       "(URL#sha256=HEX: checked against that SHA-256 or its first 8+ digits)",
       "Model", ""},
      {"--pretrained",
       "Published weights by name (see 'fixres weights list'): fetched into the cache; sets "
       "--architecture (and timm's preprocessing) unless given",
       "Model", ""},
      {"--cache-dir",
       "Folder of fetched weight files (default: $XDG_CACHE_HOME/fixres, else ~/.cache/fixres)",
       "Download", "FIXRES_CACHE"},
      {"--download-timeout",
       "Seconds a download may stay below 1 KiB/s (or connecting may take, up to 30) before it "
       "fails",
       "Download", "", intIn(1, 86400)},
      {"--num-classes", "Classifier size (0: number of dataset classes)", "Model", "",
       intIn(0, 1000000)},
      {"--skip-classifier", "Load every weight but the classifier (for another number of classes)",
       "Model", ""},
      {"--use-ema",
       "Load the checkpoint's EMA weights (model_ema, saved by runs with --model-ema) instead of "
       "its model",
       "Model", ""},
      {"--imnet-path",
       "Image folder root holding train/ and val/ (and holdout/ when imported); each may also be "
       "a folder of tar shards (fixres shard)",
       "Data", ""},
      {"--dataset-path",
       "Image folder to read (one sub-folder per class), or a folder of tar shards (fixres shard)",
       "Data", ""},
      {"--input-size",
       "Resolution in px (train: the train size; finetune, eval, extract: the test size; eval "
       "takes a comma-separated list)",
       "Data", "", intListIn(8, 4096)},
      {"--batch", "Images per process and step", "Data", "", intIn(1, 1 << 20)},
      {"--workers", "Loader threads per process", "Data", "", intIn(1, 1024)},
      {"--resize-mode", "Val resize: fixres (height set, the reference) or shorter (torchvision)",
       "Data", ""},
      {"--test-flip", "Average logits with the horizontally flipped image", "Data", ""},
      {"--auto-augment",
       "Automatic augmentation of the train transform (torch, full, v2-train), after the crop, "
       "flip and colour jitter, as torchvision's references: none, ra (RandAugment), ta_wide "
       "(TrivialAugmentWide), augmix (AugMix) or imagenet (the AutoAugment ImageNet policy)",
       "Data", ""},
      {"--ra-magnitude", "RandAugment magnitude bin (of 31), with --auto-augment ra", "Data", "",
       intIn(0, 30)},
      {"--augmix-severity", "AugMix severity, with --auto-augment augmix", "Data", "",
       intIn(1, 10)},
      {"--random-erase",
       "RandomErasing probability on the normalised train images (torchvision's: scale 0.02 to "
       "0.33, ratio 0.3 to 3.3, value 0); 0: off",
       "Data", "", finiteIn(0, 1)},
      {"--skip-bad-images", "Skip unreadable images (counted) instead of failing", "Data", ""},
      {"--no-index-cache",
       "List image folders by a full scan, without reading or writing their file index "
       "(.fixres-index in the folder, else in the cache folder's index/)",
       "Data", ""},
      {"--normalize-on",
       "auto (device on CUDA), cpu or device: where uint8 images become normalised floats "
       "(device: 4x smaller batches to copy)",
       "Numerics", ""},
      {"--precision",
       "auto (bf16 autocast on CUDA, fp32 on CPU), fp32, bf16 or fp16 (CUDA only; training adds "
       "dynamic loss scaling)",
       "Numerics", ""},
      {"--memory-format", "auto (channels-last on CUDA), contiguous or channels-last", "Numerics",
       ""},
      {"--seed",
       "Seed of initialisation, sampling and augmentation (>= 0); shard: of the sample order",
       "Optimisation", "", intIn(0, INT64_MAX)},
      {"--sync-bn",
       "BatchNorm statistics over the global batch (every rank's images), as PyTorch's "
       "SyncBatchNorm; without it each rank normalises with its own batch and rank 0's running "
       "statistics are kept",
       "Cluster", ""},
      {"--grad-compression",
       "Precision of the gradient all-reduce: none (fp32), fp16 or bf16 (DDP's compression "
       "hooks: half the bytes on the wire, gradients rounded to 16 bits)",
       "Cluster", ""},
      {"--bucket-mb", "Size of the gradient all-reduce buckets in MB (DDP's bucket_cap_mb)",
       "Cluster", "", finiteIn(0, 1024, /*openLow=*/true)},
      {"--model-ema",
       "Keep EMA weights (torchvision references' ExponentialMovingAverage over parameters and "
       "buffers), evaluated beside the raw weights and saved as model_ema",
       "Optimisation", ""},
      {"--model-ema-decay",
       "EMA decay before the references' adjustment by processes x batch x accumulation x "
       "--model-ema-steps / --epochs",
       "Optimisation", "", finiteIn(0, 1)},
      {"--model-ema-steps", "Optimizer steps between EMA updates", "Optimisation", "",
       intIn(1, 1 << 30)},
      {"--mixup-alpha",
       "Mixup with lambda ~ Beta(alpha, alpha) on every batch (0: off; with --cutmix-alpha one of "
       "the two per batch)",
       "Optimisation", "", finiteIn(0, INFINITY)},
      {"--cutmix-alpha",
       "CutMix with lambda ~ Beta(alpha, alpha) on every batch (0: off; with --mixup-alpha one of "
       "the two per batch)",
       "Optimisation", "", finiteIn(0, INFINITY)},
      {"--absolute-lr",
       "Use the learning rate as given (no linear scaling 8 x lr x batch x processes / 512)",
       "Optimisation", ""},
      {"--cpu", "Run on the CPU even when CUDA is available", "Device", ""},
      {"--train-size", "The resolution the model was trained at (K_train)", "Resolution", "",
       intIn(8, 4096)},
      {"--finetune",
       "FixRes fine-tuning (classifier + last BN): sweep fine-tunes at each resolution, bench "
       "train times that step",
       "Options", ""},
      {"--out",
       "Output (import: the image folder; sweep: the folder of sweep.json, sweep.svg and the "
       "fine-tuning runs; export, calibrate: the weight file, replaced atomically; plot: the SVG, "
       "default RUN_DIR/curves.svg; shard: the shard folder, new or empty)",
       "Output", ""},
      {"--save-path", "Folder of the .npy files (written by extract, read by eval-softmax)",
       "Output", ""},
      {"--config",
       "TOML file (INI when named *.ini) of this subcommand's options: `key = value`, keys are "
       "flag names without '--'; flags on the command line win",
       "Config", ""},
  };
  return kFlags;
}

const FlagSpec& sharedFlag(const std::string& name) {
  for (const auto& f : sharedFlags()) {
    if (f.names.substr(0, f.names.find(',')) == name) return f;
  }
  FIXRES_FAIL(InternalError, "no shared flag ", name);
}

CLI::Option* addSharedFlag(CLI::App& app, const std::string& name, bool& target) {
  const FlagSpec& f = sharedFlag(name);
  auto* opt = app.add_flag(f.names, target, f.help)->group(f.group);
  if (!f.envName.empty()) opt->envname(f.envName);
  return opt;
}

CLI::Option* addConfigFile(CLI::App& app) {
  const FlagSpec& f = sharedFlag("--config");
  CLI::App* root = &app;
  while (root->get_parent() != nullptr) root = root->get_parent();
  // CLI11 reads config files for the top-level app only, after the whole command line and
  // before it checks required flags: the subcommand's --config hands its file to the top-level
  // one, and the formatter applies the file to the subcommand that was chosen.
  CLI::Option* carrier = root->get_config_ptr();
  if (carrier == nullptr) {
    carrier = root->set_config(f.names, "", f.help)->group(f.group)->check(configFileCheck());
    root->config_formatter(std::make_shared<SubcommandConfig>(*root));
  }
  return app
      .add_option_function<std::string>(
          f.names,
          [carrier](const std::string& path) {
            if (carrier->count() > 0)
              throw CLI::ValidationError("--config", "given more than once ('" + path + "')");
            carrier->add_result(path);
          },
          f.help)
      ->trigger_on_parse()
      ->configurable(false)
      ->check(configFileCheck())
      ->group(f.group);
}

}  // namespace fixres::cli

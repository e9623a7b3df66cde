// Model weights in PyTorch's formats: state dicts by torchvision names, strict loading from
// torch.save files (zip or pre-1.6; bare state dict, FixRes {"model": {"module.*": ...}}, our
// checkpoints) and safetensors files, saving files Python's torch.load reads.
#pragma once

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>
#include <torch/nn/module.h>

#include <string>
#include <vector>

#include "fixres/models/Model.h"
#include "fixres/weights/TorchFile.h"     // readTorchFile, writeTorchFile
#include "fixres/weights/WeightSource.h"  // openWeightSource

namespace fixres::models {

// Parameters and buffers (num_batches_tracked included) in PyTorch's state_dict order and names
// (module path joined by '.'). Tensors are detached aliases of the module's (no copy).
c10::Dict<std::string, at::Tensor> stateDict(const torch::nn::Module& m);

struct LoadOptions {
  // Load everything but the classifier (entries under classifierPrefix), which keeps its
  // initialisation: for a model with another number of classes.
  bool skipClassifier = false;
  std::string classifierPrefix = "fc.";
  // The model whose family's foreign layout (ArchitectureFamily::foreignLayout, Family.h) is
  // recognised in the file and renamed to the model's names before matching; nullptr: names are
  // taken as they are.
  ModelImpl* layouts = nullptr;
  // Non-empty: the state dict is the one under this key of the file's dict (e.g. "model_ema", a
  // checkpoint's EMA weights), and a file without it is a WeightsError naming the file and key.
  std::string entry;
};

// Options for loading into `model`: its classifier prefix and its family's foreign layout.
LoadOptions loadOptionsFor(ModelImpl& model, bool skipClassifier);

struct LoadReport {
  size_t loaded = 0;                 // model tensors set from the file
  std::vector<std::string> skipped;  // model tensors left as they were (classifier)
  std::vector<std::string> ignored;  // file tensors not used (the file's classifier)
  std::string layout;                // where the state dict was found, for messages
};

// Loads a state dict into `m`. `content`: a bare state dict (str -> Tensor), or a dict with a
// state dict under "model" (FixRes files, our checkpoints) or "state_dict". A "module." prefix
// (DistributedDataParallel) on every key is removed; so is an AveragedModel's "n_averaged" beside
// "module.*" keys (torchvision's EMA weights, our checkpoints' model_ema). Strict: any missing,
// unexpected or mis-shaped entry (other than the classifier with skipClassifier) -> WeightsError
// naming `sourceName`, the counts and the first few names of each kind. Values are copied into the
// module's tensors (their device and dtype kept; floating-point dtypes convert).
LoadReport loadStateDict(torch::nn::Module& m, const c10::IValue& content, const LoadOptions& opts,
                         const std::string& sourceName);

// As loadStateDict from a weight file of any format openWeightSource reads (told by its first
// bytes: torch.save zip, pre-1.6 torch.save, safetensors), reading one tensor's storage at a
// time: peak memory is the model plus its largest tensor, not the file (tensors of other entries
// of a checkpoint, e.g. optimizer state, are never read). WeightsError for unreadable or
// mismatched files.
LoadReport loadWeightsFile(torch::nn::Module& m, const std::string& path, const LoadOptions& opts);

// Saves stateDict(m) with writeTorchFile (atomic; Python: model.load_state_dict(torch.load(p))).
void saveStateDictFile(const torch::nn::Module& m, const std::string& path);

}  // namespace fixres::models

// State dicts: naming, strict matching and copying into modules, file loading and saving.
#include "fixres/models/WeightIO.h"

#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/models/Family.h"

namespace fixres::models {
namespace {

using Entries = std::vector<std::pair<std::string, at::Tensor>>;

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool startsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The module's parameters and buffers in state_dict order, as the module's own tensors.
Entries moduleEntries(const torch::nn::Module& m) {
  Entries out;
  auto add = [&out](const std::string& prefix, const torch::nn::Module& mod) {
    for (const auto& p : mod.named_parameters(/*recurse=*/false))
      if (p.value().defined()) out.emplace_back(prefix + p.key(), p.value());
    for (const auto& b : mod.named_buffers(/*recurse=*/false))
      if (b.value().defined()) out.emplace_back(prefix + b.key(), b.value());
  };
  add("", m);
  for (const auto& item : m.named_modules(std::string(), /*include_self=*/false))
    add(item.key() + ".", *item.value());
  return out;
}

std::string typeName(const c10::IValue& v) {
  return v.isTensor() ? "Tensor" : std::string(v.tagKind());
}

// Finds the state dict in `content` and returns its entries with prefixes removed.
Entries extractStateDict(const c10::IValue& content, const std::string& source,
                         const std::string& entry, std::string* layout) {
  FIXRES_CHECK(content.isGenericDict(), WeightsError, source,
               ": expected a state dict or a checkpoint dict, found a ", typeName(content));
  c10::impl::GenericDict dict = content.toGenericDict();
  *layout = "state dict";
  bool nested = false;
  if (!entry.empty()) {
    auto it = dict.find(c10::IValue(entry));
    FIXRES_CHECK(it != dict.end() && it->value().isGenericDict(), WeightsError, source, " has no '",
                 entry, "' entry",
                 entry == "model_ema" ? " (EMA weights: saved by runs with --model-ema)" : "");
    dict = it->value().toGenericDict();
    *layout = "state dict under '" + entry + "'";
    nested = true;
  }
  for (const char* key : {"model", "state_dict"}) {
    if (nested) break;
    auto it = dict.find(c10::IValue(std::string(key)));
    if (it != dict.end() && it->value().isGenericDict()) {
      dict = it->value().toGenericDict();
      *layout = std::string("state dict under '") + key + "'";
      nested = true;
      break;
    }
  }
  Entries entries;
  std::vector<std::string> bad;
  size_t badCount = 0;
  for (const auto& e : dict) {
    if (e.key().isString() && e.value().isTensor()) {
      entries.emplace_back(e.key().toStringRef(), e.value().toTensor());
    } else if (!e.key().isString() || !e.key().toStringRef().empty()) {
      if (++badCount <= 5)
        bad.push_back((e.key().isString() ? e.key().toStringRef() : typeName(e.key())) + ": " +
                      typeName(e.value()));
    }
  }
  if (badCount > 0) {
    std::string list;
    for (const auto& b : bad) list += (list.empty() ? "" : ", ") + b;
    FIXRES_FAIL(
        WeightsError, source, ": no state dict found: ",
        nested ? "the " + *layout : std::string("the file has no 'model' entry and its dict"),
        " has ", badCount, " of ", dict.size(), " entries that are not tensors (", list,
        badCount > bad.size() ? ", ..." : "", ")");
  }
  // torch.optim.swa_utils.AveragedModel's state dict: its counter beside the module's entries.
  auto counter = std::find_if(entries.begin(), entries.end(),
                              [](const auto& e) { return e.first == "n_averaged"; });
  if (counter != entries.end() && entries.size() > 1 &&
      std::all_of(entries.begin(), entries.end(), [](const auto& e) {
        return e.first == "n_averaged" || startsWith(e.first, "module.");
      })) {
    entries.erase(counter);
    *layout += ", AveragedModel's n_averaged set aside";
  }
  FIXRES_CHECK(!entries.empty(), WeightsError, source, ": the ", *layout, " is empty");
  for (const char* prefix : {"module.", "_orig_mod."}) {
    bool all = std::all_of(entries.begin(), entries.end(),
                           [&](const auto& e) { return startsWith(e.first, prefix); });
    if (!all) continue;
    for (auto& e : entries) e.first = e.first.substr(std::strlen(prefix));
    *layout += std::string(", '") + prefix + "' prefix removed";
  }
  return entries;
}

std::string firstFew(const std::vector<std::string>& names, size_t n = 5) {
  std::string s;
  for (size_t k = 0; k < names.size() && k < n; ++k) s += (k ? ", " : "") + names[k];
  if (names.size() > n) s += ", ...";
  return s;
}

std::string shapeText(at::IntArrayRef sizes) {
  std::string s = "[";
  for (size_t k = 0; k < sizes.size(); ++k) s += (k ? ", " : "") + std::to_string(sizes[k]);
  return s + "]";
}

using CopyFn = std::function<void(const at::Tensor& src, at::Tensor& dst)>;

// Renames the entries of the foreign layout of opts.layouts' family to the model's own names.
void translateLayout(Entries& file, const LoadOptions& opts, std::string& layout) {
  if (!opts.layouts || !opts.layouts->family().foreignLayout) return;
  const KeyLayout& foreign = *opts.layouts->family().foreignLayout;
  std::vector<std::string> keys;
  keys.reserve(file.size());
  for (const auto& e : file) keys.push_back(e.first);
  if (!foreign.detect(keys)) return;
  for (auto& e : file) e.first = foreign.toOwn(*opts.layouts, e.first);
  if (foreign.adopt) foreign.adopt(*opts.layouts);
  layout += ", " + foreign.name + " names renamed";
}

LoadReport loadEntries(torch::nn::Module& m, Entries file, const LoadOptions& opts,
                       const std::string& source, std::string layout, const CopyFn& copy) {
  translateLayout(file, opts, layout);
  Entries model = moduleEntries(m);
  auto isClassifier = [&](const std::string& name) {
    return opts.skipClassifier && !opts.classifierPrefix.empty() &&
           startsWith(name, opts.classifierPrefix);
  };
  std::unordered_map<std::string, size_t> fileIndex;
  for (size_t k = 0; k < file.size(); ++k) fileIndex.emplace(file[k].first, k);
  std::unordered_map<std::string, size_t> modelIndex;
  for (size_t k = 0; k < model.size(); ++k) modelIndex.emplace(model[k].first, k);

  const ArchitectureFamily* family = opts.layouts ? &opts.layouts->family() : nullptr;
  auto fitted = [&](const std::string& name, const at::Tensor& src) {
    return family && family->fits && family->fit && family->fits(*opts.layouts, name, src.sizes());
  };
  LoadReport report;
  report.layout = std::move(layout);
  std::vector<std::string> missing, unexpected, misShaped;
  for (const auto& [name, t] : model) {
    if (isClassifier(name)) {
      report.skipped.push_back(name);
      continue;
    }
    auto it = fileIndex.find(name);
    if (it == fileIndex.end()) {
      missing.push_back(name);
      continue;
    }
    const at::Tensor& src = file[it->second].second;
    if (src.sizes() != t.sizes() && fitted(name, src)) {
      // Taken by the family (fits), fitted when copied.
    } else if (src.sizes() != t.sizes()) {
      misShaped.push_back(name + " (file " + shapeText(src.sizes()) + ", model " +
                          shapeText(t.sizes()) + ")");
    } else if (at::isFloatingType(src.scalar_type()) != at::isFloatingType(t.scalar_type()) ||
               at::isComplexType(src.scalar_type()) != at::isComplexType(t.scalar_type())) {
      misShaped.push_back(name + " (file dtype " + std::string(c10::toString(src.scalar_type())) +
                          ", model " + c10::toString(t.scalar_type()) + ")");
    }
  }
  for (const auto& [name, t] : file) {
    if (isClassifier(name)) {
      report.ignored.push_back(name);
    } else if (!modelIndex.count(name)) {
      unexpected.push_back(name);
    }
  }
  if (!missing.empty() || !unexpected.empty() || !misShaped.empty()) {
    std::string msg =
        detail::concat(source, " does not match the model (", report.layout, ": ", file.size(),
                       " tensors in the file, ", model.size(), " in the model):");
    if (!missing.empty())
      msg += detail::concat(" ", missing.size(), " missing (", firstFew(missing), ");");
    if (!unexpected.empty())
      msg += detail::concat(" ", unexpected.size(), " unexpected (", firstFew(unexpected), ");");
    if (!misShaped.empty())
      msg += detail::concat(" ", misShaped.size(), " mis-shaped (", firstFew(misShaped, 3), ");");
    bool onlyClassifier =
        missing.empty() && unexpected.empty() &&
        std::all_of(misShaped.begin(), misShaped.end(),
                    [&](const std::string& s) { return startsWith(s, opts.classifierPrefix); });
    if (family && family->explainMismatch) {
      std::vector<std::string> keys;
      for (const auto& e : file) keys.push_back(e.first);
      const std::string why = family->explainMismatch(*opts.layouts, keys);
      if (!why.empty()) FIXRES_FAIL(WeightsError, source, ": ", why);
    }
    msg += onlyClassifier ? " only the classifier differs: another number of classes? Load "
                            "without the classifier to keep a fresh one"
                          : " wrong architecture or not a weights file for it?";
    FIXRES_FAIL(WeightsError, msg);
  }

  torch::NoGradGuard noGrad;
  for (auto& [name, t] : model) {
    if (isClassifier(name)) continue;
    const at::Tensor& src = file[fileIndex.at(name)].second;
    if (src.sizes() != t.sizes()) {
      // Read whole, fitted by the family (checked above), then set.
      at::Tensor whole = at::empty(src.sizes(), at::TensorOptions().dtype(t.scalar_type()));
      copy(src, whole);
      t.copy_(family->fit(*opts.layouts, name, whole, source));
      ++report.loaded;
      continue;
    }
    copy(src, t);
    ++report.loaded;
  }
  if (report.skipped.empty()) {
    log::debug("loaded ", report.loaded, " tensors from ", source, " (", report.layout, ")");
  } else {
    log::info("loaded ", report.loaded, " tensors from ", source, " (", report.layout,
              "); kept the model's own ", firstFew(report.skipped), ", ignored the file's ",
              report.ignored.empty() ? "(none)" : firstFew(report.ignored));
  }
  return report;
}

// WeightsError naming `source` and the tensor when a loaded weight is not finite, or a
// BatchNorm's running variance is negative: weights that could only give NaN logits (a diverged
// run's, a corrupted file's) are refused at load instead of scoring 50 % with a loss of nan.
void checkLoadedValues(const torch::nn::Module& m, const std::string& source) {
  torch::NoGradGuard noGrad;
  for (const auto& [name, t] : moduleEntries(m)) {
    if (!at::isFloatingType(t.scalar_type()) || t.numel() == 0) continue;
    FIXRES_CHECK(at::isfinite(t).all().item<bool>(), WeightsError, source, ": tensor ", name,
                 " holds NaN or infinite values (", at::isnan(t).sum().item<int64_t>(), " NaN of ",
                 t.numel(), ")");
    FIXRES_CHECK(!endsWith(name, "running_var") || t.min().item<double>() >= 0, WeightsError,
                 source, ": tensor ", name,
                 " (a BatchNorm's running variance) holds negative values");
  }
}

}  // namespace

LoadOptions loadOptionsFor(ModelImpl& model, bool skipClassifier) {
  LoadOptions o;
  o.skipClassifier = skipClassifier;
  o.classifierPrefix = model.classifierPrefix();
  o.layouts = &model;
  return o;
}

c10::Dict<std::string, at::Tensor> stateDict(const torch::nn::Module& m) {
  c10::Dict<std::string, at::Tensor> out;
  for (const auto& [name, t] : moduleEntries(m)) out.insert(name, t.detach());
  return out;
}

LoadReport loadStateDict(torch::nn::Module& m, const c10::IValue& content, const LoadOptions& opts,
                         const std::string& sourceName) {
  std::string layout;
  Entries file = extractStateDict(content, sourceName, opts.entry, &layout);
  for (const auto& [name, t] : file)
    FIXRES_CHECK(!t.is_meta(), WeightsError, sourceName, ": tensor ", name, " has no data");
  LoadReport report = loadEntries(m, file, opts, sourceName, layout,
                                  [](const at::Tensor& src, at::Tensor& dst) { dst.copy_(src); });
  checkLoadedValues(m, sourceName);
  return report;
}

LoadReport loadWeightsFile(torch::nn::Module& m, const std::string& path, const LoadOptions& opts) {
  std::unique_ptr<WeightSource> source = openWeightSource(path);
  c10::IValue content = source->read(/*lazy=*/true);
  std::string layout;
  Entries file = extractStateDict(content, path, opts.entry, &layout);
  LoadReport report = loadEntries(
      m, file, opts, path, layout,
      [&source](const at::Tensor& src, at::Tensor& dst) { source->copyInto(src, dst); });
  checkLoadedValues(m, path);
  return report;
}

void saveStateDictFile(const torch::nn::Module& m, const std::string& path) {
  writeTorchFile(path, c10::IValue(stateDict(m)));
}

}  // namespace fixres::models

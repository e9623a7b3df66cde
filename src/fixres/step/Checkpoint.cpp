// Checkpoint write/read with atomic replacement and fallback to per-epoch files.
#include "fixres/step/Checkpoint.h"

#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <regex>

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/models/WeightIO.h"

namespace fixres::engine {
namespace {

// CRC-32 and byte count of every tensor of the given dicts, in their (insertion) order: what
// the checkpoint's `integrity` record holds, checked on load.
std::pair<int64_t, int64_t> tensorChecksum(const std::vector<c10::impl::GenericDict>& dicts) {
  uLong crc = crc32(0L, Z_NULL, 0);
  int64_t bytes = 0;
  for (const auto& d : dicts) {
    for (const auto& item : d) {
      if (!item.value().isTensor()) continue;
      at::Tensor t = item.value().toTensor().detach().cpu().contiguous();
      const auto* p = static_cast<const Bytef*>(t.data_ptr());
      size_t n = t.nbytes();
      bytes += static_cast<int64_t>(n);
      while (n > 0) {  // crc32 takes a uInt length
        const uInt chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
        crc = crc32(crc, p, chunk);
        p += chunk;
        n -= chunk;
      }
    }
  }
  return {static_cast<int64_t>(crc), bytes};
}

template <typename T>
T field(const c10::impl::GenericDict& d, const char* key, const std::string& path) {
  FIXRES_CHECK(d.contains(key), WeightsError, path, ": checkpoint has no '", key, "'");
  return d.at(key).to<T>();
}

}  // namespace

void saveCheckpoint(const std::string& path, const CheckpointState& s,
                    const torch::nn::Module& model, const OptimizerRef& optimizer,
                    const CheckpointExtras& extras) {
  c10::impl::GenericDict sched(c10::StringType::get(), c10::AnyType::get());
  sched.insert("kind", s.scheduleKind);
  sched.insert("last_epoch", s.epoch);
  sched.insert("lr", s.learningRate);
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("format", std::string("fixres-checkpoint-1"));
  d.insert("epoch", s.epoch);
  d.insert("accuracy", s.accuracy);
  auto weights = c10::impl::toGenericDict(models::stateDict(model));
  auto optState =
      c10::impl::toGenericDict(optim::optimizerState(model, optimizer.optimizer, optimizer.kind));
  auto [crc, bytes] = tensorChecksum({weights, optState});
  c10::impl::GenericDict integrity(c10::StringType::get(), c10::AnyType::get());
  integrity.insert("algorithm", std::string("crc32"));
  integrity.insert("crc32", crc);
  integrity.insert("bytes", bytes);
  // Each part's checksum in keys of its own: readers that know no such part verify the rest alike.
  std::vector<std::pair<std::string, c10::impl::GenericDict>> parts;
  for (const auto& extra : extras) {
    auto dict = c10::impl::toGenericDict(extra.save());
    auto [partCrc, partBytes] = tensorChecksum({dict});
    integrity.insert(extra.key + "_crc32", partCrc);
    integrity.insert(extra.key + "_bytes", partBytes);
    parts.emplace_back(extra.key, dict);
  }
  d.insert("model", weights);
  d.insert("optimizer", optState);
  d.insert("optimizer_kind", choiceName(optim::optimizerKinds(), optimizer.kind));
  if (optimizer.scaler) {
    c10::impl::GenericDict scaler(c10::StringType::get(), c10::AnyType::get());
    scaler.insert("scale", static_cast<double>(optimizer.scaler->scale()));
    scaler.insert("growth_tracker", optimizer.scaler->growthTracker());
    d.insert("loss_scaler", scaler);
  }
  for (const auto& [key, dict] : parts) d.insert(key, dict);
  d.insert("integrity", integrity);
  d.insert("lr_scheduler", sched);
  d.insert("iteration", s.iteration);
  d.insert("global_step", s.globalStep);
  d.insert("seed", static_cast<int64_t>(s.seed));
  d.insert("world_size", s.worldSize);
  d.insert("config", s.configJson);
  models::writeTorchFile(path, d);
}

CheckpointState loadCheckpoint(const std::string& path, torch::nn::Module& model,
                               const OptimizerRef& optimizer, const CheckpointCheck& check,
                               const CheckpointExtras& extras) {
  auto content = models::readTorchFile(path);
  FIXRES_CHECK(content.isGenericDict(), WeightsError, path, ": not a fixres checkpoint");
  auto d = content.toGenericDict();
  FIXRES_CHECK(d.contains("format") && d.at("format").isString() &&
                   d.at("format").toStringRef() == "fixres-checkpoint-1",
               WeightsError, path, ": not a fixres checkpoint (no 'format' entry)");
  CheckpointState s;
  s.epoch = field<int64_t>(d, "epoch", path);
  s.iteration = field<int64_t>(d, "iteration", path);
  s.globalStep = field<int64_t>(d, "global_step", path);
  s.accuracy = field<double>(d, "accuracy", path);
  s.seed = static_cast<uint64_t>(field<int64_t>(d, "seed", path));
  s.configJson = field<std::string>(d, "config", path);
  if (d.contains("world_size")) s.worldSize = field<int64_t>(d, "world_size", path);
  if (d.contains("integrity")) {
    // Verified before anything is copied into the model.
    FIXRES_CHECK(d.at("integrity").isGenericDict() && d.at("model").isGenericDict() &&
                     d.at("optimizer").isGenericDict(),
                 WeightsError, path, ": malformed checkpoint (integrity, model or optimizer)");
    auto rec = d.at("integrity").toGenericDict();
    const auto expectedCrc = field<int64_t>(rec, "crc32", path);
    const auto expectedBytes = field<int64_t>(rec, "bytes", path);
    auto [crc, bytes] =
        tensorChecksum({d.at("model").toGenericDict(), d.at("optimizer").toGenericDict()});
    FIXRES_CHECK(bytes == expectedBytes && crc == expectedCrc, WeightsError, path,
                 ": checksum mismatch (", bytes, " tensor bytes with CRC-32 ", crc,
                 ", the file records ", expectedBytes, " bytes with ", expectedCrc,
                 "): the file is corrupt");
    // Every part's entry the record has a checksum for (model_ema, ...), known to this build or
    // not.
    for (const auto& entry : rec) {
      const std::string k = entry.key().toStringRef();
      const std::string suffix = "_crc32";
      if (k == "crc32" || k.size() <= suffix.size() ||
          k.compare(k.size() - suffix.size(), suffix.size(), suffix) != 0)
        continue;
      const std::string part = k.substr(0, k.size() - suffix.size());
      FIXRES_CHECK(d.contains(part) && d.at(part).isGenericDict(), WeightsError, path,
                   ": malformed checkpoint (", part, ")");
      const auto partCrc = field<int64_t>(rec, k.c_str(), path);
      const auto partBytes = field<int64_t>(rec, (part + "_bytes").c_str(), path);
      auto [c, b] = tensorChecksum({d.at(part).toGenericDict()});
      FIXRES_CHECK(b == partBytes && c == partCrc, WeightsError, path, ": checksum mismatch in ",
                   part, " (", b, " tensor bytes with CRC-32 ", c, ", the file records ", partBytes,
                   " bytes with ", partCrc, "): the file is corrupt");
    }
  }
  optim::OptimizerKind kind = optim::optimizerNamed("sgd");  // checkpoints before --opt
  if (d.contains("optimizer_kind")) {
    const auto name = field<std::string>(d, "optimizer_kind", path);
    const std::string unknown = choiceError(optim::optimizerKinds(), name);
    FIXRES_CHECK(unknown.empty(), WeightsError, path, ": 'optimizer_kind': ", unknown);
    kind = parseChoice(optim::optimizerKinds(), name, path);
  }
  std::optional<std::pair<double, int64_t>> scaler;
  if (d.contains("loss_scaler")) {
    FIXRES_CHECK(d.at("loss_scaler").isGenericDict(), WeightsError, path,
                 ": 'loss_scaler' is not a dict");
    auto rec = d.at("loss_scaler").toGenericDict();
    scaler = {field<double>(rec, "scale", path), field<int64_t>(rec, "growth_tracker", path)};
    const auto scale = static_cast<float>(scaler->first);
    FIXRES_CHECK(std::isfinite(scale) && scale > 0 && scaler->second >= 0, WeightsError, path,
                 ": bad loss scaler state (scale ", scaler->first, ", growth tracker ",
                 scaler->second, ")");
  }
  FIXRES_CHECK(d.contains("optimizer") && d.at("optimizer").isGenericDict(), WeightsError, path,
               ": 'optimizer' is not a dict");
  if (check) check(s);
  models::loadStateDict(model, d.at("model"), models::LoadOptions{}, path);
  if (kind == optimizer.kind) {
    optim::restoreOptimizerState(d.at("optimizer").toGenericDict(), model, optimizer.optimizer,
                                 kind, path);
  } else {
    log::warn(path, " holds the state of optimizer ", choiceName(optim::optimizerKinds(), kind),
              ", not of ", choiceName(optim::optimizerKinds(), optimizer.kind),
              ": the optimizer starts fresh");
  }
  if (optimizer.scaler && scaler) {
    optimizer.scaler->setState(scaler->first, scaler->second);
  } else if (optimizer.scaler) {
    log::warn(path, " has no loss scaler state: the loss scale starts at ",
              optimizer.scaler->options().initScale);
  }
  for (const auto& extra : extras) {
    if (d.contains(extra.key)) {
      extra.load(d.at(extra.key), path);
    } else {
      extra.absent(path);
    }
  }
  return s;
}

std::optional<int64_t> epochCheckpointIndex(const std::string& fileName) {
  static const std::regex kName("checkpoint_([0-9]{1,18})\\.pth");
  std::smatch m;
  if (!std::regex_match(fileName, m, kName)) return std::nullopt;
  return std::stoll(m[1]);
}

std::optional<CheckpointState> resumeFromRunDir(const std::string& runDir, torch::nn::Module& model,
                                                const OptimizerRef& optimizer,
                                                const CheckpointCheck& check,
                                                const CheckpointExtras& extras) {
  namespace fs = std::filesystem;
  std::vector<std::pair<int64_t, std::string>> candidates;
  if (fs::exists(runDir + "/checkpoint.pth"))
    candidates.push_back({INT64_MAX, runDir + "/checkpoint.pth"});
  if (fs::is_directory(runDir)) {
    for (const auto& e : fs::directory_iterator(runDir))
      if (auto epoch = epochCheckpointIndex(e.path().filename().string()))
        candidates.push_back({*epoch, e.path().string()});
  }
  if (candidates.empty()) return std::nullopt;
  std::sort(candidates.rbegin(), candidates.rend());
  std::string failures;
  for (const auto& [epoch, path] : candidates) {
    try {
      auto s = loadCheckpoint(path, model, optimizer, check, extras);
      if (!failures.empty())
        log::warn("unusable checkpoint(s): ", failures, "; resumed from ", path);
      return s;
    } catch (const WeightsError& e) {
      failures += (failures.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  FIXRES_FAIL(WeightsError, "no usable checkpoint in ", runDir, ": ", failures);
}

}  // namespace fixres::engine

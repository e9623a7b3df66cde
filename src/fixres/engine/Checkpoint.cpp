// Checkpoint write/read with atomic replacement and fallback to per-epoch files.
#include "fixres/engine/Checkpoint.h"

#include <zlib.h>

#include <filesystem>
#include <optional>
#include <regex>

#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/models/WeightIO.h"

namespace fixres::engine {
namespace {

std::string stateKey(const torch::Tensor& p) {
  return c10::guts::to_string(p.unsafeGetTensorImpl());
}

c10::impl::GenericDict momentumBuffers(const torch::nn::Module& model, torch::optim::SGD& opt) {
  c10::Dict<std::string, at::Tensor> out;
  auto& states = opt.state();
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    auto it = states.find(stateKey(item.value()));
    if (it == states.end()) continue;
    auto& s = static_cast<torch::optim::SGDParamState&>(*it->second);
    if (s.momentum_buffer().defined()) out.insert(item.key(), s.momentum_buffer().detach().cpu());
  }
  return c10::impl::toGenericDict(out);
}

void restoreMomentum(const c10::IValue& value, torch::nn::Module& model, torch::optim::SGD& opt,
                     const std::string& path) {
  FIXRES_CHECK(value.isGenericDict(), WeightsError, path, ": 'optimizer' is not a dict");
  auto dict = value.toGenericDict();
  auto& states = opt.state();
  for (const auto& item : model.named_parameters(true)) {
    if (!dict.contains(item.key())) continue;
    auto buf = dict.at(item.key()).toTensor();
    FIXRES_CHECK(buf.sizes() == item.value().sizes(), WeightsError, path, ": momentum buffer of ",
                 item.key(), " has shape ", buf.sizes(), ", expected ", item.value().sizes());
    auto state = std::make_unique<torch::optim::SGDParamState>();
    state->momentum_buffer(buf.to(item.value().device()).clone());
    states[stateKey(item.value())] = std::move(state);
  }
}

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
                    const torch::nn::Module& model, torch::optim::SGD& optimizer,
                    const ModelEma* ema) {
  c10::impl::GenericDict sched(c10::StringType::get(), c10::AnyType::get());
  sched.insert("kind", s.scheduleKind);
  sched.insert("last_epoch", s.epoch);
  sched.insert("lr", s.learningRate);
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("format", std::string("fixres-checkpoint-1"));
  d.insert("epoch", s.epoch);
  d.insert("accuracy", s.accuracy);
  auto weights = c10::impl::toGenericDict(models::stateDict(model));
  auto momentum = momentumBuffers(model, optimizer);
  auto [crc, bytes] = tensorChecksum({weights, momentum});
  c10::impl::GenericDict integrity(c10::StringType::get(), c10::AnyType::get());
  integrity.insert("algorithm", std::string("crc32"));
  integrity.insert("crc32", crc);
  integrity.insert("bytes", bytes);
  // The EMA's checksum in keys of its own: readers that know no model_ema verify the rest alike.
  std::optional<c10::impl::GenericDict> averaged;
  if (ema) {
    averaged = c10::impl::toGenericDict(ema->stateDict());
    auto [emaCrc, emaBytes] = tensorChecksum({*averaged});
    integrity.insert("model_ema_crc32", emaCrc);
    integrity.insert("model_ema_bytes", emaBytes);
  }
  d.insert("model", weights);
  d.insert("optimizer", momentum);
  if (averaged) d.insert("model_ema", *averaged);
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
                               torch::optim::SGD& optimizer, const CheckpointCheck& check,
                               ModelEma* ema) {
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
    if (rec.contains("model_ema_crc32")) {
      FIXRES_CHECK(d.contains("model_ema") && d.at("model_ema").isGenericDict(), WeightsError, path,
                   ": malformed checkpoint (model_ema)");
      const auto emaCrc = field<int64_t>(rec, "model_ema_crc32", path);
      const auto emaBytes = field<int64_t>(rec, "model_ema_bytes", path);
      auto [c, b] = tensorChecksum({d.at("model_ema").toGenericDict()});
      FIXRES_CHECK(b == emaBytes && c == emaCrc, WeightsError, path,
                   ": checksum mismatch in model_ema (", b, " tensor bytes with CRC-32 ", c,
                   ", the file records ", emaBytes, " bytes with ", emaCrc,
                   "): the file is corrupt");
    }
  }
  if (check) check(s);
  models::loadStateDict(model, d.at("model"), models::LoadOptions{}, path);
  restoreMomentum(d.at("optimizer"), model, optimizer, path);
  if (ema) {
    if (d.contains("model_ema")) {
      ema->loadStateDict(d.at("model_ema"), path);
    } else {
      ema->restartAveraging();
      log::warn(path,
                " has no model_ema (a run without --model-ema): the EMA weights start over "
                "at the next update");
    }
  }
  return s;
}

std::optional<CheckpointState> resumeFromRunDir(const std::string& runDir, torch::nn::Module& model,
                                                torch::optim::SGD& optimizer,
                                                const CheckpointCheck& check, ModelEma* ema) {
  namespace fs = std::filesystem;
  std::vector<std::pair<int64_t, std::string>> candidates;
  if (fs::exists(runDir + "/checkpoint.pth"))
    candidates.push_back({INT64_MAX, runDir + "/checkpoint.pth"});
  std::regex perEpoch("checkpoint_([0-9]+)\\.pth");
  if (fs::is_directory(runDir)) {
    for (const auto& e : fs::directory_iterator(runDir)) {
      std::smatch m;
      std::string name = e.path().filename().string();
      if (std::regex_match(name, m, perEpoch))
        candidates.push_back({std::stoll(m[1]), e.path().string()});
    }
  }
  if (candidates.empty()) return std::nullopt;
  std::sort(candidates.rbegin(), candidates.rend());
  std::string failures;
  for (const auto& [epoch, path] : candidates) {
    try {
      auto s = loadCheckpoint(path, model, optimizer, check, ema);
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

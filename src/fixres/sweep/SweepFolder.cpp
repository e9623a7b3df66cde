// The sweep folder as a folder of its own: what it may already hold (fine-tuning runs of the same
// weights and settings), the memory a speed measurement may take, the weights a chosen model folder
// names (inside it, by a relative path, so that a copy is self-contained), and the stop signal the
// ranks agree on.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "fixres/common/AtomicFile.h"
#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/JsonInput.h"
#include "fixres/common/StopSignal.h"
#include "fixres/sweep/Sweep.h"

namespace fixres::engine {
namespace {

namespace fs = std::filesystem;

std::string canonicalPath(const std::string& path) {
  std::error_code ec;
  const auto p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? path : p.string();
}

// The size of a `finetune_<size>` folder name; 0 for any other name.
int finetuneFolderSize(const std::string& name) {
  const std::string prefix = "finetune_";
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size() || name.size() > prefix.size() + 4)
    return 0;
  int size = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return 0;
    size = size * 10 + (name[i] - '0');
  }
  return size;
}

// "epochs: 2 -> 3; learning_rate: ..." of the settings that differ and define the run or its
// budget (a training run may be extended; a sweep's sizes may not each have their own), "" when
// none does.
std::string changedSettings(const nlohmann::json& stored, const RunConfig& now) {
  std::string text;
  for (const ConfigChange& c : resumeChanges(stored, now)) {
    const bool budget = c.key == "epochs" || c.key == "iteration_cap" || c.key == "learning_rate";
    if (c.key == "weight_path" || !(c.definesRun || budget)) continue;  // weights: compared above
    text += (text.empty() ? "" : "; ") + c.key + ": " + c.before + " -> " + c.after;
  }
  return text;
}

}  // namespace

void checkSweepFolder(const SweepOptions& o) {
  std::error_code ec;
  if (!fs::is_directory(o.out, ec)) return;
  const std::string mine = canonicalPath(o.model.weightPath);
  for (const auto& entry : fs::directory_iterator(o.out, ec)) {
    const std::string name = entry.path().filename().string();
    const int size = finetuneFolderSize(name);
    if (size == 0) continue;
    std::string text, why;
    nlohmann::json config;
    if (!tryReadRegularFile(entry.path().string() + "/config.json", 64 << 20, "run config", &text,
                            &why) ||
        !parseJsonInput(text, &config, &why) || !config.is_object() ||
        !config.contains("weight_path") || !config["weight_path"].is_string())
      continue;  // not a run of a sweep: left for the run's own checks
    const std::string theirs = config["weight_path"].get<std::string>();
    FIXRES_CHECK(canonicalPath(theirs) == mine, UsageError, "--out ", o.out,
                 " holds a sweep of other weights (", name, " fine-tuned ", theirs,
                 "; this sweep: ", o.model.weightPath,
                 "): give another --out, or remove that folder to start clean");
    if (!o.finetune) continue;
    // A run resumed with another budget would put two budgets in one table.
    RunConfig now = o.finetuneRun(size);
    now.runDir = entry.path().string();
    std::string changes;
    try {
      changes = changedSettings(config, now);
    } catch (const Error&) {
      continue;  // an unreadable config: the run's own resume check names it
    }
    FIXRES_CHECK(changes.empty(), UsageError, "--out ", o.out, "/", name,
                 " was fine-tuned with other settings (", changes,
                 "): rerun with the settings it was started with, give another --out, or remove "
                 "that folder to start clean");
  }
}

void checkLatencyMemory(const SweepOptions& o) {
  if (o.latencyBatches <= 0) return;
  const int largest = *std::max_element(o.sizes.begin(), o.sizes.end());
  const double inputBytes = static_cast<double>(o.timedBatch()) * 3.0 * largest * largest * 4.0;
  const double memory =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  // A forward pass holds several activations of the input's order at once: past a sixteenth of
  // the memory for the input alone, the allocator fails (or the system swaps) long after the
  // sweep started.
  if (memory <= 0 || inputBytes * kLatencyMemoryFactor <= memory) return;
  char text[160];
  std::snprintf(text, sizeof(text), "%.2f GiB for the input alone at %d px, of the %.1f GiB",
                inputBytes / (1 << 30), largest, memory / (1 << 30));
  FIXRES_FAIL(UsageError, o.latencyBatch > 0 ? "--latency-batch " : "--batch (the timed batch) ",
              o.timedBatch(), " is too large to time: ", text,
              " this machine has (the forward pass needs several times the input): give a "
              "smaller --latency-batch");
}

std::string placeChosenWeights(const std::string& out, const std::string& source) {
  const std::string absoluteOut = canonicalPath(out);
  const std::string file = canonicalPath(source);
  const fs::path relative = fs::path(file).lexically_relative(absoluteOut);
  if (!relative.empty() && *relative.begin() != ".." && relative.is_relative())
    return relative.string();  // already inside the folder (a fine-tuning run's checkpoint)
  const std::string ext = fs::path(file).extension().string();
  const std::string name = "weights" + (ext.size() <= 16 ? ext : std::string(".pth"));
  const std::string target = out + "/" + name;
  // A hard link costs nothing and is a snapshot: a rerun of the source run that replaces its
  // checkpoint (atomically, a new file) leaves this one as it was. Across file systems: a copy.
  const std::string tmp = out + "/." + name + ".link-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove(tmp, ec);
  if (::link(file.c_str(), tmp.c_str()) == 0) {
    if (std::rename(tmp.c_str(), target.c_str()) == 0) return name;
    const int err = errno;
    fs::remove(tmp, ec);
    FIXRES_FAIL(OutputError, "cannot write ", target, ": ", std::strerror(err));
  }
  std::ifstream in(file, std::ios::binary);
  FIXRES_CHECK(in.good(), WeightsError, "cannot read the weight file ", file, " to copy it into ",
               out);
  AtomicFile copy(target);
  std::vector<char> buffer(size_t(1) << 20);
  while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0)
    copy.write(buffer.data(), static_cast<size_t>(in.gcount()));
  FIXRES_CHECK(!in.bad(), WeightsError, "cannot read the weight file ", file, " to copy it into ",
               out);
  FIXRES_CHECK(copy.commit(), OutputError, "cannot write ", target, ": ", copy.reason());
  return name;
}

int agreedStopSignal(distributed::Communicator& comm) {
  const int mine = stopSignal();
  if (comm.worldSize() == 1) return mine;
  // SIGTERM (and SIGHUP, which stopSignal reports as SIGTERM) wins over SIGINT, as in training.
  const auto got = distributed::allReduceScalars(
      comm, {mine == SIGTERM ? 1.0 : 0.0, mine != 0 && mine != SIGTERM ? 1.0 : 0.0});
  return got[0] > 0 ? SIGTERM : got[1] > 0 ? SIGINT : 0;
}

}  // namespace fixres::engine

// One rule for outputs that cannot be written: every writer of fixres (atomic and plain files,
// folders, torch.save files, .npy arrays, PNG images, TensorBoard event files, metrics.jsonl)
// throws an OutputError (exit code 6) naming the path and the system's reason, whatever the cause:
// a path through a regular file, a full disk, the file size limit (`ulimit -f`), a read-only
// folder.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/data/Npy.h"
#include "fixres/engine/MetricsLog.h"
#include "fixres/image/Encode.h"
#include "fixres/train/EventFile.h"
#include "fixres/weights/TorchFile.h"

namespace fixres {
namespace {

// A writer of one output at `path`, big enough to pass a 4 KiB file size limit.
struct Writer {
  std::string name;
  std::function<void(const std::string& path)> write;
  bool makesFolders = false;  // makeDirectories: no file size involved
};

const std::vector<Writer>& writers() {
  static const std::string big(1 << 16, 'x');
  static const std::vector<uint8_t> pixels = [] {
    std::vector<uint8_t> p(128 * 128 * 3);  // noise: its PNG is about as large
    std::mt19937 rng(7);
    for (auto& v : p) v = static_cast<uint8_t>(rng());
    return p;
  }();
  static const std::vector<Writer> all = {
      {"writeFileAtomic", [](const std::string& p) { writeFileAtomic(p, big); }},
      {"writeFile", [](const std::string& p) { writeFile(p, big); }},
      {"makeDirectories", [](const std::string& p) { makeDirectories(p + "/sub"); }, true},
      {"writeTorchFile",
       [](const std::string& p) {
         models::writeTorchFile(p, c10::IValue(torch::ones({1 << 14})));
       }},
      {"writeNpy", [](const std::string& p) { data::writeNpy(p, torch::ones({1 << 14})); }},
      {"writePng", [](const std::string& p) { image::writePng(p, 128, 128, 3, pixels.data()); }},
      {"EventFile",
       [](const std::string& p) {
         engine::EventFile events(p, 1.0);
         for (int step = 1; step <= 200; ++step)
           events.appendScalars(step, 1.0, {{"train/" + std::string(40, 'x'), 1.0}});
       }},
      {"MetricsLog",
       [](const std::string& p) {
         engine::MetricsLog metrics(p, std::nullopt);
         for (int step = 1; step <= 200; ++step)
           metrics.append({{"step", step}, {"note", std::string(40, 'x')}});
       }},
  };
  return all;
}

// Runs `w` on `path`; expects an OutputError (exit code 6) naming `named` and holding `reason`.
void expectOutputError(const Writer& w, const std::string& path, const std::string& named,
                       const std::string& reason) {
  SCOPED_TRACE(w.name + " " + path);
  try {
    w.write(path);
    ADD_FAILURE() << "written";
  } catch (const OutputError& e) {
    EXPECT_EQ(exitCodeOf(e), ExitCode::kOutput);
    EXPECT_EQ(static_cast<int>(e.code()), 6);
    const std::string msg = e.what();
    EXPECT_NE(msg.find(named), std::string::npos) << msg;
    EXPECT_NE(msg.find(reason), std::string::npos) << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an OutputError: " << e.what();
  }
}

TEST(WriteFailure, APathThroughARegularFileIsAnOutputError) {
  const std::string dir = testing::makeTempDir("fixres_writefail_");
  const std::string file = dir + "/plain";
  std::ofstream(file) << "a file, not a folder";
  for (const Writer& w : writers()) expectOutputError(w, file + "/out", file, "Not a directory");
}

TEST(WriteFailure, TheFileSizeLimitIsAnOutputError) {
  const std::string dir = testing::makeTempDir("fixres_writefail_");
  // As `ulimit -f 4` does; fixres ignores SIGXFSZ (Runtime.h), so the write fails with EFBIG as
  // a full disk fails with ENOSPC.
  auto oldHandler = signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  getrlimit(RLIMIT_FSIZE, &old);
  rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  for (const Writer& w : writers()) {
    if (w.makesFolders) continue;
    expectOutputError(w, dir + "/" + w.name + ".out", w.name + ".out", "File too large");
  }
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, oldHandler);
}

TEST(WriteFailure, AFullDiskIsAnOutputError) {
  // /dev/full refuses every write with ENOSPC; only the plain writer writes in place.
  FIXRES_SKIP_UNLESS(::access("/dev/full", W_OK) == 0, "dev-full", "no /dev/full");
  expectOutputError(writers()[1], "/dev/full", "/dev/full", "No space left on device");
}

// Its own suite: where a read-only folder cannot be made, only this case shows as skipped.
TEST(WriteFailureReadOnly, AReadOnlyFolderIsAnOutputError) {
  const std::string dir = testing::makeTempDir("fixres_writefail_");
  // Root writes into folders without write permission, so there the folder is made immutable
  // (EPERM instead of EACCES).
  const bool asRoot = ::geteuid() == 0;
  const std::string immutable = "chattr +i '" + dir + "' 2>/dev/null";
  if (asRoot)
    FIXRES_SKIP_UNLESS(testing::runCommand(immutable) == 0, "read-only-folder",
                       "running as root without chattr +i: cannot make a read-only folder");
  else
    ASSERT_EQ(::chmod(dir.c_str(), 0555), 0);
  const std::string why = asRoot ? "Operation not permitted" : "Permission denied";
  for (const Writer& w : writers()) expectOutputError(w, dir + "/" + w.name + ".out", dir, why);
  if (asRoot)
    testing::runCommand("chattr -i '" + dir + "'");
  else
    ::chmod(dir.c_str(), 0755);
}

}  // namespace
}  // namespace fixres

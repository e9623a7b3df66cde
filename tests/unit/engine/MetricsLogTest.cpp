// metrics.jsonl: a resumed run keeps the whole, readable records up to its checkpoint (no step
// listed twice, no half line glued to the next record), and an append that fails (the file size
// limit, as a full disk) leaves whole lines only.
#include "fixres/engine/MetricsLog.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../Reference.h"
#include "fixres/common/Error.h"

namespace fixres::engine {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string tempFolder(const std::string& name) {
  auto dir =
      fs::temp_directory_path() / ("fixres-metrics-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

const char* const kLog =
    "{\"phase\":\"before\",\"eval\":{\"top1\":1}}\n"
    "{\"step\":1,\"epoch\":0,\"loss\":2.0}\n"
    "{\"step\":2,\"epoch\":0,\"loss\":1.9}\n"
    "{\"epoch\":1,\"eval\":{\"top1\":10}}\n"
    "{\"step\":3,\"epoch\":1,\"loss\":1.8}\n"
    "not json\n"
    "[1,2]\n"
    "{\"step\":4,\"epoch\":1,\"loss\":1.7}\n"
    "{\"epoch\":2,\"eval\":{\"top1\":20}}\n"
    "{\"step\":5,\"epoch\":2,\"lo";  // the disk filled up here

TEST(MetricsLogTest, KeepsWholeRecordsUpToTheCheckpoint) {
  size_t dropped = 0;
  EXPECT_EQ(MetricsLog::keptRecords(kLog, {3, 1}, dropped),
            "{\"phase\":\"before\",\"eval\":{\"top1\":1}}\n"
            "{\"step\":1,\"epoch\":0,\"loss\":2.0}\n"
            "{\"step\":2,\"epoch\":0,\"loss\":1.9}\n"
            "{\"epoch\":1,\"eval\":{\"top1\":10}}\n"
            "{\"step\":3,\"epoch\":1,\"loss\":1.8}\n");
  EXPECT_EQ(dropped, 5u);  // two unreadable lines, step 4, epoch 2's evaluation, the half line
  // A checkpoint on the last step of epoch 1 whose evaluation was not done yet: it is dropped.
  EXPECT_EQ(MetricsLog::keptRecords("{\"step\":2}\n{\"epoch\":1,\"eval\":{}}\n", {2, 0}, dropped),
            "{\"step\":2}\n");
  EXPECT_EQ(dropped, 1u);
}

// Epoch records carry the step they were written at and may hold only the training top-1 (no
// validation set): they are kept by their epoch, as evaluations are.
TEST(MetricsLogTest, EpochRecordsAreKeptByTheirEpoch) {
  size_t dropped = 0;
  const std::string log =
      "{\"phase\":\"before\",\"step\":0,\"eval\":{\"top1\":1}}\n"
      "{\"step\":2,\"epoch\":0,\"loss\":1.9}\n"
      "{\"epoch\":1,\"step\":2,\"train\":{\"top1\":30}}\n"
      "{\"step\":4,\"epoch\":1,\"loss\":1.7}\n"
      "{\"epoch\":2,\"step\":4,\"train\":{\"top1\":40},\"eval\":{\"top1\":35}}\n";
  // Stopped on the last step of epoch 2 before its end: its epoch record goes, the step stays.
  EXPECT_EQ(MetricsLog::keptRecords(log, {4, 1}, dropped),
            "{\"phase\":\"before\",\"step\":0,\"eval\":{\"top1\":1}}\n"
            "{\"step\":2,\"epoch\":0,\"loss\":1.9}\n"
            "{\"epoch\":1,\"step\":2,\"train\":{\"top1\":30}}\n"
            "{\"step\":4,\"epoch\":1,\"loss\":1.7}\n");
  EXPECT_EQ(dropped, 1u);
}

TEST(MetricsLogTest, AResumedRunRewritesTheFileAndAppendsOnAFreshLine) {
  const auto dir = tempFolder("resume");
  const auto path = dir + "/metrics.jsonl";
  std::ofstream(path) << kLog;
  {
    MetricsLog log(path, MetricsLog::Position{2, 0});
    log.append({{"step", 3}});
  }
  EXPECT_EQ(slurp(path),
            "{\"phase\":\"before\",\"eval\":{\"top1\":1}}\n"
            "{\"step\":1,\"epoch\":0,\"loss\":2.0}\n"
            "{\"step\":2,\"epoch\":0,\"loss\":1.9}\n"
            "{\"step\":3}\n");
  {
    MetricsLog fresh(path, std::nullopt);  // a run that starts over starts an empty file
  }
  EXPECT_EQ(slurp(path), "");
  fs::remove_all(dir);
}

TEST(MetricsLogTest, AFailedAppendLeavesWholeLines) {
  const auto dir = tempFolder("full");
  const auto path = dir + "/metrics.jsonl";
  MetricsLog log(path, std::nullopt);
  log.append({{"step", 1}});
  const std::string before = slurp(path);
  // The file size limit stops the write partway, as a full disk does (EFBIG instead of ENOSPC).
  bool threw = false;
  testing::withFileSizeLimit(before.size() + 10, [&] {
    try {
      log.append({{"step", 2}, {"loss", 1.5}, {"note", std::string(100, 'x')}});
    } catch (const OutputError& e) {  // an output that cannot be written: exit code 6
      threw = true;
      EXPECT_EQ(exitCodeOf(e), ExitCode::kOutput);
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  });
  EXPECT_TRUE(threw);
  EXPECT_EQ(slurp(path), before);  // not a byte of the failed record
  log.append({{"step", 3}});
  EXPECT_EQ(slurp(path), before + "{\"step\":3}\n");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fixres::engine

// TensorBoard event files: a file written by EventFile read back by an independent reader
// (tests/reference/event_file_check.py: its own CRC-32C and a hand-written protobuf decoder;
// TensorBoard's own loader too when installed), the scalars of metrics records against the
// documented tag rule, and a write that fails leaving whole records only.
#include "fixres/train/EventFile.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cmath>
#include <csignal>
#include <fstream>
#include <map>

#include "../Reference.h"
#include "fixres/common/Error.h"

namespace fixres::engine {
namespace {

// [[tag, value], ...] as event_file_check.py reads it (null for NaN).
nlohmann::json pairs(std::initializer_list<std::pair<std::string, nlohmann::json>> scalars) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [tag, value] : scalars) out.push_back(nlohmann::json::array({tag, value}));
  return out;
}

TEST(EventFileTest, ReadBackByAnIndependentDecoder) {
  const std::string dir = testing::makeTempDir("fixres_events_");
  const std::string path = EventFile::newPath(dir, 1700000000.25);
  const std::string prefix = dir + "/events.out.tfevents.1700000000.";  // then the host name
  EXPECT_EQ(path.rfind(prefix, 0), 0u) << path;
  EXPECT_GT(path.size(), prefix.size()) << path;
  nlohmann::json expected = nlohmann::json::array();
  {
    EventFile events(path, 1700000000.25);
    expected.push_back(
        {{"wall_time", 1700000000.25}, {"step", 0}, {"file_version", "brain.Event:2"}});
    events.appendScalars(1, 1700000001.5, {{"train/loss", 2.302585}, {"train/lr", 0.1}});
    expected.push_back({{"wall_time", 1700000001.5},
                        {"step", 1},
                        {"scalars", pairs({{"train/loss", 2.302585}, {"train/lr", 0.1}})}});
    // NaN, a negative value, a large step and a long tag (a length varint of two bytes).
    const std::string longTag = "eval/" + std::string(200, 'x');
    events.appendScalars(5000000000LL, 1700000002.0, {{"train/loss", NAN}, {longTag, -3.5}});
    expected.push_back({{"wall_time", 1700000002.0},
                        {"step", 5000000000LL},
                        {"scalars", pairs({{"train/loss", nullptr}, {longTag, -3.5}})}});
    events.appendScalars(6, 1700000002.5, {});  // nothing to write
    events.appendRestart(7, 1700000003.0);
    expected.push_back({{"wall_time", 1700000003.0}, {"step", 7}, {"restart", true}});
    events.appendRecord({{"step", 8}, {"epoch", 1}, {"iteration", 2}, {"loss", 1.25}},
                        1700000004.0);
    expected.push_back(
        {{"wall_time", 1700000004.0}, {"step", 8}, {"scalars", pairs({{"train/loss", 1.25}})}});
    events.appendRecord({{"phase", "before"}, {"eval", {{"top1", 50.0}}}},
                        1700000005.0);  // no step
  }
  const std::string expectedPath = dir + "/expected.json";
  std::ofstream(expectedPath) << expected.dump();
  bool ok = false;
  const std::string out =
      testing::runReference("event_file_check.py", "file " + path + " " + expectedPath, &ok);
  EXPECT_TRUE(ok);
  EXPECT_EQ(out.rfind("ok: 5 events", 0), 0u) << out;
  std::printf("event_file_check.py: %s", out.c_str());
  // A second file started within the same second gets another name.
  EXPECT_NE(EventFile::newPath(dir, 1700000000.9), path);
}

TEST(EventFileTest, RecordScalarsFollowTheTagRule) {
  const nlohmann::json step = {{"step", 12},
                               {"epoch", 0},
                               {"iteration", 12},
                               {"lr", 0.1},
                               {"loss", 2.5},
                               {"images_per_s", 100.0},
                               {"data_wait_share", 0.25}};
  const auto s = EventFile::recordScalars(step);
  std::map<std::string, double> got;
  for (const auto& x : s) got[x.tag] = x.value;
  EXPECT_EQ(got, (std::map<std::string, double>{{"train/lr", 0.1},
                                                {"train/loss", 2.5},
                                                {"train/images_per_s", 100.0},
                                                {"train/data_wait_share", 0.25}}));
  const nlohmann::json epoch = {
      {"epoch", 2},
      {"step", 40},
      {"train", {{"top1", 60.0}, {"count", 640}}},
      {"eval", {{"top1", 55.0}, {"top5", 90.0}, {"complete", false}, {"deep", {{"x", 1}}}}}};
  got.clear();
  for (const auto& x : EventFile::recordScalars(epoch)) got[x.tag] = x.value;
  EXPECT_EQ(
      got,
      (std::map<std::string, double>{
          {"train/top1", 60.0}, {"train/count", 640.0}, {"eval/top1", 55.0}, {"eval/top5", 90.0}}));
  got.clear();
  for (const auto& x :
       EventFile::recordScalars({{"phase", "before"}, {"step", 0}, {"eval", {{"top1", 40.0}}}}))
    got[x.tag] = x.value;
  EXPECT_EQ(got, (std::map<std::string, double>{{"eval_before/top1", 40.0}}));
}

TEST(EventFileTest, AFailedWriteLeavesWholeRecords) {
  const std::string dir = testing::makeTempDir("fixres_events_");
  const std::string path = dir + "/events.out.tfevents.1.test";
  EventFile events(path, 1.0);
  events.appendScalars(1, 2.0, {{"train/loss", 1.0}});
  const std::string before = testing::readText(path);
  // The file size limit stops the write partway, as a full disk does (EFBIG instead of ENOSPC).
  bool threw = false;
  testing::withFileSizeLimit(before.size() + 10, [&] {
    try {
      events.appendScalars(2, 3.0, {{"train/" + std::string(100, 'x'), 1.0}});
    } catch (const OutputError& e) {
      threw = true;
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  });
  EXPECT_TRUE(threw);
  EXPECT_EQ(testing::readText(path), before);  // not a byte of the failed record
  events.appendScalars(3, 4.0, {{"train/loss", 0.5}});
  EXPECT_GT(testing::readText(path).size(), before.size());
  // An existing file is never taken over.
  EXPECT_THROW(EventFile(path, 5.0), OutputError);
}

}  // namespace
}  // namespace fixres::engine

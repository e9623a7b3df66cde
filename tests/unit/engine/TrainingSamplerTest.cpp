// The training sampler's choice: the reader's required sampler replaces --sampler, with the log
// line the issue asks for ("train: <reader> reads in order: sampler shard (not --sampler X)");
// --sampler shard on data read in any order is a UsageError naming the data.
#include "fixres/train/TrainingSampler.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "fixres/common/Error.h"

namespace fixres::engine {
namespace {

// A reader that only names itself and its sampler (the choice needs nothing else).
class NamedReader : public data::DatasetReader {
 public:
  NamedReader(std::string name, std::optional<data::SamplerKind> sampler)
      : name_(std::move(name)), sampler_(sampler) {}
  std::string name() const override { return name_; }
  bool recognises(const std::string&, const data::FileIndexOptions&) const override {
    return false;
  }
  std::shared_ptr<data::Dataset> open(const std::string&,
                                      const data::FileIndexOptions&) const override {
    return nullptr;
  }
  std::shared_ptr<data::Dataset> openUnlabelled(const std::string&) const override {
    return nullptr;
  }
  std::vector<std::string> declaredClasses(const std::string&) const override { return {}; }
  std::optional<data::SamplerKind> requiredSampler() const override { return sampler_; }

 private:
  std::string name_;
  std::optional<data::SamplerKind> sampler_;
};

TEST(TrainingSampler, TheReadersSamplerReplacesTheFlagAndSaysSo) {
  const NamedReader shards("shard folder", data::SamplerKind::kShard);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(trainingSampler(shards, data::SamplerKind::kRepeatedAug, "/d/train"),
            data::SamplerKind::kShard);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "train: shard folder reads in order: sampler shard (not --sampler ra)\n");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(trainingSampler(shards, data::SamplerKind::kDistributed, "/d/train"),
            data::SamplerKind::kShard);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "train: shard folder reads in order: sampler shard (not --sampler distributed)\n");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(trainingSampler(shards, data::SamplerKind::kShard, "/d/train"),
            data::SamplerKind::kShard);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "train: shard folder reads in order: sampler shard\n");
}

TEST(TrainingSampler, TheFlagDecidesForDataReadInAnyOrder) {
  const NamedReader folder("image folder", std::nullopt);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(trainingSampler(folder, data::SamplerKind::kRepeatedAug, "/d/train"),
            data::SamplerKind::kRepeatedAug);
  EXPECT_EQ(trainingSampler(folder, data::SamplerKind::kDistributed, "/d/train"),
            data::SamplerKind::kDistributed);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  try {
    trainingSampler(folder, data::SamplerKind::kShard, "/d/train");
    ADD_FAILURE() << "--sampler shard accepted on an image folder";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--sampler shard"), std::string::npos) << what;
    EXPECT_NE(what.find("/d/train (image folder)"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace fixres::engine

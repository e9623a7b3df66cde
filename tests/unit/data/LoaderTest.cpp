// The threaded loader: same batches for any thread count, sampler order, resume mid-epoch,
// bad-image policies, early shutdown, uint8 output, variable-size batches.
#include "fixres/data/Loader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/runtime/ModelInput.h"

namespace fixres::data {
namespace {

namespace fs = std::filesystem;

class DataLoader : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    log::setLevel(log::Level::kError);
    fixres::testing::cachedReference("image_folder.py", "{dir}/good", &good_);
    fixres::testing::cachedReference("image_folder.py", "{dir}/bad --corrupt", &bad_);
    good_ += "/good";
    bad_ += "/bad";
  }
  static void TearDownTestSuite() { log::setLevel(log::Level::kInfo); }

  static std::vector<Batch> epoch(Loader& loader, int64_t e, int64_t skip = 0) {
    loader.startEpoch(e, skip);
    std::vector<Batch> out;
    while (auto b = loader.next()) out.push_back(*b);
    return out;
  }

  static image::TransformOptions transform(image::TransformKind kind, int size = 32) {
    image::TransformOptions t;
    t.kind = kind;
    t.inputSize = size;
    return t;
  }

  static std::string good_, bad_;
};
std::string DataLoader::good_, DataLoader::bad_;

TEST_F(DataLoader, SameBatchesForAnyThreadCountInSamplerOrder) {
  auto ds = openImageFolder(good_);
  std::vector<std::vector<Batch>> runs;
  for (int threads : {0, 1, 3}) {
    auto sampler = makeDistributedSampler(ds->size(), 0, 1, true, 7, true);
    LoaderOptions o;
    o.batchSize = 4;
    o.threads = threads;
    o.prefetchBatches = 2;
    o.seed = 99;
    Loader loader(ds, sampler, transform(image::TransformKind::kFull), o);
    EXPECT_EQ(loader.batchesPerEpoch(), 3);
    runs.push_back(epoch(loader, 1));
    sampler->setEpoch(1);
    std::vector<int64_t> order;
    for (const Batch& b : runs.back()) {
      for (int64_t i = 0; i < b.indices.size(0); ++i) order.push_back(b.indices[i].item<int64_t>());
    }
    EXPECT_EQ(order, sampler->indices()) << threads << " threads";
  }
  ASSERT_EQ(runs[0].size(), 3u);
  for (size_t r = 1; r < runs.size(); ++r) {
    ASSERT_EQ(runs[r].size(), runs[0].size());
    for (size_t b = 0; b < runs[0].size(); ++b) {
      EXPECT_TRUE(torch::equal(runs[r][b].images, runs[0][b].images))
          << "run " << r << " batch " << b;
      EXPECT_TRUE(torch::equal(runs[r][b].labels, runs[0][b].labels));
    }
  }
  EXPECT_EQ(runs[0][0].images.sizes(), (std::vector<int64_t>{4, 3, 32, 32}));
  EXPECT_EQ(runs[0][2].images.size(0), 1);  // 9 images: 4 + 4 + 1
  for (const Batch& b : runs[0]) {
    for (int64_t i = 0; i < b.indices.size(0); ++i) {
      EXPECT_EQ(b.labels[i].item<int64_t>(), ds->label(b.indices[i].item<int64_t>()));
    }
  }
}

// uint8 batches normalised by LibTorch ops (what runs on the GPU) equal the loader's own float
// batches: for `val`, and for `full` with AlexNet lighting (per-sample offsets carried along).
TEST_F(DataLoader, Uint8BatchesNormalisedOnDeviceEqualFloatBatches) {
  auto ds = openImageFolder(good_);
  for (auto kind : {image::TransformKind::kVal, image::TransformKind::kFull}) {
    auto t = transform(kind);
    if (kind == image::TransformKind::kFull) t.lightingStd = 0.1f;
    std::vector<std::vector<Batch>> runs;
    for (bool u8 : {false, true}) {
      LoaderOptions o;
      o.batchSize = 4;
      o.threads = 2;
      o.seed = 5;
      o.uint8Output = u8;
      Loader loader(ds, makeDistributedSampler(ds->size(), 0, 1, true, 3, true), t, o);
      runs.push_back(epoch(loader, 0));
    }
    ASSERT_EQ(runs[0].size(), runs[1].size());
    for (size_t b = 0; b < runs[0].size(); ++b) {
      ASSERT_EQ(runs[1][b].images.scalar_type(), torch::kUInt8);
      auto x = engine::normalizeOnDevice(runs[1][b].images, runs[1][b].lighting, t);
      const double diff = (x - runs[0][b].images).abs().max().item<double>();
      EXPECT_LT(diff, 1e-5) << image::transformKindName(kind) << " batch " << b;
      if (kind == image::TransformKind::kFull)
        EXPECT_GT(runs[1][b].lighting.abs().max().item<double>(), 0.0);  // lighting was drawn
    }
  }
}

// --decode-on gpu's loader half: the workers hand over the JPEGs' bytes (other formats decoded)
// with each sample's plan, and the batch decoded and transformed where the model runs (the CPU
// standing in for the GPU here: the CPU decoder in nvJPEG's place) is within one uint8 step of
// the CPU loader's batch (DeviceTransformTest measures the transforms alone).
TEST_F(DataLoader, EncodedBatchesTransformedOnTheDeviceMatchTheCpuBatches) {
  auto ds = openImageFolder(good_);
  for (auto kind : {image::TransformKind::kTorch, image::TransformKind::kVal}) {
    const auto t = transform(kind);
    std::vector<std::vector<Batch>> runs;
    for (bool encoded : {false, true}) {
      LoaderOptions o;
      o.batchSize = 4;
      o.threads = 2;
      o.seed = 5;
      o.encodedOutput = encoded;
      Loader loader(ds, makeDistributedSampler(ds->size(), 0, 1, true, 3, true), t, o);
      runs.push_back(epoch(loader, 0));
    }
    ASSERT_EQ(runs[0].size(), runs[1].size());
    const auto stdv = torch::tensor({t.std[0], t.std[1], t.std[2]}).view({1, 3, 1, 1});
    for (size_t b = 0; b < runs[0].size(); ++b) {
      ASSERT_EQ(runs[1][b].encoded.size(), static_cast<size_t>(runs[0][b].images.size(0)));
      EXPECT_FALSE(runs[1][b].images.defined());
      EXPECT_TRUE(torch::equal(runs[1][b].labels, runs[0][b].labels));
      const auto x = engine::toModel(runs[1][b], engine::RunDevice{}, t).images;
      const double steps = ((x - runs[0][b].images) * stdv * 255).abs().max().item<double>();
      EXPECT_LE(steps, 1.5) << image::transformKindName(kind) << " batch " << b;
    }
  }
  LoaderOptions o;
  o.encodedOutput = true;
  EXPECT_THROW(Loader(ds, makeDistributedSampler(ds->size(), 0, 1, false, 0, false),
                      transform(image::TransformKind::kFull), o),
               UsageError);
}

TEST_F(DataLoader, AugmentationDependsOnEpochAndSeed) {
  auto ds = openImageFolder(good_);
  auto sampler = makeDistributedSampler(ds->size(), 0, 1, false, 0, true);
  LoaderOptions o;
  o.batchSize = 9;
  o.threads = 2;
  Loader a(ds, sampler, transform(image::TransformKind::kTorch), o);
  const torch::Tensor e1 = epoch(a, 1)[0].images.clone();
  const torch::Tensor e2 = epoch(a, 2)[0].images.clone();
  EXPECT_FALSE(torch::equal(e1, e2));
  EXPECT_TRUE(torch::equal(e1, epoch(a, 1)[0].images));
}

TEST_F(DataLoader, ResumingMidEpochGivesTheRemainingBatches) {
  auto ds = openImageFolder(good_);
  auto sampler = makeDistributedSampler(ds->size(), 0, 1, true, 3, true);
  LoaderOptions o;
  o.batchSize = 2;
  o.threads = 2;
  Loader loader(ds, sampler, transform(image::TransformKind::kFull), o);
  const auto all = epoch(loader, 4);
  const auto rest = epoch(loader, 4, 2);
  ASSERT_EQ(all.size(), 5u);
  ASSERT_EQ(rest.size(), 3u);
  for (size_t b = 0; b < rest.size(); ++b) {
    EXPECT_TRUE(torch::equal(rest[b].images, all[b + 2].images));
    EXPECT_TRUE(torch::equal(rest[b].indices, all[b + 2].indices));
  }
}

TEST_F(DataLoader, ValBatchesEqualTheTransformOfEachImage) {
  auto ds = openImageFolder(good_);
  auto sampler = makeDistributedSampler(ds->size(), 0, 1, false, 0, false);
  LoaderOptions o;
  o.batchSize = 16;
  o.threads = 2;
  o.dropLast = false;
  Loader loader(ds, sampler, transform(image::TransformKind::kVal, 40), o);
  const auto batches = epoch(loader, 0);
  ASSERT_EQ(batches.size(), 1u);
  image::Transform t(transform(image::TransformKind::kVal, 40));
  for (size_t i = 0; i < ds->size(); ++i) {
    const RawSample raw = ds->fetch(i);
    const auto r = t.apply(raw.data(), raw.size(), raw.name, 0);
    torch::Tensor expected = torch::empty({3, 40, 40});
    t.writeFloat(r, expected.data_ptr<float>());
    EXPECT_TRUE(torch::equal(batches[0].images[static_cast<int64_t>(i)], expected)) << i;
  }
  // uint8 output holds the same pixels before normalisation.
  o.uint8Output = true;
  Loader raw(ds, sampler, transform(image::TransformKind::kVal, 40), o);
  const auto u8 = epoch(raw, 0);
  ASSERT_EQ(u8[0].images.dtype(), torch::kUInt8);
  const torch::Tensor mean = torch::tensor({0.485f, 0.456f, 0.406f}).view({1, 3, 1, 1});
  const torch::Tensor std = torch::tensor({0.229f, 0.224f, 0.225f}).view({1, 3, 1, 1});
  const torch::Tensor normalised = (u8[0].images.to(torch::kFloat32).div(255) - mean) / std;
  // 2e-6: values up to 2.64 (an ulp is 2.4e-7); LibTorch divides by the tensor, the loader
  // multiplies by its reciprocal, a few ulp apart.
  EXPECT_TRUE(torch::allclose(normalised, batches[0].images, 0, 2e-6));
}

TEST_F(DataLoader, DropLastAndVariableSizes) {
  auto ds = openImageFolder(good_);
  auto sampler = makeDistributedSampler(ds->size(), 0, 1, false, 0, false);
  LoaderOptions o;
  o.batchSize = 4;
  o.threads = 1;
  o.dropLast = true;
  Loader loader(ds, sampler, transform(image::TransformKind::kValNoCrop, 50), o);
  const auto batches = epoch(loader, 0);
  ASSERT_EQ(batches.size(), 2u);
  // Landscape 64x48 -> 50x37, portrait 40x70 -> 28x50: padded to the batch's largest sides.
  for (const Batch& b : batches) {
    EXPECT_LE(b.images.size(2), 50);
    EXPECT_LE(b.images.size(3), 50);
  }
}

TEST_F(DataLoader, BadImagesFailWithThePathOrAreSkipped) {
  auto ds = openImageFolder(bad_);
  const std::string badPath = bad_ + "/a/x3_truncated.jpg";
  auto sampler = makeDistributedSampler(ds->size(), 0, 1, false, 0, false);
  LoaderOptions o;
  o.batchSize = 3;
  o.threads = 2;
  {
    Loader loader(ds, sampler, transform(image::TransformKind::kVal), o);
    loader.startEpoch(0);
    try {
      while (loader.next()) {
      }
      ADD_FAILURE() << "no error for " << badPath;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(badPath), std::string::npos) << e.what();
      EXPECT_EQ(static_cast<int>(e.code()), 3);
    }
  }
  o.badImages = BadImagePolicy::kSkip;
  Loader loader(ds, sampler, transform(image::TransformKind::kVal), o);
  int64_t total = 0;
  for (const Batch& b : epoch(loader, 0)) {
    total += b.images.size(0);
    EXPECT_EQ(b.labels.size(0), b.images.size(0));
  }
  EXPECT_EQ(total, static_cast<int64_t>(ds->size()) - 1);
  EXPECT_EQ(loader.skippedImages(), 1);
}

// With kSkip a bad file is reported once per run, not once per repetition (repeated
// augmentation), epoch and thread; the epoch-end line still counts every skip.
TEST_F(DataLoader, SkippedImageIsWarnedOncePerRun) {
  const std::string root = fixres::testing::makeTempDir("fixres_skip_once_");
  fs::copy(bad_, root, fs::copy_options::recursive);  // a path no other test has warned about
  const std::string badPath = root + "/a/x3_truncated.jpg";
  auto ds = openImageFolder(root);
  auto sampler = makeRepeatedAugSampler(ds->size(), 0, 1, 5, 3, 3.0);
  LoaderOptions o;
  o.batchSize = 4;
  o.threads = 3;
  o.badImages = BadImagePolicy::kSkip;
  Loader loader(ds, sampler, transform(image::TransformKind::kVal), o);
  ::testing::internal::CaptureStderr();
  int64_t skipped = 0;
  for (int64_t e = 0; e < 3; ++e) {
    epoch(loader, e);
    EXPECT_EQ(loader.skippedImages(), 3) << "epoch " << e;  // three copies of the bad image
    skipped += loader.skippedImages();
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(skipped, 9);
  std::istringstream lines(err);
  int reported = 0, counted = 0;
  for (std::string line; std::getline(lines, line);) {
    reported += line.find("skipping unreadable image") != std::string::npos &&
                line.find(badPath) != std::string::npos;
    counted += line.find(": skipped 3 unreadable image(s)") != std::string::npos;
  }
  EXPECT_EQ(reported, 1) << err;
  EXPECT_EQ(counted, 3) << err;
}

// Forwards to a dataset, counting the fetches started and those still running; each fetch
// takes a few milliseconds, so workers are often mid-fetch when the loader stops them.
class CountingDataset : public Dataset {
 public:
  explicit CountingDataset(std::shared_ptr<const Dataset> inner) : inner_(std::move(inner)) {}
  size_t size() const override { return inner_->size(); }
  int64_t label(size_t i) const override { return inner_->label(i); }
  const std::vector<std::string>& classes() const override { return inner_->classes(); }
  std::string name(size_t i) const override { return inner_->name(i); }
  std::string source() const override { return inner_->source(); }
  RawSample fetch(size_t i) const override {
    ++started_;
    ++running_;
    struct Finished {
      std::atomic<int>& running;
      ~Finished() { --running; }
    } finished{running_};
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return inner_->fetch(i);
  }
  int64_t started() const { return started_; }
  int running() const { return running_; }

 private:
  std::shared_ptr<const Dataset> inner_;
  mutable std::atomic<int64_t> started_{0};
  mutable std::atomic<int> running_{0};
};

// Runs `step` on a thread of its own: its result, or std::nullopt when it has not returned
// within 30 s, so that a hang fails the test instead of blocking it. (The bound is about
// hanging, not speed: a healthy step takes milliseconds.) A step that does not return is left
// running, never waited for, so it must own what it uses.
template <typename Step>
std::optional<bool> resultUnlessHung(Step step) {
  std::future<bool> result = std::async(std::launch::async, std::move(step));
  if (result.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    // Destroying the future would wait for the step: keep it for the rest of the process.
    static auto* abandoned = new std::vector<std::future<bool>>();
    abandoned->push_back(std::move(result));
    return std::nullopt;
  }
  return result.get();
}

// The consumer takes one batch of an epoch, restarts mid-epoch, takes one batch and drops the
// loader: the restart and the destructor stop and join the workers, which had run no further
// ahead than the prefetch window, and no fetch runs or starts once the loader is gone.
TEST_F(DataLoader, StopsCleanlyWhenTheConsumerLeavesEarly) {
  LoaderOptions o;
  o.batchSize = 1;
  o.threads = 4;
  o.prefetchBatches = 2;
  // Per epoch, once the first batch is taken, workers may claim samples of batches < 1 + prefetch.
  const int64_t maxFetchesPerEpoch = (1 + o.prefetchBatches) * o.batchSize;
  std::vector<std::shared_ptr<CountingDataset>> datasets;
  std::vector<int64_t> fetchesWhenDestroyed;
  for (int k = 0; k < 3; ++k) {
    SCOPED_TRACE("loader " + std::to_string(k));
    auto ds = std::make_shared<CountingDataset>(openImageFolder(good_));
    auto sampler = makeRepeatedAugSampler(ds->size(), 0, 1, 0);
    auto loader = std::make_shared<Loader>(ds, sampler, transform(image::TransformKind::kFull), o);
    ASSERT_GT(loader->batchesPerEpoch(), maxFetchesPerEpoch);  // leaving early is early

    std::optional<bool> gotBatch = resultUnlessHung([loader] {
      loader->startEpoch(0);
      return loader->next().has_value();
    });
    ASSERT_TRUE(gotBatch.has_value()) << "startEpoch(0) + next() did not return";
    EXPECT_TRUE(*gotBatch);
    EXPECT_LE(ds->started(), maxFetchesPerEpoch);

    gotBatch = resultUnlessHung([loader] {
      loader->startEpoch(1);  // restart mid-epoch: joins epoch 0's workers first
      return loader->next().has_value();
    });
    ASSERT_TRUE(gotBatch.has_value()) << "restarting mid-epoch did not return";
    EXPECT_TRUE(*gotBatch);

    ASSERT_EQ(loader.use_count(), 1);  // so the step below runs the destructor
    const std::optional<bool> destroyed = resultUnlessHung([l = std::move(loader)]() mutable {
      l.reset();
      return true;
    });
    ASSERT_TRUE(destroyed.has_value()) << "~Loader() did not return";
    EXPECT_EQ(ds->running(), 0) << "a worker is still fetching after ~Loader()";
    EXPECT_GE(ds->started(), 2);  // one batch per epoch
    EXPECT_LE(ds->started(), 2 * maxFetchesPerEpoch);
    datasets.push_back(ds);
    fetchesWhenDestroyed.push_back(ds->started());
  }
  // Later loaders took a while: nothing fetched for the earlier ones meanwhile.
  for (size_t k = 0; k < datasets.size(); ++k) {
    EXPECT_EQ(datasets[k]->started(), fetchesWhenDestroyed[k]) << "loader " << k;
    EXPECT_EQ(datasets[k]->running(), 0) << "loader " << k;
  }
}

TEST_F(DataLoader, InvalidOptionsAreUsageErrors) {
  auto ds = openImageFolder(good_);
  auto sampler = makeDistributedSampler(ds->size(), 0, 1, false, 0, false);
  LoaderOptions o;
  o.batchSize = 0;
  EXPECT_THROW(Loader(ds, sampler, transform(image::TransformKind::kVal), o), UsageError);
  o.batchSize = 2;
  o.prefetchBatches = 0;
  EXPECT_THROW(Loader(ds, sampler, transform(image::TransformKind::kVal), o), UsageError);
  EXPECT_THROW(image::parseTransformKind("fancy"), UsageError);
}

}  // namespace
}  // namespace fixres::data

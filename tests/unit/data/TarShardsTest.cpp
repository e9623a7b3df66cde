// Tar shards against Python's tarfile and torch (tests/reference/tar_shards.py): the writer's
// files read back by tarfile, the reader on files tarfile wrote, the index against a header scan,
// corrupt archives; the shard sampler's order against torch.randperm and its properties.
#include "fixres/data/TarShards.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/common/Sha256.h"
#include "fixres/data/Sampler.h"
#include "fixres/data/ShardIndex.h"
#include "fixres/data/ShardWriter.h"
#include "fixres/data/TarScanner.h"

namespace fixres::data {
namespace {

namespace fs = std::filesystem;

std::string bytesOf(const RawSample& s) {
  return std::string(reinterpret_cast<const char*>(s.data()), s.size());
}

// An image folder of files the writer copies without decoding (it never decodes): two classes,
// nested folders, a name with dots, sizes from a few bytes to several blocks.
std::string makeFolder() {
  const std::string root = fixres::testing::makeTempDir("fixres_shardsrc_");
  const char* names[] = {"cat/a.jpg",      "cat/b.JPEG",      "cat/sub/c.png", "cat/x.y.z.jpg",
                         "dog/d.jpg",      "dog/e.png",       "dog/f.jpg",     "dog/g.jpg",
                         "dog/deep/h.jpg", "dog/deep/i.jpeg", "dog/j.png"};
  int k = 0;
  for (const char* n : names) {
    fs::create_directories(fs::path(root + "/" + n).parent_path());
    std::ofstream f(root + "/" + n, std::ios::binary);
    f << (std::string(n).find("png") != std::string::npos ? "\x89PNG" : "\xff\xd8");
    f << std::string(static_cast<size_t>(37 + 311 * k), static_cast<char>('a' + k));
    ++k;
  }
  return root;
}

// The key writeShards gives a folder sample: relative path, no extension, dots as '_'.
std::string expectedKey(const std::string& root, const std::string& path) {
  std::string rel = path.substr(root.size() + 1);
  rel = rel.substr(0, rel.rfind('.'));
  for (char& c : rel) {
    if (c == '.') c = '_';
  }
  return rel;
}

TEST(DataTarShards, WrittenShardsReadBackWithPythonTarfile) {
  const std::string src = makeFolder();
  const std::string out = fixres::testing::makeTempDir("fixres_shards_") + "/shards";
  auto folder = openImageFolder(src);
  const size_t n = folder->size();
  ShardWriteOptions o;
  o.outDir = out;
  o.shardBytes = 3000;
  o.seed = 7;
  const auto result = writeShards(*folder, o);
  EXPECT_EQ(result.samples, n);
  EXPECT_GE(result.shards, 3u);

  const auto perm = nlohmann::json::parse(
      fixres::testing::runReference("tar_shards.py", "randperm " + std::to_string(n) + " 7"))["7"];
  const auto tars =
      nlohmann::json::parse(fixres::testing::runReference("tar_shards.py", "read " + out));
  const auto index =
      shardIndexFromJson(fixres::testing::readText(out + "/" + kShardIndexName), "index");
  EXPECT_EQ(index.classes, folder->classes());
  ASSERT_EQ(tars.size(), result.shards);
  ASSERT_EQ(index.shards.size(), result.shards);
  size_t k = 0;  // position in the shuffled order
  for (size_t s = 0; s < tars.size(); ++s) {
    EXPECT_EQ(tars[s]["name"], index.shards[s].name);
    EXPECT_EQ(index.shards[s].bytes, fs::file_size(out + "/" + index.shards[s].name));
    const auto& members = tars[s]["members"];
    ASSERT_EQ(members.size(), 2 * index.shards[s].members.size());
    for (size_t m = 0; m < members.size(); m += 2, ++k) {
      ASSERT_LT(k, n);
      const size_t i = perm[k].get<size_t>();  // the folder sample stored k-th
      const std::string path = folder->name(i);
      const std::string key = expectedKey(src, path);
      const ShardMember& im = index.shards[s].members[m / 2];
      std::string ext = path.substr(path.rfind('.') + 1);
      std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
      EXPECT_EQ(members[m]["name"], key + "." + ext) << path;
      EXPECT_EQ(members[m]["sha256"], sha256File(path)) << path;
      EXPECT_EQ(members[m]["offset"].get<uint64_t>(), im.offset) << path;
      EXPECT_EQ(members[m]["size"].get<uint64_t>(), im.size) << path;
      EXPECT_TRUE(members[m]["format_ok"].get<bool>());
      EXPECT_EQ(members[m + 1]["name"], key + ".cls");
      EXPECT_EQ(members[m + 1]["text"], std::to_string(folder->label(i)));
      EXPECT_EQ(im.key, key);
      EXPECT_EQ(im.label, folder->label(i));
    }
  }
  EXPECT_EQ(k, n);

  // Read back as a dataset: the same bytes and labels under `<shard>:<key>` names.
  auto shards = openTarShards(out);
  ASSERT_EQ(shards->size(), n);
  EXPECT_EQ(shards->classes(), folder->classes());
  size_t first = 0;
  for (size_t s = 0; s < index.shards.size(); ++s) {
    EXPECT_EQ(shards->shardSizes()[s], index.shards[s].members.size());
    first += index.shards[s].members.size();
  }
  EXPECT_EQ(first, n);
  for (size_t j = 0; j < n; ++j) {
    const size_t i = perm[j].get<size_t>();
    EXPECT_EQ(bytesOf(shards->fetch(j)), bytesOf(folder->fetch(i))) << j;
    EXPECT_EQ(shards->label(j), folder->label(i));
    const std::string name = shards->name(j);
    EXPECT_NE(name.find(out + "/shard-"), std::string::npos) << name;
    EXPECT_EQ(name.substr(name.find(".tar:") + 5), expectedKey(src, folder->name(i)));
  }
  // The same seed writes the same bytes.
  o.outDir = out + "2";
  writeShards(*folder, o);
  for (const auto& s : index.shards)
    EXPECT_EQ(sha256File(out + "/" + s.name), sha256File(out + "2/" + s.name));
}

TEST(DataTarShards, ReadsShardsWrittenByPythonTarfile) {
  const std::string dir = fixres::testing::makeTempDir("fixres_pyshards_");
  const auto expected =
      nlohmann::json::parse(fixres::testing::runReference("tar_shards.py", "write " + dir));
  EXPECT_TRUE(isShardFolder(dir));
  auto ds = openTarShards(dir);  // no index: one scan of the headers
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"0", "1", "2", "3"}));
  std::vector<size_t> sizes;
  size_t j = 0;
  for (const auto& shard : expected) {
    sizes.push_back(shard["samples"].size());
    for (const auto& s : shard["samples"]) {
      const std::string name =
          dir + "/" + shard["name"].get<std::string>() + ":" + s["key"].get<std::string>();
      ASSERT_LT(j, ds->size());
      EXPECT_EQ(ds->name(j), name);
      if (s.contains("ext") && !s["label"].is_null()) {
        EXPECT_EQ(ds->label(j), s["label"].get<int64_t>()) << name;
        EXPECT_EQ(sha256Hex(bytesOf(ds->fetch(j))), s["sha256"]) << name;
      } else {
        try {  // a sample without image or label fails when read, naming shard and key
          ds->fetch(j);
          ADD_FAILURE() << name << " read";
        } catch (const DataError& e) {
          const std::string what = e.what();
          EXPECT_NE(what.find(name), std::string::npos) << what;
          EXPECT_NE(what.find(s.contains("ext") ? "label" : "no image"), std::string::npos) << what;
        }
      }
      ++j;
    }
  }
  EXPECT_EQ(j, ds->size());
  EXPECT_EQ(ds->shardSizes(), sizes);
  // The scanner's offsets are tarfile's offset_data (PAX long name included).
  const ShardInfo scanned = scanShard(dir + "/part-00.tar");
  for (size_t m = 0; m < scanned.members.size(); ++m) {
    const auto& s = expected[0]["samples"][m];
    if (s.contains("offset")) EXPECT_EQ(scanned.members[m].offset, s["offset"].get<uint64_t>());
  }
  // Unlabelled (calibrate): a missing .cls is no problem.
  auto unlabelled = openUnlabelledImages(dir);
  EXPECT_EQ(sha256Hex(bytesOf(unlabelled->fetch(3))), expected[0]["samples"][3]["sha256"]);
}

TEST(DataTarShards, IndexEqualsScanAndAStaleIndexIsNotUsed) {
  const std::string src = makeFolder();
  const std::string out = fixres::testing::makeTempDir("fixres_shards_") + "/s";
  auto folder = openImageFolder(src);
  ShardWriteOptions o;
  o.outDir = out;
  o.shardBytes = 2500;
  writeShards(*folder, o);
  auto indexed = openTarShards(out);
  fs::rename(out + "/" + kShardIndexName, out + "/../saved.json");
  EXPECT_TRUE(isShardFolder(out));
  auto scanned = openTarShards(out);
  EXPECT_EQ(scanned->classes(), (std::vector<std::string>{"0", "1"}));
  ASSERT_EQ(indexed->size(), scanned->size());
  EXPECT_EQ(indexed->shardSizes(), scanned->shardSizes());
  for (size_t i = 0; i < indexed->size(); ++i) {
    EXPECT_EQ(indexed->name(i), scanned->name(i));
    EXPECT_EQ(indexed->label(i), scanned->label(i));
    EXPECT_EQ(bytesOf(indexed->fetch(i)), bytesOf(scanned->fetch(i)));
  }
  // An index whose sizes no longer match is not trusted.
  fs::rename(out + "/../saved.json", out + "/" + kShardIndexName);
  { std::ofstream(out + "/shard-000000.tar", std::ios::app) << std::string(512, '\0'); }
  ::testing::internal::CaptureStderr();
  auto rescanned = openTarShards(out);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("index not used"), std::string::npos) << err;
  EXPECT_EQ(rescanned->classes(), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(rescanned->size(), indexed->size());
  // A malformed index is not trusted either, and says why.
  // Version 1 (JPEG and PNG members only) and a future version 3 are other versions; an index
  // made when other extensions were images (its image_listing stamp, or none) is stale.
  for (const std::string bad : {"{\"format\": \"fixres-shards\", \"version\": 2, \"shards\": [{",
                                "[1, 2]", "{\"format\": \"other\", \"version\": 2}",
                                "{\"format\": \"fixres-shards\", \"version\": 1}",
                                "{\"format\": \"fixres-shards\", \"version\": 3}",
                                "{\"format\": \"fixres-shards\", \"version\": 2, \"classes\": []}",
                                "{\"format\": \"fixres-shards\", \"version\": 2, "
                                "\"image_listing\": 12345, \"classes\": []}"}) {
    EXPECT_THROW(shardIndexFromJson(bad, "index"), DataError) << bad;
    std::ofstream(out + "/" + kShardIndexName, std::ios::trunc) << bad;
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(openTarShards(out)->size(), indexed->size());
    const std::string why = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(why.find("index not used"), std::string::npos) << why;
  }
  // Columns of different lengths, a member outside its shard.
  const ShardIndex good = shardIndexFromJson(
      shardIndexToJson({{"a"}, {{"s.tar", 2048, {{"k", 0, 512, 10, "jpg", ""}}}}}), "index");
  ASSERT_EQ(good.shards.size(), 1u);
  EXPECT_EQ(good.shards[0].members[0].key, "k");
  EXPECT_EQ(good.shards[0].members[0].offset, 512u);
  EXPECT_THROW(
      shardIndexFromJson(
          shardIndexToJson({{"a"}, {{"s.tar", 100, {{"k", 0, 512, 10, "jpg", ""}}}}}), "index"),
      DataError);
  std::string uneven = shardIndexToJson({{"a"}, {{"s.tar", 2048, {{"k", 0, 512, 10, "jpg", ""}}}}});
  uneven.replace(uneven.find("\"sizes\":[10]"), 12, "\"sizes\":[10,11]");
  EXPECT_THROW(shardIndexFromJson(uneven, "index"), DataError) << uneven;
  // A folder with a sub-folder holding images is an image folder, not shards.
  fs::create_directories(out + "/sub");
  std::ofstream(out + "/sub/x.jpg") << "\xff\xd8";
  EXPECT_FALSE(isShardFolder(out));
}

TEST(DataTarShards, CorruptArchivesAndBadOutputsAreRefused) {
  const std::string src = makeFolder();
  const std::string base = fixres::testing::makeTempDir("fixres_shards_");
  auto folder = openImageFolder(src);
  ShardWriteOptions o;
  o.outDir = base + "/s";
  o.shardBytes = 1;  // one sample per shard
  EXPECT_EQ(writeShards(*folder, o).shards, folder->size());
  fs::remove(o.outDir + "/" + kShardIndexName);
  const std::string shard = o.outDir + "/shard-000001.tar";
  const auto expectError = [&](const std::string& part) {
    try {
      openTarShards(o.outDir);
      ADD_FAILURE() << "accepted";
    } catch (const DataError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("shard-000001.tar"), std::string::npos) << what;
      EXPECT_NE(what.find(part), std::string::npos) << what;
    }
  };
  const std::string saved = fixres::testing::readText(shard);
  {
    std::string bad = saved;
    bad[0] ^= 0x20;  // the first member's name: the checksum no longer matches
    std::ofstream(shard, std::ios::binary | std::ios::trunc) << bad;
  }
  expectError("corrupt tar header at byte 0");
  std::ofstream(shard, std::ios::binary | std::ios::trunc) << saved.substr(0, 700);
  expectError("truncated");
  // --out must be a new or empty folder.
  EXPECT_THROW(writeShards(*folder, o), UsageError);
  std::ofstream(base + "/file") << "x";
  o.outDir = base + "/file";
  EXPECT_THROW(writeShards(*folder, o), UsageError);
}

// A dataset whose sample `failAt` cannot be read (the others are `base`'s).
class FailingDataset : public Dataset {
 public:
  FailingDataset(std::shared_ptr<Dataset> base, size_t failAt) : base_(base), failAt_(failAt) {}
  size_t size() const override { return base_->size(); }
  int64_t label(size_t i) const override { return base_->label(i); }
  const std::vector<std::string>& classes() const override { return base_->classes(); }
  std::string name(size_t i) const override { return base_->name(i); }
  RawSample fetch(size_t i) const override {
    FIXRES_CHECK(i != failAt_, DataError, name(i), ": unreadable");
    return base_->fetch(i);
  }
  std::string source() const override { return base_->source(); }

 private:
  std::shared_ptr<Dataset> base_;
  size_t failAt_;
};

TEST(DataTarShards, AFailedWriteLeavesNothing) {
  const std::string src = makeFolder();
  const std::string base = fixres::testing::makeTempDir("fixres_shards_");
  auto folder = openImageFolder(src);
  // The last sample in the shuffled order fails: the earlier shards are written by then.
  const auto perm =
      nlohmann::json::parse(fixres::testing::runReference("tar_shards.py", "randperm 11 0"))["0"];
  FailingDataset failing(folder, perm[10].get<size_t>());
  ShardWriteOptions o;
  o.shardBytes = 1;
  o.outDir = base + "/new/shards";  // created by the call: removed again
  EXPECT_THROW(writeShards(failing, o), DataError);
  EXPECT_FALSE(fs::exists(o.outDir));
  o.outDir = base + "/empty";  // existing and empty: left empty
  fs::create_directories(o.outDir);
  EXPECT_THROW(writeShards(failing, o), DataError);
  EXPECT_TRUE(fs::exists(o.outDir));
  EXPECT_TRUE(fs::is_empty(o.outDir));
  // A successful write leaves the shards and the index, and no hidden folder.
  EXPECT_EQ(writeShards(*folder, o).shards, 11u);
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(o.outDir)) {
    EXPECT_NE(e.path().filename().string()[0], '.') << e.path();
    ++entries;
  }
  EXPECT_EQ(entries, 12u);
}

// ---- sampler ---------------------------------------------------------------------------------

std::vector<std::vector<int64_t>> ranksOf(const std::vector<size_t>& sizes, int world,
                                          uint64_t seed, int64_t epoch, size_t buffer) {
  std::vector<std::vector<int64_t>> out;
  for (int r = 0; r < world; ++r) {
    auto s = makeShardSampler(sizes, r, world, seed, buffer);
    s->setEpoch(epoch);
    out.push_back(s->indices());
    EXPECT_EQ(s->size(), out.back().size());
  }
  return out;
}

TEST(DataShardSampler, ShardOrderIsTorchRandpermSeededByEpoch) {
  // Buffer 1: the stream is the shards themselves, whole, in order, so the order shows.
  const std::vector<size_t> sizes = {3, 2, 4, 1, 2};
  std::vector<size_t> begin = {0};
  for (size_t s : sizes) begin.push_back(begin.back() + s);
  const auto perms =
      nlohmann::json::parse(fixres::testing::runReference("tar_shards.py", "randperm 5 11 12"));
  for (int64_t epoch : {0, 1}) {
    const auto perm = perms[std::to_string(11 + epoch)].get<std::vector<size_t>>();
    for (int world : {1, 2}) {
      const auto ranks = ranksOf(sizes, world, 11, epoch, 1);
      for (int r = 0; r < world; ++r) {
        std::vector<int64_t> expected;
        for (size_t p = static_cast<size_t>(r); p < 6; p += static_cast<size_t>(world)) {
          if (p >= 5) break;  // world 2 pads 5 shards to 6: the head, perm[0], again
          for (size_t i = begin[perm[p]]; i < begin[perm[p] + 1]; ++i)
            expected.push_back(static_cast<int64_t>(i));
        }
        if (world == 2 && r == 1) {
          for (size_t i = begin[perm[0]]; i < begin[perm[0] + 1]; ++i)
            expected.push_back(static_cast<int64_t>(i));
        }
        // Shorter ranks wrap around to their own start up to the longest rank's count.
        size_t longest = 0;
        for (const auto& x : ranks) longest = std::max(longest, x.size());
        const size_t own = expected.size();
        for (size_t j = own; j < longest; ++j) expected.push_back(expected[j - own]);
        EXPECT_EQ(ranks[static_cast<size_t>(r)], expected) << "epoch " << epoch << " rank " << r;
      }
    }
  }
}

TEST(DataShardSampler, EqualStepsAndEverySampleOnSomeRank) {
  const std::vector<size_t> sizes = {5, 3, 7, 1, 0, 4, 9};
  const size_t total = 29, buffer = 3;
  for (int world : {1, 2, 3, 4}) {
    for (int64_t epoch : {0, 1, 2}) {
      const auto ranks = ranksOf(sizes, world, 3, epoch, buffer);
      std::set<int64_t> seen;
      std::set<int64_t> positions;
      for (int r = 0; r < world; ++r) {
        const auto& idx = ranks[static_cast<size_t>(r)];
        EXPECT_EQ(idx.size(), ranks[0].size()) << "world " << world;  // equal step counts
        seen.insert(idx.begin(), idx.end());
        auto s = makeShardSampler(sizes, r, world, 3, buffer);
        s->setEpoch(epoch);
        for (int64_t p : s->streamPositions()) EXPECT_TRUE(positions.insert(p).second) << p;
      }
      EXPECT_EQ(seen.size(), total) << "world " << world << " epoch " << epoch;
      EXPECT_EQ(*seen.begin(), 0);
      EXPECT_EQ(*seen.rbegin(), static_cast<int64_t>(total - 1));
    }
  }
  // Pure function of (seed, epoch, rank): the same twice, another epoch another order.
  EXPECT_EQ(ranksOf(sizes, 2, 3, 1, buffer), ranksOf(sizes, 2, 3, 1, buffer));
  EXPECT_NE(ranksOf(sizes, 2, 3, 1, buffer), ranksOf(sizes, 2, 3, 2, buffer));
  EXPECT_NE(ranksOf(sizes, 2, 3, 1, buffer), ranksOf(sizes, 2, 4, 1, buffer));
}

TEST(DataShardSampler, ShuffleBufferIsWebDatasetsAndBounded) {
  // One shard of 50 and a buffer of 8: a permutation of the shard whose j-th output was read at
  // most at input position j + 7, and which is not the identity.
  for (int64_t epoch : {0, 1, 2}) {
    auto s = makeShardSampler({50}, 0, 1, 9, 8);
    s->setEpoch(epoch);
    const auto idx = s->indices();
    ASSERT_EQ(idx.size(), 50u);
    std::vector<int64_t> sorted = idx;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(sorted[static_cast<size_t>(i)], i);
    for (size_t j = 0; j < idx.size(); ++j) EXPECT_LE(idx[j], static_cast<int64_t>(j) + 7) << j;
    bool identity = true;
    for (size_t j = 0; j < idx.size(); ++j) identity = identity && idx[j] == int64_t(j);
    EXPECT_FALSE(identity);
  }
  // Every sample exactly once across ranks when the shards split evenly.
  const auto ranks = ranksOf({4, 4, 4, 4, 4, 4}, 3, 5, 0, 5);
  std::vector<int> count(24, 0);
  for (const auto& r : ranks) {
    EXPECT_EQ(r.size(), 8u);
    for (int64_t i : r) ++count[static_cast<size_t>(i)];
  }
  for (int c : count) EXPECT_EQ(c, 1);
  EXPECT_THROW(makeShardSampler({0, 0}, 0, 1, 0), DataError);
  EXPECT_THROW(makeShardSampler({3}, 0, 1, 0, 0), UsageError);
  EXPECT_THROW(makeShardSampler({3}, 2, 2, 0), UsageError);
}

}  // namespace
}  // namespace fixres::data

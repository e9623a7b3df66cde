// Tar shards as untrusted input and `fixres shard` after a crash: a `.cls` holding a huge label is
// a bad sample (at most kMaxShardLabel + 1 classes are ever named), never a loop over a trillion
// class names; the working folder of a writer killed with SIGKILL is recognised by its free lock
// and removed by the next run (a live writer's is refused, a folder that is not fixres's named);
// readers never take a working folder or a folder without images (lost+found) for a class.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/common/FolderLock.h"
#include "fixres/data/DatasetReader.h"
#include "fixres/data/ShardIndex.h"
#include "fixres/data/ShardWriter.h"
#include "fixres/data/TarCodec.h"
#include "fixres/data/TarScanner.h"
#include "fixres/data/TarShards.h"

namespace fixres::data::shard_safety_test {
namespace {

namespace fs = std::filesystem;

// A ustar file of members (name, bytes), as POSIX lays them out: header, data padded to 512 bytes,
// two zero blocks at the end.
void writeTar(const std::string& path, const std::vector<std::pair<std::string, std::string>>& m) {
  std::string out;
  for (const auto& [name, data] : m) {
    const auto h = ustarHeader(name, data.size());
    out.append(h.data(), kTarBlock);
    out += data;
    out.append(tarPadded(data.size()) - data.size(), '\0');
  }
  out.append(2 * kTarBlock, '\0');
  std::ofstream(path, std::ios::binary) << out;
}

// An image folder of two classes, files the writer copies without decoding.
std::string makeFolder() {
  const std::string root = fixres::testing::makeTempDir("fixres_shardsafety_src_");
  for (const char* n : {"a/1.jpg", "a/2.jpg", "b/3.jpg"}) {
    fs::create_directories(fs::path(root + "/" + n).parent_path());
    std::ofstream(root + "/" + n, std::ios::binary) << "\xff\xd8 bytes of " << n;
  }
  return root;
}

TEST(DataShardSafety, AHugeClsLabelIsABadSampleNotAMillionClassNames) {
  const std::string dir = fixres::testing::makeTempDir("fixres_shardsafety_cls_");
  const std::string jpg = "\xff\xd8 image";
  writeTar(dir + "/shard-000000.tar", {{"k0.jpg", jpg},
                                       {"k0.cls", "1"},
                                       {"top.jpg", jpg},
                                       {"top.cls", "999999"},
                                       {"big.jpg", jpg},
                                       {"big.cls", "999999999999"}});
  const ShardInfo info = scanShard(dir + "/shard-000000.tar");
  ASSERT_EQ(info.members.size(), 3u);
  EXPECT_EQ(info.members[1].label, kMaxShardLabel);
  EXPECT_TRUE(info.members[1].problem.empty()) << info.members[1].problem;
  ASSERT_EQ(info.members[2].label, -1);
  ASSERT_NE(info.members[2].problem.find("999999999999"), std::string::npos);
  // Without the sample at the largest index the classes are "0", "1"; the bad sample fails on
  // fetch, naming the shard and its key (eval, extract, and shard, which fetches every sample).
  writeTar(dir + "/shard-000000.tar",
           {{"k0.jpg", jpg}, {"k0.cls", "1"}, {"big.jpg", jpg}, {"big.cls", "999999999999"}});
  auto ds = openTarShards(dir);
  EXPECT_EQ(ds->classes(), (std::vector<std::string>{"0", "1"}));
  ASSERT_EQ(ds->size(), 2u);
  EXPECT_EQ(ds->fetch(0).size(), jpg.size());
  try {
    ds->fetch(1);
    ADD_FAILURE() << "fetched";
  } catch (const DataError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(dir + "/shard-000000.tar:big"), std::string::npos) << what;
    EXPECT_NE(what.find(".cls holds 999999999999"), std::string::npos) << what;
  }
  // Unlabelled (calibrate): labels are not read into classes at all.
  auto unlabelled = openUnlabelledImages(dir);
  EXPECT_EQ(unlabelled->classes(), (std::vector<std::string>{""}));
  EXPECT_EQ(unlabelled->fetch(1).size(), jpg.size());
}

TEST(DataShardSafety, AKilledWritersWorkingFolderIsRemovedByTheNextRun) {
  auto folder = openImageFolder(makeFolder());
  const std::string out = fixres::testing::makeTempDir("fixres_shardsafety_out_");
  // What a writer killed with SIGKILL leaves: its working folder, the lock file (free: the
  // kernel released it), a temporary shard.
  const std::string stale = out + "/.partial-Ab12Cd";
  { FolderLock dead(stale); }
  std::ofstream(stale + "/.shard-000000.tar.tmp-0123456789abcdef") << "half a shard";
  ShardWriteOptions o;
  o.outDir = out;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(writeShards(*folder, o).samples, 3u);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("removing " + stale), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_EQ(openTarShards(out)->size(), 3u);

  // A live writer's working folder (its lock held) is refused, named, and left alone.
  const std::string out2 = fixres::testing::makeTempDir("fixres_shardsafety_out2_");
  const std::string live = out2 + "/.partial-Zz9999";
  FolderLock holder(live);
  o.outDir = out2;
  try {
    writeShards(*folder, o);
    ADD_FAILURE() << "wrote into a folder another writer holds";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("is writing into " + live), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::exists(live + "/.lock"));
  // A folder named like one but without the lock file is not fixres's: named, not removed.
  const std::string out3 = fixres::testing::makeTempDir("fixres_shardsafety_out3_");
  fs::create_directories(out3 + "/.partial-user01");
  o.outDir = out3;
  try {
    writeShards(*folder, o);
    ADD_FAILURE() << "wrote into a folder that is not empty";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(out3 + " is not empty: it holds .partial-user01"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(fs::exists(out3 + "/.partial-user01"));
}

TEST(DataShardSafety, WorkingFoldersAndFoldersWithoutImagesAreNoClasses) {
  auto folder = openImageFolder(makeFolder());
  const std::string out = fixres::testing::makeTempDir("fixres_shardsafety_read_") + "/s";
  ShardWriteOptions o;
  o.outDir = out;
  o.shardBytes = 1;
  writeShards(*folder, o);
  // lost+found (empty, or holding no image) and a working folder beside the shards.
  fs::create_directories(out + "/lost+found/#1234");
  std::ofstream(out + "/lost+found/#1234/notes.txt") << "x";
  fs::create_directories(out + "/.partial-Ab12Cd");
  std::ofstream(out + "/.partial-Ab12Cd/x.jpg") << "\xff\xd8";
  EXPECT_TRUE(isShardFolder(out));
  EXPECT_EQ(readerFor(out).name(), "shard folder");
  EXPECT_EQ(openDataset(out)->size(), 3u);
  // An image folder never takes a working folder for a class.
  const std::string images = fixres::testing::makeTempDir("fixres_shardsafety_img_");
  fs::copy(folder->source(), images, fs::copy_options::recursive);
  fs::create_directories(images + "/.partial-Xy34Zw");
  std::ofstream(images + "/.partial-Xy34Zw/.shard-000000.tar.tmp-0123456789abcdef") << "x";
  EXPECT_EQ(openDataset(images)->classes(), (std::vector<std::string>{"a", "b"}));
  // Tar files beside class folders with images: an image folder, and an error says the tar files
  // were not read.
  for (const auto& e : fs::directory_iterator(out)) {
    if (e.path().extension() == ".tar")
      fs::copy_file(e.path(), fs::path(images) / e.path().filename());
  }
  fs::create_directories(images + "/lost+found");
  EXPECT_FALSE(isShardFolder(images));
  try {
    openDataset(images);
    ADD_FAILURE() << "read";
  } catch (const DataError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("found no valid file for the classes lost+found"), std::string::npos)
        << what;
    EXPECT_NE(what.find("its 3 .tar file(s) are not read"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace fixres::data::shard_safety_test

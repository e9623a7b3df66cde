// Whole-file reads through one helper (common/Files.h): a FIFO, a folder or a file above the
// caller's bound is refused at once, without blocking, with one line naming the file; and every
// reader of small files (.npy, metrics.jsonl for resume and plot, shards.json, CSV lists) goes
// through it. A reader that would block is unblocked by the test (a writer opens the FIFO), so a
// regression fails instead of hanging.
#include "fixres/common/Files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/data/Dataset.h"
#include "fixres/data/Npy.h"
#include "fixres/data/ShardIndex.h"
#include "fixres/data/ShardWriter.h"
#include "fixres/data/TarShards.h"
#include "fixres/engine/MetricsLog.h"
#include "fixres/engine/RunCurves.h"

namespace fixres::read_regular_file_test {
namespace {

namespace fs = std::filesystem;

std::string makeFifo(const std::string& path) {
  fs::remove(path);
  EXPECT_EQ(::mkfifo(path.c_str(), 0644), 0) << path;
  return path;
}

// Runs `read` (which must not wait on the FIFO at `fifo`) with a 10 s watchdog: when it is still
// waiting by then, the test opens the FIFO for writing (the reader sees an empty file and
// returns) and fails.
void expectNoBlock(const std::string& fifo, const std::function<void()>& read) {
  auto done = std::async(std::launch::async, read);
  if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "blocked on the FIFO " << fifo;
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  done.get();
}

// `call` throws ErrorType with a message naming `path` and holding `part`.
template <typename ErrorType>
void expectError(const std::function<void()>& call, const std::string& path,
                 const std::string& part) {
  try {
    call();
    ADD_FAILURE() << "accepted " << path;
  } catch (const ErrorType& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find(part), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(ReadRegularFile, RefusesFifosFoldersAndFilesAboveTheBound) {
  const std::string dir = testing::makeTempDir("fixres_readfile_");
  const std::string file = dir + "/f.txt";
  std::ofstream(file) << "hello";
  EXPECT_EQ(readRegularFile<DataError>(file, 5, "note"), "hello");
  expectError<OutputError>([&] { readRegularFile<OutputError>(file, 4, "note"); }, file,
                           "5 bytes, more than the 4 a note may have");
  expectError<DataError>([&] { readRegularFile<DataError>(dir, 100, "note"); }, dir, "a folder");
  expectError<DataError>([&] { readRegularFile<DataError>(dir + "/none", 100, "note"); },
                         dir + "/none", "No such file");
  const std::string fifo = makeFifo(dir + "/pipe");
  expectNoBlock(fifo, [&] {
    expectError<DataError>([&] { readRegularFile<DataError>(fifo, 100, "note"); }, fifo,
                           "cannot read note " + fifo + ": a FIFO, not a regular file");
  });
  // A sparse file far above the bound costs nothing to refuse.
  const std::string sparse = dir + "/sparse";
  std::ofstream(sparse).close();
  fs::resize_file(sparse, uint64_t(30) << 30);
  expectError<DataError>([&] { (void)readFile(sparse); }, sparse, "32212254720 bytes");
}

TEST(ReadRegularFile, SmallFileReadersRefuseFifosWithoutBlocking) {
  const std::string dir = testing::makeTempDir("fixres_readers_");
  const std::string npy = makeFifo(dir + "/labels.npy");
  expectNoBlock(npy, [&] {
    expectError<DataError>([&] { data::readNpy(npy); }, npy, "a FIFO, not a regular file");
  });
  const std::string metrics = makeFifo(dir + "/metrics.jsonl");
  expectNoBlock(metrics, [&] {
    expectError<DataError>([&] { engine::readRunCurves(metrics); }, metrics, "a FIFO");
  });
  expectNoBlock(metrics, [&] {
    expectError<DataError>(
        [&] {
          engine::MetricsLog log(metrics, engine::MetricsLog::Position{1, 0});
        },
        metrics, "a FIFO");
  });
  const std::string csv = makeFifo(dir + "/list.csv");
  expectNoBlock(csv, [&] { EXPECT_THROW(data::openDataset(csv), DataError); });
}

TEST(ReadRegularFile, AShardIndexThatIsAFifoOrTooLargeIsNotUsed) {
  const std::string src = testing::makeTempDir("fixres_readers_src_");
  for (const char* n : {"a/x.jpg", "b/y.jpg"}) {
    fs::create_directories(fs::path(src + "/" + n).parent_path());
    std::ofstream(src + "/" + n, std::ios::binary) << "\xff\xd8 not decoded";
  }
  const std::string out = testing::makeTempDir("fixres_readers_shards_") + "/s";
  data::ShardWriteOptions o;
  o.outDir = out;
  data::writeShards(*data::openImageFolder(src), o);
  const std::string index = out + "/" + data::kShardIndexName;
  makeFifo(index);
  expectNoBlock(index, [&] {
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(data::openTarShards(out)->size(), 2u);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("index not used (cannot read shard index " + index + ": a FIFO"),
              std::string::npos)
        << err;
  });
  fs::remove(index);
  std::ofstream(index).close();
  fs::resize_file(index, data::kShardIndexMaxBytes + 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(data::openTarShards(out)->size(), 2u);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find(index + ": 1073741825 bytes, more than the 1073741824"), std::string::npos)
      << err;
}

}  // namespace
}  // namespace fixres::read_regular_file_test

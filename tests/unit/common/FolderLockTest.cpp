// A folder is locked by one holder at a time, whatever path reaches it; the lock goes with its
// holder (destruction, death); stale temporaries are removed only while the lock is held.
#include "fixres/common/FolderLock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "../Reference.h"
#include "fixres/common/AtomicFile.h"
#include "fixres/common/Error.h"

namespace fixres {
namespace {

namespace fs = std::filesystem;
using fixres::testing::makeTempDir;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void touch(const std::string& path, const std::string& text = "x") {
  std::ofstream(path) << text;
}

// The message of the UsageError that locking `folder` must raise ("" when none).
std::string lockConflict(const std::string& folder) {
  try {
    FolderLock second(folder);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(FolderLock, CreatesTheFolderAndWritesTheHolderPid) {
  const std::string run = makeTempDir("fixres_lock_") + "/runs/train/job";
  FolderLock lock(run);
  EXPECT_TRUE(lock.held());
  EXPECT_TRUE(fs::is_directory(run));
  EXPECT_EQ(slurp(run + "/.lock"), lockHolderText() + "\n");
  EXPECT_EQ(readLockHolder(run), lockHolderText());
  EXPECT_EQ(lockHolderText().rfind(std::to_string(::getpid()) + " ", 0), 0u);
}

TEST(FolderLock, ASecondLockIsAUsageErrorNamingTheHolderPid) {
  const std::string run = makeTempDir("fixres_lock_") + "/run";
  FolderLock lock(run);
  const std::string message = lockConflict(run);
  EXPECT_NE(message.find("in use by another run"), std::string::npos) << message;
  EXPECT_NE(message.find("pid " + std::to_string(::getpid())), std::string::npos) << message;
  EXPECT_NE(message.find(run), std::string::npos) << message;
  EXPECT_FALSE(FolderLock::tryLock(run));
  std::string holder;
  EXPECT_FALSE(FolderLock::tryLock(run, &holder));
  EXPECT_EQ(holder, lockHolderText());
}

TEST(FolderLock, HoldsWhateverPathReachesTheFolder) {
  const std::string root = makeTempDir("fixres_lock_");
  FolderLock lock(root + "/shared/train/job");
  fs::create_symlink(root + "/shared", root + "/link");
  EXPECT_NE(lockConflict(root + "/link/train/job"), "");
  EXPECT_NE(lockConflict(root + "/shared/./train/../train/job/"), "");
  const auto cwd = fs::current_path();
  fs::current_path(root + "/shared");
  const std::string relative = lockConflict("train/job");
  fs::current_path(cwd);
  EXPECT_NE(relative, "");
  // Another folder beside it is free (train and finetune of one job id).
  FolderLock other(root + "/shared/finetune/job");
  EXPECT_TRUE(other.held());
}

TEST(FolderLock, IsReleasedWithItsHolder) {
  const std::string run = makeTempDir("fixres_lock_") + "/run";
  { FolderLock lock(run); }
  FolderLock again(run);
  EXPECT_TRUE(again.held());
  // Moved, it is still held, once; destroyed, it is free.
  {
    FolderLock moved(std::move(again));
    EXPECT_TRUE(moved.held());
    EXPECT_FALSE(again.held());
    EXPECT_FALSE(FolderLock::tryLock(run));
  }
  EXPECT_TRUE(FolderLock::tryLock(run));
}

TEST(FolderLock, TheKernelReleasesTheLockOfAKilledProcess) {
  const std::string run = makeTempDir("fixres_lock_") + "/run";
  fs::create_directories(run);
  const std::string lockPath = run + "/.lock";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Only async-signal-safe calls: the parent has threads.
    const int fd = ::open(lockPath.c_str(), O_RDWR | O_CREAT, 0666);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(1);
    (void)!::write(ready[1], "1", 1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  EXPECT_NE(lockConflict(run), "");
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  FolderLock lock(run);  // no stale lock after a crash
  EXPECT_TRUE(lock.held());
  EXPECT_EQ(readLockHolder(run), lockHolderText());
}

TEST(FolderLock, RefusesALockFileThatIsNotARegularFile) {
  const std::string root = makeTempDir("fixres_lock_");
  fs::create_directories(root + "/a");
  touch(root + "/target", "keep");
  fs::create_symlink(root + "/target", root + "/a/.lock");
  EXPECT_THROW(FolderLock{root + "/a"}, DataError);
  EXPECT_EQ(slurp(root + "/target"), "keep");
  fs::create_directories(root + "/b/.lock");
  EXPECT_THROW(FolderLock{root + "/b"}, DataError);
}

TEST(FolderLock, TemporaryNamesAreThoseOfAtomicFile) {
  const std::string dir = makeTempDir("fixres_lock_");
  AtomicFile file(dir + "/checkpoint.pth");
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE(isAtomicTemporaryName(fs::path(file.tempPath()).filename().string()))
      << file.tempPath();
  EXPECT_TRUE(isAtomicTemporaryName(".config.json.tmp-0123456789abcdef"));
  EXPECT_TRUE(isAtomicTemporaryName(".a.tmp-ABCDEF0123456789"));
  EXPECT_FALSE(isAtomicTemporaryName("checkpoint.pth.tmp-0123456789abcdef"));
  EXPECT_FALSE(isAtomicTemporaryName(".checkpoint.pth.tmp-0123456789abcde"));
  EXPECT_FALSE(isAtomicTemporaryName(".checkpoint.pth.tmp-0123456789abcdeg"));
  EXPECT_FALSE(isAtomicTemporaryName(".tmp-0123456789abcdef"));
  EXPECT_FALSE(isAtomicTemporaryName(".notes.tmp-x"));
  EXPECT_FALSE(isAtomicTemporaryName(".lock"));
}

TEST(FolderLock, RemovesStaleTemporariesOnlyWhileHeld) {
  const std::string run = makeTempDir("fixres_lock_") + "/run";
  fs::create_directories(run + "/sub");
  fs::create_directories(run + "/.d.tmp-0123456789abcdef");
  const std::string target = run + "/../outside";
  touch(target);
  for (const char* name :
       {"/.checkpoint.pth.tmp-0123456789abcdef", "/.config.json.tmp-fedcba9876543210",
        "/checkpoint.pth", "/.notes.tmp-x", "/sub/.checkpoint.pth.tmp-0123456789abcdef"})
    touch(run + name);
  fs::create_symlink(target, run + "/.link.tmp-0123456789abcdef");

  std::string holder;
  auto lock = FolderLock::tryLock(run, &holder);
  ASSERT_TRUE(lock && lock->held());
  EXPECT_EQ(lock->removeStaleTemporaries(), 2);
  EXPECT_FALSE(fs::exists(run + "/.checkpoint.pth.tmp-0123456789abcdef"));
  EXPECT_FALSE(fs::exists(run + "/.config.json.tmp-fedcba9876543210"));
  for (const char* kept :
       {"/checkpoint.pth", "/.notes.tmp-x", "/sub/.checkpoint.pth.tmp-0123456789abcdef",
        "/.d.tmp-0123456789abcdef", "/.link.tmp-0123456789abcdef", "/.lock"})
    EXPECT_TRUE(fs::exists(fs::symlink_status(run + kept))) << kept;
  EXPECT_TRUE(fs::exists(target));

  // A lock that is not held (moved from) removes nothing.
  FolderLock moved(std::move(*lock));
  touch(run + "/.checkpoint.pth.tmp-0123456789abcdef");
  EXPECT_EQ(lock->removeStaleTemporaries(), 0);
  EXPECT_TRUE(fs::exists(run + "/.checkpoint.pth.tmp-0123456789abcdef"));
  EXPECT_EQ(moved.removeStaleTemporaries(), 1);
}

}  // namespace
}  // namespace fixres

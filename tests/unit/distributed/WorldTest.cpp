// World discovery: each source (flags, torchrun, SLURM, Open MPI), precedence, and the
// inconsistencies that must be usage errors (exit code 2).
#include "fixres/distributed/World.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixres/common/Error.h"

namespace fixres::distributed {
namespace {

TEST(World, SingleProcessWhenNothingIsSet) {
  auto w = detectWorld({}, {});
  EXPECT_EQ(w.source, "single");
  EXPECT_EQ(w.rank, 0);
  EXPECT_EQ(w.worldSize, 1);
  EXPECT_EQ(w.store, StoreKind::kNone);
  EXPECT_FALSE(w.distributed());
}

TEST(World, FixresFlagsWithSharedFolderMeetInAFileNamedAfterTheJob) {
  ClusterFlags f;
  f.numTasks = 4;
  f.globalRank = 3;
  f.localRank = 1;
  f.jobId = "job42";
  f.sharedFolderPath = "/shared";
  auto w = detectWorld(f, {});
  EXPECT_EQ(w.source, "flags");
  EXPECT_EQ(w.rank, 3);
  EXPECT_EQ(w.worldSize, 4);
  EXPECT_EQ(w.localRank, 1);
  EXPECT_EQ(w.store, StoreKind::kFile);
  // Every rank derives the same name (the reference drew a random one per process).
  EXPECT_EQ(w.storePath, "/shared/fixres_rendezvous_job42");
}

TEST(World, LaunchOnOneNodeUsesItsPrivateFileStoreAndLoopback) {
  Environment env{{"RANK", "1"},
                  {"WORLD_SIZE", "2"},
                  {"LOCAL_RANK", "1"},
                  {"MASTER_ADDR", "127.0.0.1"},
                  {"MASTER_PORT", "29500"},
                  {"FIXRES_LOCAL_STORE", "/tmp/fixres-launch-abc/store"}};
  auto w = detectWorld({}, env);
  EXPECT_EQ(w.source, "torchrun");
  EXPECT_EQ(w.store, StoreKind::kFile);
  EXPECT_EQ(w.storePath, "/tmp/fixres-launch-abc/store");
  EXPECT_TRUE(w.loopback);
  // An explicit --dist-url still wins.
  ClusterFlags f;
  f.distUrl = "tcp://10.0.0.5:23456";
  auto w2 = detectWorld(f, env);
  EXPECT_EQ(w2.store, StoreKind::kTcp);
  EXPECT_FALSE(w2.loopback);
}

TEST(World, DistUrlTcp) {
  ClusterFlags f;
  f.numTasks = 2;
  f.globalRank = 0;
  f.distUrl = "tcp://10.0.0.5:23456";
  auto w = detectWorld(f, {});
  EXPECT_EQ(w.store, StoreKind::kTcp);
  EXPECT_EQ(w.masterAddr, "10.0.0.5");
  EXPECT_EQ(w.masterPort, 23456);
}

TEST(World, TorchrunEnvironment) {
  Environment env{{"RANK", "5"},
                  {"WORLD_SIZE", "8"},
                  {"LOCAL_RANK", "1"},
                  {"LOCAL_WORLD_SIZE", "4"},
                  {"MASTER_ADDR", "node0"},
                  {"MASTER_PORT", "29501"}};
  auto w = detectWorld({}, env);
  EXPECT_EQ(w.source, "torchrun");
  EXPECT_EQ(w.rank, 5);
  EXPECT_EQ(w.worldSize, 8);
  EXPECT_EQ(w.localRank, 1);
  EXPECT_EQ(w.localWorldSize, 4);
  EXPECT_EQ(w.store, StoreKind::kTcp);
  EXPECT_EQ(w.masterAddr, "node0");
  EXPECT_EQ(w.masterPort, 29501);
}

TEST(World, SlurmEnvironmentFindsTheMasterInTheNodeList) {
  Environment env{{"SLURM_PROCID", "2"},
                  {"SLURM_NTASKS", "16"},
                  {"SLURM_LOCALID", "2"},
                  {"SLURM_JOB_ID", "777"},
                  {"SLURM_JOB_NODELIST", "gpu[012-015,020],cpu1"}};
  auto w = detectWorld({}, env);
  EXPECT_EQ(w.source, "slurm");
  EXPECT_EQ(w.rank, 2);
  EXPECT_EQ(w.worldSize, 16);
  EXPECT_EQ(w.localRank, 2);
  EXPECT_EQ(w.jobId, "777");
  EXPECT_EQ(w.store, StoreKind::kTcp);
  EXPECT_EQ(w.masterAddr, "gpu012");
  EXPECT_EQ(w.masterPort, portForJob("777"));
}

TEST(World, SlurmNodeListForms) {
  EXPECT_EQ(firstSlurmHost("node7"), "node7");
  EXPECT_EQ(firstSlurmHost("a1,a2"), "a1");
  EXPECT_EQ(firstSlurmHost("n[3,5-9]"), "n3");
  EXPECT_EQ(firstSlurmHost("gpu-a[07-09]"), "gpu-a07");
}

TEST(World, OpenMpiEnvironment) {
  Environment env{{"OMPI_COMM_WORLD_RANK", "1"},
                  {"OMPI_COMM_WORLD_SIZE", "3"},
                  {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                  {"MASTER_ADDR", "127.0.0.1"},
                  {"MASTER_PORT", "1234"}};
  auto w = detectWorld({}, env);
  EXPECT_EQ(w.source, "mpi");
  EXPECT_EQ(w.rank, 1);
  EXPECT_EQ(w.worldSize, 3);
  EXPECT_EQ(w.masterPort, 1234);
}

TEST(World, TorchrunTakesPrecedenceOverSlurm) {
  Environment env{{"RANK", "1"},         {"WORLD_SIZE", "2"},   {"MASTER_ADDR", "h"},
                  {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_JOB_ID", "9"}};
  auto w = detectWorld({}, env);
  EXPECT_EQ(w.source, "torchrun");
  EXPECT_EQ(w.rank, 1);
}

TEST(World, InconsistenciesAreUsageErrors) {
  ClusterFlags f;
  f.numTasks = 2;
  f.globalRank = 2;  // rank >= world size
  f.distUrl = "tcp://127.0.0.1:1";
  EXPECT_THROW(detectWorld(f, {}), UsageError);

  ClusterFlags g;
  g.numTasks = 4;  // flags contradict the launcher's environment
  EXPECT_THROW(detectWorld(g, {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}),
               UsageError);

  ClusterFlags h;
  h.numTasks = 2;  // several processes and no way to meet
  h.globalRank = 0;
  EXPECT_THROW(detectWorld(h, {}), UsageError);

  EXPECT_THROW(detectWorld({}, {{"RANK", "x"}, {"WORLD_SIZE", "2"}}), UsageError);
  ClusterFlags u;
  u.distUrl = "http://x";
  u.numTasks = 2;
  EXPECT_THROW(detectWorld(u, {}), UsageError);
}

// A job id names a folder: one path component of safe characters, from whichever source.
TEST(World, JobIdsAreOneSafePathComponentFromEverySource) {
  const std::string tooLong(kMaxJobIdLength + 1, 'a');
  // "" too: a job id given empty is refused like any other, not taken as "not given".
  const std::vector<std::string> bad = {"../../victim", "..",  ".",    "a/b",  "/abs",
                                        ".hidden",      "-rf", "a b",  "a\nb", "x;y",
                                        "caf\xc3\xa9",  "",    tooLong};
  // The message names the source and the value.
  auto expectRefused = [](auto detect, const std::string& source, const std::string& id) {
    try {
      detect();
      ADD_FAILURE() << source << " '" << id << "' was accepted";
    } catch (const UsageError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(source + " '" + id + "'"), std::string::npos) << m;
      EXPECT_NE(m.find("not a valid job id"), std::string::npos) << m;
    }
  };
  for (const auto& id : bad) {
    ClusterFlags f;
    f.jobId = id;
    expectRefused([&] { detectWorld(f, {}); }, "--job-id", id);
    expectRefused([&] { detectWorld({}, {{"FIXRES_JOB_ID", id}}); }, "FIXRES_JOB_ID", id);
    expectRefused(
        [&] {
          detectWorld({}, {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_JOB_ID", id}});
        },
        "SLURM_JOB_ID", id);
    expectRefused(
        [&] {
          detectWorld({}, {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"TORCHELASTIC_RUN_ID", id}});
        },
        "TORCHELASTIC_RUN_ID", id);
    expectRefused(
        [&] {
          detectWorld({}, {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"FIXRES_JOB_ID", id}});
        },
        "FIXRES_JOB_ID", id);
    expectRefused([&] { checkJobId(id, "--launch-job-id"); }, "--launch-job-id", id);
  }
  // A valid --job-id wins over an environment's id that would be refused.
  ClusterFlags f;
  f.jobId = "exp1";
  EXPECT_EQ(
      detectWorld(f, {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"TORCHELASTIC_RUN_ID", ".."}}).jobId,
      "exp1");
  for (const std::string& id :
       std::vector<std::string>{"exp1", "4242", "a.b_c-d", "launch-123", "none", "A", "x..y",
                                std::string(kMaxJobIdLength, 'z')}) {
    ClusterFlags g;
    g.jobId = id;
    EXPECT_EQ(detectWorld(g, {}).jobId, id);
    EXPECT_EQ(detectWorld({}, {{"FIXRES_JOB_ID", id}}).jobId, id);
    EXPECT_EQ(
        detectWorld({}, {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_JOB_ID", id}}).jobId,
        id);
  }
  EXPECT_EQ(detectWorld({}, {}).jobId, "local");
}

TEST(World, PortForJobIsStableAndInRange) {
  EXPECT_EQ(portForJob("abc"), portForJob("abc"));
  for (auto id : {"", "1", "job", "123456789"}) {
    EXPECT_GE(portForJob(id), 20000);
    EXPECT_LT(portForJob(id), 40000);
  }
}

}  // namespace
}  // namespace fixres::distributed

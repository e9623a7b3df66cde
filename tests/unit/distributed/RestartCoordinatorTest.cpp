// The launchers' agreement on restarts (RestartCoordinator): two nodes on 127.0.0.1, each in
// its own thread, follow the protocol of docs/distributed.md ("Elastic restarts"): the first
// failure announced counts for both, the next generation starts once both have stopped, a
// failure that cannot be restarted aborts the others' restart, and every wait is bounded.
#include "fixres/distributed/RestartCoordinator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "fixres/common/Error.h"
#include "fixres/distributed/Launcher.h"

namespace fixres::distributed {
namespace {

CoordinatorOptions node(int rank, int port, int maxRestarts = 2, double timeout = 20) {
  CoordinatorOptions o;
  o.masterAddr = "127.0.0.1";
  o.port = port;
  o.nodeRank = rank;
  o.nnodes = 2;
  o.maxRestarts = maxRestarts;
  o.timeoutSeconds = timeout;
  return o;
}

using Pair = std::pair<std::unique_ptr<RestartCoordinator>, std::unique_ptr<RestartCoordinator>>;

// Both nodes joined (node 0 serves; each constructor waits for the other).
Pair join(int maxRestarts0 = 2, int maxRestarts1 = 2, double timeout = 20) {
  const int port = findFreePort();
  auto n0 = std::async(std::launch::async, [=] {
    return std::make_unique<RestartCoordinator>(node(0, port, maxRestarts0, timeout));
  });
  auto n1 = std::async(std::launch::async, [=] {
    return std::make_unique<RestartCoordinator>(node(1, port, maxRestarts1, timeout));
  });
  auto a = n0.get();
  auto b = n1.get();
  return {std::move(a), std::move(b)};
}

// TCPStore's set() returns once the request is sent, not once the server holds the key, so
// another client sees it a moment later: the launchers poll, and so does this.
std::optional<RankFailure> announcedWithin(RestartCoordinator& c, int generation, double seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(seconds * 1000));
  while (true) {
    if (auto f = c.announced(generation)) return f;
    if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

TEST(RestartCoordinator, AFailureOnOneNodeRestartsBothInTheSameGeneration) {
  auto [a, b] = join();
  EXPECT_FALSE(a->announced(0));
  const RankFailure f = b->announce(0, RankFailure{1, 3, 137, true});
  EXPECT_EQ(f.rank, 3);
  auto seen = announcedWithin(*a, 0, 10);
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->node, 1);
  EXPECT_EQ(seen->rank, 3);
  EXPECT_EQ(seen->code, 137);
  EXPECT_TRUE(seen->restart);
  // Generation 1 starts once both nodes have stopped generation 0.
  auto stopA = std::async(std::launch::async, [&] { a->waitAllStopped(0); });
  b->waitAllStopped(0);
  stopA.get();
  EXPECT_FALSE(a->announced(1));
  // Generation 1 succeeds on both nodes.
  auto doneA = std::async(std::launch::async, [&] { return a->waitAllDone(1); });
  EXPECT_FALSE(b->waitAllDone(1));
  EXPECT_FALSE(doneA.get());
  auto leaveA = std::async(std::launch::async, [&] { a->leave(); });
  b->leave();
  leaveA.get();
}

TEST(RestartCoordinator, TheFirstFailureAnnouncedCountsForEveryNode) {
  auto [a, b] = join();
  const RankFailure first = a->announce(0, RankFailure{0, 0, 5, true});
  const RankFailure second = b->announce(0, RankFailure{1, 1, 9, true});
  EXPECT_EQ(first.rank, 0);
  EXPECT_EQ(second.rank, 0);  // node 1 restarts for rank 0's failure, as node 0 does
  EXPECT_EQ(second.code, 5);
}

TEST(RestartCoordinator, AFailureThatCannotRestartAbortsTheOthersRestart) {
  auto [a, b] = join();
  a->announce(0, RankFailure{0, 0, 137, true});
  const RankFailure mine = b->announce(0, RankFailure{1, 1, 2, false});  // a usage error
  EXPECT_FALSE(mine.restart);
  try {
    a->waitAllStopped(0);
    ADD_FAILURE() << "node 0 restarted although node 1 cannot";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("on node 1, rank 1 exited with code 2"), std::string::npos)
        << e.what();
  }
}

TEST(RestartCoordinator, AFailureSeenAfterSuccessRestartsTheSucceededNode) {
  auto [a, b] = join();
  auto doneA = std::async(std::launch::async, [&] { return a->waitAllDone(0); });
  b->announce(0, RankFailure{1, 1, 134, true});
  auto f = doneA.get();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->code, 134);
}

// A user's Ctrl-C reaches the launcher as a flag; both waits for the other nodes end within a
// poll of it instead of after the timeout (here 120 s; the bound checked is half of it).
TEST(RestartCoordinator, AnInterruptEndsTheWaitsForTheOtherNodes) {
  auto [a, b] = join(2, 2, 120);
  const auto start = std::chrono::steady_clock::now();
  auto after = [start](double seconds) {
    return [start, seconds] {
      return std::chrono::steady_clock::now() - start > std::chrono::duration<double>(seconds);
    };
  };
  EXPECT_FALSE(a->waitAllDone(0, after(0.3)));  // node 1 never finishes generation 0
  a->announce(0, RankFailure{0, 0, 137, true});
  a->waitAllStopped(0, after(0.6));  // node 1 never stops: no throw, no timeout
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
}

TEST(RestartCoordinator, NodesMustAgreeOnMaxRestarts) {
  EXPECT_THROW(join(1, 2), UsageError);
}

TEST(RestartCoordinator, ANodeWhosePeersNeverComeFailsWithinTheTimeoutNamingThem) {
  const int port = findFreePort();
  try {
    RestartCoordinator alone(node(0, port, 1, 1.0));
    ADD_FAILURE() << "joined without node 1";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("node(s) 1 did not join"), std::string::npos) << e.what();
  }
}

TEST(RestartCoordinator, AStoppedPeerBoundsTheWaitForTheNextGeneration) {
  auto [a, b] = join(2, 2, 4);
  RankFailure f = a->announce(0, RankFailure{0, 0, 137, true});
  EXPECT_TRUE(f.restart);
  // Node 1 never stops: node 0 gives up after the timeout, naming it.
  try {
    a->waitAllStopped(0);
    ADD_FAILURE() << "restarted without node 1";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("node(s) 1 did not stop"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fixres::distributed

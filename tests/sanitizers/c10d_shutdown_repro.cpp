// Two ranks of a c10d job over Gloo, without fixres code: the ThreadSanitizer report at shutdown.
// Rank 1 destroys its process group after rank 0 has destroyed its own, so Gloo's event-loop
// thread sees the peer close and stores a gloo::IoException in the pair, which the main thread
// frees with the process group. Usage: c10d_shutdown_repro [PORT]
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>

namespace {

// As fixres's rendezvous and ProcessGroupCommunicator::create do for one node over TCP.
int runRank(int rank, int port, int closedPipe[2]) {
  c10d::TCPStoreOptions so;
  so.port = static_cast<uint16_t>(port);
  so.isServer = rank == 0;
  so.numWorkers = 2;
  so.waitWorkers = false;
  so.timeout = std::chrono::seconds(60);
  auto tcp = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", so);
  auto store = c10::make_intrusive<c10d::PrefixStore>("repro", tcp);
  auto opts = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(60));
  opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  opts->threads = 2;
  auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, 2, opts);
  // The collectives of dist_worker's bucketed SGD: a broadcast, all-reduces in flight together
  // (on the group's 2 worker threads), a barrier.
  std::vector<at::Tensor> b{torch::full({8}, static_cast<float>(rank + 10))};
  pg->broadcast(b)->wait();
  std::vector<std::vector<at::Tensor>> t(4);
  std::vector<c10::intrusive_ptr<c10d::Work>> work;
  for (int i = 0; i < 4; ++i) {
    t[i] = {torch::full({64 << i}, static_cast<float>(rank + i))};
    work.push_back(pg->allreduce(t[i]));
  }
  bool ok = b[0].equal(torch::full({8}, 10.f));
  for (int i = 0; i < 4; ++i) {
    work[i]->wait();
    ok = ok && t[i][0].equal(torch::full({64 << i}, static_cast<float>(2 * i + 1)));
  }
  work.clear();
  pg->barrier()->wait();
  char byte = 1;
  if (rank == 0) {
    pg.reset();  // closes rank 0's Gloo sockets
    ok = ::write(closedPipe[1], &byte, 1) == 1 && ok;
  } else {
    ok = ::read(closedPipe[0], &byte, 1) == 1 && ok;
    usleep(1000 * 1000);  // let the event loop of rank 1 see the closed connection
    pg.reset();           // the main thread frees the exception the loop thread made
  }
  std::printf("rank %d %s\n", rank, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int port = argc > 1 ? std::atoi(argv[1]) : 29517;
  std::signal(SIGPIPE, SIG_IGN);  // a write to a dead rank fails instead of killing this one
  int closedPipe[2];
  if (pipe(closedPipe) != 0) return 2;
  // Fork before any thread exists: rank 1 is the child.
  pid_t child = fork();
  if (child < 0) return 2;
  // Each rank keeps one end of the pipe: rank 1 sees end-of-file if rank 0 dies.
  ::close(closedPipe[child == 0 ? 1 : 0]);
  if (child == 0) return runRank(1, port, closedPipe);
  int rc = runRank(0, port, closedPipe);
  int status = 0;
  waitpid(child, &status, 0);
  return rc != 0 ? rc : (WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

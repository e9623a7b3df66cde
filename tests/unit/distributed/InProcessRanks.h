// Several ranks inside one test process: each a thread with its own Gloo process group on
// 127.0.0.1, meeting in one in-memory store. Lets unit tests check collectives, the gradient
// reducer and SyncBatchNorm against single-process references without launching processes.
#pragma once

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <cstdlib>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "fixres/distributed/ProcessGroupCommunicator.h"

namespace fixres::distributed {

// Runs f(rank's communicator) on `ranks` threads; rethrows the first failure. `sharedMemory`:
// all-reduce through shared memory (the default for ranks of one host) or through Gloo.
inline void runRanks(int ranks, const std::function<void(Communicator&)>& f,
                     bool sharedMemory = true) {
  // LibTorch 2.x records every collective in a process-wide flight recorder, whose first record
  // for a process group inserts into a map before taking its lock: two groups of one process
  // starting their first collectives on two threads (the ranks here; never in fixres, one group
  // a process) crashed there about once in 150 runs. Off for these tests (read when the
  // first group is made; tests/CMakeLists.txt sets it for every suite too).
  ::setenv("TORCH_FR_BUFFER_SIZE", "0", 0);
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::exception_ptr> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        WorldInfo w;
        w.rank = r;
        w.worldSize = ranks;
        w.localRank = r;
        w.localWorldSize = ranks;
        w.loopback = true;
        w.timeoutSeconds = 60;
        ConnectOptions o;
        o.sharedMemory = sharedMemory;
        auto comm = ProcessGroupCommunicator::create(store, w, o);
        f(*comm);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace fixres::distributed

// All-reduce (sum) through shared memory for ranks on one host: what NCCL does between GPUs of a
// node, for CPU tensors. Over Gloo on loopback every byte crosses the kernel's TCP stack twice
// per phase; here each rank copies its data into its own shared segment once, sums its 1/N slice
// of every rank's segment (a reduce-scatter), publishes it, and copies the other ranks' summed
// slices back (an all-gather): a few memory passes, no system call. Large tensors go through in
// chunks, with two areas per segment so that one chunk's reads overlap the next chunk's writes.
//
// Operations run in the order they are queued, on one thread of their own, so they can overlap
// the backward pass like Gloo's asynchronous work. Ranks meet through the c10d store (segment
// names), each segment is unlinked as soon as every rank has mapped it (nothing is left behind,
// even after kill -9). A rank that dies (its pid gone) or stays silent past the timeout fails the
// waiting ranks' operations with a message naming it.
#pragma once

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "fixres/distributed/Communicator.h"

namespace fixres::distributed {

class SharedMemoryAllReduce {
 public:
  // Creates this rank's segment and maps every rank's, the names exchanged through `store`
  // (every rank of the world must call it, all on one host). Returns null, with the reason in
  // `whyNot`, when any rank cannot (no /dev/shm, not enough room): every rank then agrees to do
  // without. `chunkBytes`: capacity of each of the two areas of a segment.
  static std::unique_ptr<SharedMemoryAllReduce> create(c10d::Store& store, int rank, int world,
                                                       std::chrono::milliseconds timeout,
                                                       std::string* whyNot,
                                                       size_t chunkBytes = 8u << 20);
  ~SharedMemoryAllReduce();  // stops the thread (failing queued operations), unmaps
  SharedMemoryAllReduce(const SharedMemoryAllReduce&) = delete;
  SharedMemoryAllReduce& operator=(const SharedMemoryAllReduce&) = delete;

  // Whether this dtype can go through (float32, float64, float16, bfloat16).
  static bool supports(const torch::Tensor& tensor);
  // Queues the in-place sum of `tensor` (contiguous CPU, same shape and dtype on every rank).
  // wait() on the result throws std::runtime_error naming the rank that failed.
  std::unique_ptr<PendingOp> allReduceSumAsync(const torch::Tensor& tensor);

  class Impl;

 private:
  explicit SharedMemoryAllReduce(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fixres::distributed

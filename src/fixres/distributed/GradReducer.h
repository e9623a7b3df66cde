// Data-parallel gradient averaging overlapped with the backward pass, as PyTorch's
// DistributedDataParallel: the trainable parameters are grouped into buckets (reverse
// registration order at first, then the order in which their gradients became ready in the
// first synchronised backward pass, the same on every rank); a hook on each parameter's gradient
// accumulator copies the finished gradient into its bucket, makes .grad() a view of it, counts
// the gradients ready and launches a bucket's all-reduce as soon as
// the bucket and every bucket before it are complete, while backward goes on with the earlier
// layers. Buckets always go out in the same order on every rank (collectives must match).
//
// A step: zeroGrad(); then for each micro-batch expectBackward(last, flag) and loss.backward();
// then reduce(). Only the last micro-batch's backward launches all-reduces (the others only
// accumulate, as DDP's no_sync). reduce() launches the buckets that are still due (parameters
// that got no gradient contribute zeros), waits for all, and leaves each .grad() holding the
// average over the ranks.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "fixres/common/Choice.h"
#include "fixres/common/Setting.h"
#include "fixres/distributed/Communicator.h"

namespace fixres::distributed {

// The precision gradients travel in (DDP's fp16 / bf16 compression hooks): each bucket is
// divided by the world size, cast, all-reduced in that type and cast back. Halves the bytes on
// the wire; the averaged gradient is rounded to the 16-bit type.
enum class GradCompression { kNone, kFp16, kBf16 };
const ChoiceTable<GradCompression>& gradCompressionNames();  // none, fp16, bf16

// Rows other commands bind too, by these names (cli/Flags.h: bindSetting).
inline constexpr Setting kBucketMbRow{
    "bucket_mb", "--bucket-mb", "Cluster",
    "Size of the gradient all-reduce buckets in MB (DDP's bucket_cap_mb; at least one "
    "byte, 2^-20 MB)",
    Range::reals(1.0 / (1 << 20), 1024)};

struct ReducerOptions {
  double bucketMb = 25;                // DDP's bucket_cap_mb (25); MB of 2^20 bytes
  size_t firstBucketBytes = 1u << 20;  // the first bucket is small so that sending starts early
  GradCompression compression = GradCompression::kNone;

  size_t bucketBytes() const { return static_cast<size_t>(bucketMb * (1 << 20)); }

  template <typename Self, typename V>
  static void visitSettings(Self& o, V&& v) {
    v(Setting{"grad_compression", "--grad-compression", "Cluster",
              "Precision of the gradient all-reduce: none (fp32), fp16 or bf16 (DDP's compression "
              "hooks: half the bytes on the wire, gradients rounded to 16 bits)"},
      o.compression, gradCompressionNames());
    v(kBucketMbRow, o.bucketMb);
  }
};

class GradReducer {
 public:
  // `parameters`: the trainable ones, in registration order, all with requires_grad.
  GradReducer(Communicator& comm, std::vector<torch::Tensor> parameters,
              ReducerOptions options = {});
  ~GradReducer();  // removes the hooks
  GradReducer(const GradReducer&) = delete;
  GradReducer& operator=(const GradReducer&) = delete;

  // Start of a step: every .grad() undefined (after reduce() each is a view of its bucket).
  void zeroGrad();
  // Before each backward pass of a step: `sync` for the last micro-batch (its hooks launch the
  // all-reduces), `flag` true when this rank's loss is not finite: it travels in the last bucket,
  // so that reduce() tells every rank whether any rank raised it without another collective.
  void expectBackward(bool sync, bool flag = false);
  // The same with the flag as a 0-dim tensor on the gradients' device (nonzero: raised), written
  // into the slot on the device: nothing is read back.
  void expectBackward(bool sync, const torch::Tensor& flag);
  // Launches the buckets not launched yet (in order; a .grad() that is not a bucket view, or is
  // undefined, is copied in or counts as zeros), waits for every all-reduce and leaves the average
  // in each .grad(). Returns the number of ranks that raised the flag (by their sum). Throws
  // DistributedError when a peer fails. For one process: the flag, gradients untouched.
  int reduce();
  // reduce() with the count left on the device: a float 0-dim tensor (no host round trip).
  torch::Tensor reduceOnDevice();

  // Every rank gets rank 0's values (parameters and buffers), one broadcast per dtype and device.
  static void broadcastFromRoot(Communicator& comm, const std::vector<torch::Tensor>& tensors);

  size_t bucketCount() const { return buckets_.size(); }
  // Buckets launched from hooks (during backward) in the last reduce(), for tests and benches.
  size_t bucketsLaunchedInBackward() const { return launchedInBackward_; }

 private:
  struct Bucket {
    std::vector<size_t> members;   // indices into parameters_
    std::vector<int64_t> offsets;  // of each member in buffer
    torch::Tensor buffer;          // flat, dtype and device of its members (+1 flag slot, last)
    torch::Tensor wire;            // compressed copy being all-reduced (compression only)
    std::unique_ptr<PendingOp> pending;
    size_t due = 0;  // members whose gradient is not ready yet in this backward
  };
  class Hook;

  void build(const std::vector<size_t>& order);
  void onGradientReady(size_t index);  // from a hook
  void launchReady();                  // launches buckets next_, next_+1, ... that are complete
  void launch(Bucket& bucket);
  void copyIn(size_t index);  // .grad() into its slot when it is not the view

  Communicator& comm_;
  std::vector<torch::Tensor> parameters_;
  ReducerOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<size_t, int64_t>> slot_;  // parameter -> (bucket, offset)
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<uintptr_t> hookKeys_;

  std::mutex mutex_;  // hooks may run on autograd's device threads
  bool armed_ = false;
  size_t next_ = 0;  // next bucket to launch
  std::vector<bool> ready_;
  size_t launchedInBackward_ = 0;
  std::exception_ptr hookError_;
  // Bucket order from the ready order of the first synchronised backward pass (rank 0's).
  std::vector<int64_t> readyOrder_;
  bool rebuilt_ = false;
  bool rebuildDue_ = false;
  torch::Tensor
      localFlag_;  // one process: the flags of expectBackward() (float 0-dim; undefined: none)
};

}  // namespace fixres::distributed

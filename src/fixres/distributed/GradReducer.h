// Data-parallel gradient averaging: the gradients of all trainable parameters are packed into
// buckets (about bucketBytes each, in reverse registration order like DDP, so the last layers
// -- ready first -- go first) and each bucket's all-reduce is launched as soon as it is packed,
// so communication of one bucket overlaps the packing of the next.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "fixres/distributed/Communicator.h"

namespace fixres::distributed {

class GradReducer {
 public:
  GradReducer(Communicator& comm, std::vector<torch::Tensor> parameters,
              size_t bucketBytes = 25u << 20);

  // Replaces every parameter's .grad() by its average over the ranks. A parameter without a
  // gradient on this rank contributes zeros. No-op for a single process.
  void reduce();

  // Every rank gets rank 0's values (parameters and buffers at the start of training).
  static void broadcastFromRoot(Communicator& comm, const std::vector<torch::Tensor>& tensors);

  size_t bucketCount() const { return buckets_.size(); }

 private:
  struct Bucket {
    std::vector<size_t> members;  // indices into parameters_
    torch::Tensor buffer;         // flat, dtype/device of its members
  };
  Communicator& comm_;
  std::vector<torch::Tensor> parameters_;
  std::vector<Bucket> buckets_;
};

}  // namespace fixres::distributed

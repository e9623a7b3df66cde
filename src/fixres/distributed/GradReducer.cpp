// Bucketed gradient all-reduce and root broadcast.
#include "fixres/distributed/GradReducer.h"

namespace fixres::distributed {

GradReducer::GradReducer(Communicator& comm, std::vector<torch::Tensor> parameters,
                         size_t bucketBytes)
    : comm_(comm), parameters_(std::move(parameters)) {
  if (comm_.worldSize() == 1) return;
  Bucket current;
  size_t currentBytes = 0;
  auto flush = [&] {
    if (current.members.empty()) return;
    int64_t numel = 0;
    for (size_t i : current.members) numel += parameters_[i].numel();
    current.buffer = torch::empty({numel}, parameters_[current.members[0]].options());
    buckets_.push_back(std::move(current));
    current = Bucket{};
    currentBytes = 0;
  };
  for (size_t k = parameters_.size(); k-- > 0;) {
    const auto& p = parameters_[k];
    if (!p.requires_grad()) continue;
    if (!current.members.empty()) {
      const auto& first = parameters_[current.members[0]];
      if (first.scalar_type() != p.scalar_type() || first.device() != p.device()) flush();
    }
    current.members.push_back(k);
    currentBytes += p.numel() * p.element_size();
    if (currentBytes >= bucketBytes) flush();
  }
  flush();
}

void GradReducer::reduce() {
  if (comm_.worldSize() == 1) return;
  torch::NoGradGuard noGrad;
  std::vector<std::unique_ptr<PendingOp>> pending;
  for (auto& b : buckets_) {
    int64_t offset = 0;
    for (size_t i : b.members) {
      auto& p = parameters_[i];
      auto slice = b.buffer.narrow(0, offset, p.numel());
      if (p.grad().defined()) {
        slice.copy_(p.grad().reshape({-1}));
      } else {
        slice.zero_();
      }
      offset += p.numel();
    }
    pending.push_back(comm_.allReduceSumAsync(b.buffer));
  }
  const double scale = 1.0 / comm_.worldSize();
  for (size_t k = 0; k < buckets_.size(); ++k) {
    pending[k]->wait();
    auto& b = buckets_[k];
    b.buffer.mul_(scale);
    int64_t offset = 0;
    for (size_t i : b.members) {
      auto& p = parameters_[i];
      auto slice = b.buffer.narrow(0, offset, p.numel()).view(p.sizes());
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      p.mutable_grad().copy_(slice);
      offset += p.numel();
    }
  }
}

void GradReducer::broadcastFromRoot(Communicator& comm, const std::vector<torch::Tensor>& tensors) {
  if (comm.worldSize() == 1) return;
  torch::NoGradGuard noGrad;
  std::vector<torch::Tensor> contiguous;
  for (const auto& t : tensors) contiguous.push_back(t.is_contiguous() ? t : t.contiguous());
  comm.broadcast(contiguous, 0);
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].is_same(contiguous[i])) tensors[i].copy_(contiguous[i]);
  }
}

}  // namespace fixres::distributed

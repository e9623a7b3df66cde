// Bucketed gradient all-reduce driven by autograd hooks, and root broadcast.
#include "fixres/distributed/GradReducer.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "fixres/common/Error.h"

namespace fixres::distributed {

const ChoiceTable<GradCompression>& gradCompressionNames() {
  static const ChoiceTable<GradCompression> kNames{"gradient compression",
                                                   {{"none", GradCompression::kNone},
                                                    {"fp16", GradCompression::kFp16},
                                                    {"bf16", GradCompression::kBf16}}};
  return kNames;
}

// Runs after autograd has accumulated a parameter's gradient into its .grad().
class GradReducer::Hook : public torch::autograd::FunctionPostHook {
 public:
  Hook(GradReducer* reducer, size_t index) : reducer_(reducer), index_(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    reducer_->onGradientReady(index_);
    return outputs;
  }

 private:
  GradReducer* reducer_;
  size_t index_;
};

GradReducer::GradReducer(Communicator& comm, std::vector<torch::Tensor> parameters,
                         ReducerOptions options)
    : comm_(comm), parameters_(std::move(parameters)), options_(options) {
  FIXRES_CHECK(options_.bucketBytes() > 0 && options_.firstBucketBytes > 0, UsageError,
               "gradient buckets must hold at least one byte");
  if (comm_.worldSize() == 1) return;
  std::vector<size_t> order;
  for (size_t k = parameters_.size(); k-- > 0;) {
    FIXRES_CHECK(parameters_[k].requires_grad(), InternalError, "GradReducer: parameter ", k,
                 " does not require a gradient");
    order.push_back(k);
  }
  build(order);
  for (size_t i = 0; i < parameters_.size(); ++i) {
    auto accumulator = torch::autograd::impl::grad_accumulator(parameters_[i]);
    hookKeys_.push_back(accumulator->add_post_hook(std::make_unique<Hook>(this, i)));
    accumulators_.push_back(std::move(accumulator));
  }
}

GradReducer::~GradReducer() {
  for (size_t i = 0; i < accumulators_.size(); ++i) accumulators_[i]->del_post_hook(hookKeys_[i]);
}

void GradReducer::build(const std::vector<size_t>& order) {
  buckets_.clear();
  slot_.assign(parameters_.size(), {0, 0});
  Bucket current;
  size_t currentBytes = 0;
  auto flush = [&] {
    if (current.members.empty()) return;
    buckets_.push_back(std::move(current));
    current = Bucket{};
    currentBytes = 0;
  };
  for (size_t k : order) {
    const auto& p = parameters_[k];
    if (!current.members.empty()) {
      const auto& first = parameters_[current.members[0]];
      if (first.scalar_type() != p.scalar_type() || first.device() != p.device()) flush();
    }
    current.members.push_back(k);
    currentBytes += p.numel() * p.element_size();
    const size_t cap = buckets_.empty() ? options_.firstBucketBytes : options_.bucketBytes();
    if (currentBytes >= cap) flush();
  }
  flush();
  for (size_t b = 0; b < buckets_.size(); ++b) {
    auto& bucket = buckets_[b];
    int64_t numel = 0;
    for (size_t i : bucket.members) {
      bucket.offsets.push_back(numel);
      slot_[i] = {b, numel};
      numel += parameters_[i].numel();
    }
    if (b + 1 == buckets_.size()) numel += 1;  // the flag slot travels last
    bucket.buffer = torch::zeros({numel}, parameters_[bucket.members[0]].options());
  }
  ready_.assign(buckets_.size(), false);
}

void GradReducer::zeroGrad() {
  if (comm_.worldSize() == 1) {
    for (auto& p : parameters_) p.mutable_grad() = torch::Tensor();
    localFlag_ = torch::Tensor();
    return;
  }
  torch::NoGradGuard noGrad;
  // A step abandoned after its backward launched buckets: let those finish first.
  for (auto& bucket : buckets_) {
    if (bucket.pending) {
      auto pending = std::move(bucket.pending);
      pending->wait();
    }
    bucket.wire = torch::Tensor();
  }
  if (rebuildDue_) {
    // Every rank takes rank 0's ready order, so that buckets match across ranks.
    auto order = torch::tensor(readyOrder_, torch::kLong);
    std::vector<torch::Tensor> one{order};
    comm_.broadcast(one, 0);
    std::vector<size_t> newOrder;
    for (int64_t k = 0; k < order.numel(); ++k)
      newOrder.push_back(static_cast<size_t>(order[k].item<int64_t>()));
    build(newOrder);
    rebuildDue_ = false;
    rebuilt_ = true;
  }
  // Gradients start undefined: autograd then hands over the first micro-batch's gradient
  // without a zero fill and an addition, and the hook copies it into its bucket once (DDP's
  // copy into the bucket view); a parameter that gets no gradient is zero-filled there.
  for (auto& p : parameters_) p.mutable_grad() = torch::Tensor();
  for (auto& bucket : buckets_) bucket.due = bucket.members.size();
  buckets_.back().buffer[-1].zero_();  // the flag
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = false;
  next_ = 0;
  ready_.assign(buckets_.size(), false);
  launchedInBackward_ = 0;
  hookError_ = nullptr;
  if (!rebuilt_) readyOrder_.clear();
}

void GradReducer::expectBackward(bool sync, bool flag) {
  expectBackward(sync, flag ? torch::ones({}) : torch::Tensor());
}

void GradReducer::expectBackward(bool sync, const torch::Tensor& flag) {
  torch::NoGradGuard noGrad;
  if (comm_.worldSize() == 1) {
    if (flag.defined()) {
      const auto raised = (flag != 0).to(torch::kFloat);
      localFlag_ = localFlag_.defined() ? torch::maximum(localFlag_, raised.to(localFlag_.device()))
                                        : raised;
    }
    return;
  }
  if (flag.defined()) {
    auto slot = buckets_.back().buffer[-1];
    slot.copy_(torch::maximum(slot, (flag != 0).to(slot.device(), slot.scalar_type())));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = sync;
}

void GradReducer::copyIn(size_t index) {
  auto& p = parameters_[index];
  const auto [b, offset] = slot_[index];
  auto& buffer = buckets_[b].buffer;
  const auto& g = p.grad();
  const void* expected =
      static_cast<const char*>(buffer.data_ptr()) + offset * buffer.element_size();
  if (g.defined() && g.data_ptr() == expected && g.strides() == p.strides()) return;
  torch::NoGradGuard noGrad;
  auto view = buffer.as_strided(p.sizes(), p.strides(), offset);
  if (g.defined()) {
    view.copy_(g);
  } else {
    view.zero_();
  }
  p.mutable_grad() = view;
}

void GradReducer::onGradientReady(size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!armed_ || hookError_) return;
  try {
    if (!rebuilt_) readyOrder_.push_back(static_cast<int64_t>(index));
    copyIn(index);
    auto& bucket = buckets_[slot_[index].first];
    if (bucket.due > 0 && --bucket.due == 0) ready_[slot_[index].first] = true;
    const size_t before = next_;
    launchReady();
    launchedInBackward_ += next_ - before;
  } catch (...) {
    hookError_ = std::current_exception();  // rethrown by reduce()
  }
}

void GradReducer::launchReady() {
  while (next_ < buckets_.size() && ready_[next_]) launch(buckets_[next_++]);
}

void GradReducer::launch(Bucket& bucket) {
  torch::NoGradGuard noGrad;
  const double scale = 1.0 / comm_.worldSize();
  // Divided before the sum, as DDP: the sum of averages stays in the range of 16-bit types.
  if (options_.compression == GradCompression::kNone) {
    bucket.buffer.mul_(scale);
    bucket.pending = comm_.allReduceSumAsync(bucket.buffer);
  } else {
    const auto type =
        options_.compression == GradCompression::kFp16 ? torch::kHalf : torch::kBFloat16;
    bucket.wire = bucket.buffer.mul(scale).to(type);
    bucket.pending = comm_.allReduceSumAsync(bucket.wire);
  }
}

int GradReducer::reduce() {
  return static_cast<int>(std::lround(reduceOnDevice().item<double>()));
}

torch::Tensor GradReducer::reduceOnDevice() {
  if (comm_.worldSize() == 1) {
    auto flagged = localFlag_.defined() ? localFlag_ : torch::zeros({});
    localFlag_ = torch::Tensor();
    return flagged;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = false;
    if (hookError_) std::rethrow_exception(hookError_);
  }
  for (size_t b = next_; b < buckets_.size(); ++b) {
    for (size_t i : buckets_[b].members) copyIn(i);
    launch(buckets_[b]);
  }
  torch::NoGradGuard noGrad;
  // Ready for the next round, with or without zeroGrad() (gradients stay bucket views).
  {
    std::lock_guard<std::mutex> lock(mutex_);
    next_ = 0;
    ready_.assign(buckets_.size(), false);
  }
  for (auto& bucket : buckets_) {
    bucket.due = bucket.members.size();
    auto pending = std::move(bucket.pending);
    if (pending) pending->wait();
    if (bucket.wire.defined()) {
      bucket.buffer.copy_(bucket.wire);
      bucket.wire = torch::Tensor();
    }
  }
  // The slot holds the mean of the ranks' flags (the buckets are averaged).
  const auto flagged =
      (buckets_.back().buffer[-1].to(torch::kFloat) * static_cast<float>(comm_.worldSize()))
          .round();
  if (!rebuilt_) {
    std::vector<bool> seen(parameters_.size(), false);
    std::vector<int64_t> order;
    for (int64_t i : readyOrder_)
      if (!seen[i]) seen[i] = true, order.push_back(i);
    // Parameters that got no gradient keep their place after the others (reverse order).
    for (size_t k = parameters_.size(); k-- > 0;)
      if (!seen[k]) order.push_back(static_cast<int64_t>(k));
    readyOrder_ = order;
    rebuildDue_ = !order.empty();
  }
  return flagged;
}

void GradReducer::broadcastFromRoot(Communicator& comm, const std::vector<torch::Tensor>& tensors) {
  if (comm.worldSize() == 1 || tensors.empty()) return;
  torch::NoGradGuard noGrad;
  // One flat tensor per (dtype, device): a couple of collectives instead of one per tensor.
  std::map<std::pair<int, std::string>, std::vector<size_t>> groups;
  for (size_t i = 0; i < tensors.size(); ++i)
    groups[{static_cast<int>(tensors[i].scalar_type()), tensors[i].device().str()}].push_back(i);
  std::vector<torch::Tensor> flat;
  for (const auto& [key, members] : groups) {
    std::vector<torch::Tensor> parts;
    for (size_t i : members) parts.push_back(tensors[i].reshape({-1}));
    flat.push_back(torch::cat(parts));
  }
  comm.broadcast(flat, 0);
  size_t g = 0;
  for (const auto& [key, members] : groups) {
    int64_t offset = 0;
    for (size_t i : members) {
      const auto& t = tensors[i];
      t.copy_(flat[g].narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
    ++g;
  }
}

}  // namespace fixres::distributed

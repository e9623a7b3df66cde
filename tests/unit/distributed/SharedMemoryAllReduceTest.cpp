// The shared-memory all-reduce against sums computed here: 3 ranks, tensors spanning several
// chunks (and smaller than one slice per rank), float32/float64/float16/bfloat16, several
// operations queued before the first wait; a dead peer is named instead of hanging.
#include <gtest/gtest.h>

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <thread>

#include "fixres/distributed/SharedMemoryAllReduce.h"

namespace fixres::distributed {
namespace {

TEST(SharedMemoryAllReduceTest, SumsEqualTheSumsInRankOrder) {
  const int world = 3;
  auto store = c10::make_intrusive<c10d::HashStore>();
  const std::vector<int64_t> sizes{1, 2, 7, 1000, 12345};
  const std::vector<torch::ScalarType> types{torch::kFloat, torch::kDouble, torch::kHalf,
                                             torch::kBFloat16};
  // inputs[rank][case]
  std::vector<std::vector<torch::Tensor>> inputs(world), outputs(world);
  torch::manual_seed(4);
  for (int r = 0; r < world; ++r)
    for (auto t : types)
      for (auto n : sizes) inputs[r].push_back(torch::randn({n}).to(t));
  std::vector<std::string> errors(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      std::string why;
      // 1 KB areas: the larger tensors take many chunks.
      auto shm =
          SharedMemoryAllReduce::create(*store, r, world, std::chrono::seconds(30), &why, 1024);
      if (!shm) {
        errors[r] = why;
        return;
      }
      std::vector<std::unique_ptr<PendingOp>> pending;
      for (auto& t : inputs[r]) {
        outputs[r].push_back(t.clone());
        pending.push_back(shm->allReduceSumAsync(outputs[r].back()));
      }
      for (auto& p : pending) p->wait();
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) ASSERT_EQ(errors[r], "") << "rank " << r;
  for (size_t k = 0; k < inputs[0].size(); ++k) {
    // The sum in rank order, in the tensor's own type (as each slice is summed).
    auto expected = inputs[0][k].clone();
    for (int r = 1; r < world; ++r) expected.add_(inputs[r][k]);
    for (int r = 0; r < world; ++r)
      EXPECT_TRUE(torch::equal(outputs[r][k], expected)) << "case " << k << " rank " << r;
  }
}

TEST(SharedMemoryAllReduceTest, SupportsOnlyContiguousFloatingPointCpuTensors) {
  EXPECT_TRUE(SharedMemoryAllReduce::supports(torch::zeros({3})));
  EXPECT_TRUE(SharedMemoryAllReduce::supports(torch::zeros({3}, torch::kBFloat16)));
  EXPECT_FALSE(SharedMemoryAllReduce::supports(torch::zeros({3}, torch::kLong)));
  EXPECT_FALSE(SharedMemoryAllReduce::supports(torch::zeros({3, 4}).t()));
}

TEST(SharedMemoryAllReduceTest, ASilentPeerFailsTheWaitWithinTheTimeoutNamingIt) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::unique_ptr<SharedMemoryAllReduce> a, b;
  std::thread tb([&] {
    std::string why;
    b = SharedMemoryAllReduce::create(*store, 1, 2, std::chrono::milliseconds(300), &why);
  });
  std::string why;
  a = SharedMemoryAllReduce::create(*store, 0, 2, std::chrono::milliseconds(300), &why);
  tb.join();
  ASSERT_TRUE(a && b);
  auto t = torch::ones({16});
  auto op = a->allReduceSumAsync(t);  // rank 1 never joins
  try {
    op->wait();
    FAIL() << "expected a failure";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fixres::distributed

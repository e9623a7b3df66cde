// The overlapped gradient reducer against single-process references: 2 ranks x batch 4 give the
// gradient of 1 process x batch 8 (the mean loss over 8 is the mean of the two ranks' means),
// with buckets launched during backward; micro-batches accumulate before one all-reduce; fp16 and
// bf16 compression equal the same rounding done by hand; a rank's not-finite flag reaches every
// rank; a rebuilt bucket order (from the ready order) changes nothing in the result.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <mutex>

#include "InProcessRanks.h"
#include "fixres/distributed/GradReducer.h"

namespace fixres::distributed {
namespace {

torch::nn::Sequential smallNet() {
  torch::manual_seed(3);
  return torch::nn::Sequential(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)), torch::nn::ReLU(),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 3).padding(1)), torch::nn::ReLU(),
      torch::nn::AdaptiveAvgPool2d(1), torch::nn::Flatten(), torch::nn::Linear(8, 5));
}

std::vector<torch::Tensor> params(torch::nn::Sequential& m) {
  return m->parameters();
}

// The single-process gradient of the mean loss over the whole batch.
std::vector<torch::Tensor> referenceGrads(const torch::Tensor& x, const torch::Tensor& y) {
  auto net = smallNet();
  torch::nn::functional::cross_entropy(net->forward(x), y).backward();
  std::vector<torch::Tensor> g;
  for (auto& p : params(net)) g.push_back(p.grad().clone());
  return g;
}

double maxDiff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, (a[i] - b[i]).abs().max().item<double>());
  return d;
}

struct Batch {
  torch::Tensor x, y;
};
Batch batch(int64_t n, int seed) {
  torch::manual_seed(seed);
  return {torch::randn({n, 3, 6, 6}), torch::randint(0, 5, {n}, torch::kLong)};
}

ReducerOptions smallBuckets(GradCompression c = GradCompression::kNone) {
  ReducerOptions o;
  o.firstBucketBytes = 64;
  o.bucketMb = 1024.0 / (1 << 20);  // several buckets for this net
  o.compression = c;
  return o;
}

class GradReducerTransportTest : public ::testing::TestWithParam<bool> {};

TEST_P(GradReducerTransportTest, TwoRanksOfFourEqualOneProcessOfEightAndOverlapBackward) {
  const int steps = 3;
  std::vector<Batch> data;
  for (int s = 0; s < steps; ++s) data.push_back(batch(8, 10 + s));
  std::vector<torch::nn::Sequential> nets{smallNet(), smallNet()};
  std::mutex m;
  std::vector<std::vector<std::vector<torch::Tensor>>> got(steps);
  std::vector<size_t> overlapped(2), buckets(2);
  runRanks(
      2,
      [&](Communicator& c) {
        auto& net = nets[c.rank()];
        GradReducer reducer(c, params(net), smallBuckets());
        for (int s = 0; s < steps; ++s) {
          reducer.zeroGrad();
          reducer.expectBackward(true);
          auto x = data[s].x.narrow(0, 4 * c.rank(), 4), y = data[s].y.narrow(0, 4 * c.rank(), 4);
          torch::nn::functional::cross_entropy(net->forward(x), y).backward();
          EXPECT_EQ(reducer.reduce(), 0);
          std::lock_guard<std::mutex> lock(m);
          std::vector<torch::Tensor> g;
          for (auto& p : params(net)) g.push_back(p.grad().clone());
          got[s].push_back(g);
          overlapped[c.rank()] = reducer.bucketsLaunchedInBackward();
          buckets[c.rank()] = reducer.bucketCount();
        }
      },
      GetParam());
  for (int s = 0; s < steps; ++s) {
    auto ref = referenceGrads(data[s].x, data[s].y);
    EXPECT_LT(maxDiff(got[s][0], ref), 1e-6) << "step " << s;
    EXPECT_EQ(maxDiff(got[s][0], got[s][1]), 0.0) << "ranks hold the same average";
  }
  EXPECT_GE(buckets[0], 3u);
  // Every bucket but those holding the first layers goes out before backward ends.
  EXPECT_GE(overlapped[0], 1u);
  EXPECT_EQ(overlapped[0], overlapped[1]);
}

// Shared memory (ranks of one host) and Gloo.
INSTANTIATE_TEST_SUITE_P(Transports, GradReducerTransportTest, ::testing::Values(true, false));

TEST(GradReducerTest, MicroBatchesAccumulateThenReduceOnce) {
  auto data = batch(8, 21);
  std::vector<torch::nn::Sequential> nets{smallNet(), smallNet()};
  std::vector<std::vector<torch::Tensor>> got(2);
  runRanks(2, [&](Communicator& c) {
    auto& net = nets[c.rank()];
    GradReducer reducer(c, params(net), smallBuckets());
    reducer.zeroGrad();
    for (int k = 0; k < 2; ++k) {  // 2 micro-batches of 2 images, loss weighed 1/2
      reducer.expectBackward(k == 1);
      auto x = data.x.narrow(0, 4 * c.rank() + 2 * k, 2);
      auto y = data.y.narrow(0, 4 * c.rank() + 2 * k, 2);
      (torch::nn::functional::cross_entropy(net->forward(x), y) * 0.5).backward();
      if (k == 0) EXPECT_EQ(reducer.bucketsLaunchedInBackward(), 0u);
    }
    reducer.reduce();
    for (auto& p : params(net)) got[c.rank()].push_back(p.grad().clone());
  });
  EXPECT_LT(maxDiff(got[0], referenceGrads(data.x, data.y)), 1e-6);
}

TEST_P(GradReducerTransportTest, CompressionRoundsLikeTheSameCastsByHand) {
  for (auto c : {GradCompression::kFp16, GradCompression::kBf16}) {
    const auto type = c == GradCompression::kFp16 ? torch::kHalf : torch::kBFloat16;
    auto data = batch(8, 31);
    std::vector<torch::nn::Sequential> nets{smallNet(), smallNet()};
    std::vector<std::vector<torch::Tensor>> local(2), got(2);
    runRanks(
        2,
        [&](Communicator& comm) {
          auto& net = nets[comm.rank()];
          // This rank's own gradient, for the reference.
          auto x = data.x.narrow(0, 4 * comm.rank(), 4), y = data.y.narrow(0, 4 * comm.rank(), 4);
          torch::nn::functional::cross_entropy(net->forward(x), y).backward();
          for (auto& p : params(net)) local[comm.rank()].push_back(p.grad().clone());
          GradReducer reducer(comm, params(net), smallBuckets(c));
          reducer.zeroGrad();
          reducer.expectBackward(true);
          torch::nn::functional::cross_entropy(net->forward(x), y).backward();
          reducer.reduce();
          for (auto& p : params(net)) got[comm.rank()].push_back(p.grad().clone());
        },
        GetParam());
    for (size_t i = 0; i < got[0].size(); ++i) {
      // Each rank's gradient halved and cast; the sum of the two in the 16-bit type.
      auto a = (local[0][i] * 0.5).to(type).to(torch::kFloat);
      auto b = (local[1][i] * 0.5).to(type).to(torch::kFloat);
      auto expected = (a + b).to(type).to(torch::kFloat);
      EXPECT_TRUE(torch::equal(got[0][i], expected)) << "parameter " << i << " " << (int)c;
      EXPECT_TRUE(torch::equal(got[1][i], expected));
    }
  }
}

TEST(GradReducerTest, ReduceAloneAveragesTheGradientsAsTheyAreAndCanRepeat) {
  // As `fixres bench allreduce` uses it: gradients set by hand, reduce() called repeatedly
  // without zeroGrad() or a backward pass.
  std::vector<torch::nn::Sequential> nets{smallNet(), smallNet()};
  std::vector<std::vector<torch::Tensor>> given(2);
  torch::manual_seed(61);
  for (int r = 0; r < 2; ++r)
    for (auto& p : params(nets[r])) given[r].push_back(torch::randn_like(p));
  std::vector<std::vector<torch::Tensor>> first(2), second(2);
  runRanks(2, [&](Communicator& c) {
    auto ps = params(nets[c.rank()]);
    for (size_t i = 0; i < ps.size(); ++i) ps[i].mutable_grad() = given[c.rank()][i].clone();
    GradReducer reducer(c, ps, smallBuckets());
    reducer.reduce();
    for (auto& p : ps) first[c.rank()].push_back(p.grad().clone());
    reducer.reduce();
    for (auto& p : ps) second[c.rank()].push_back(p.grad().clone());
  });
  for (size_t i = 0; i < given[0].size(); ++i) {
    auto expected = (given[0][i] * 0.5) + (given[1][i] * 0.5);
    for (int r = 0; r < 2; ++r) {
      EXPECT_TRUE(torch::equal(first[r][i], expected)) << "parameter " << i;
      EXPECT_TRUE(torch::equal(second[r][i], expected)) << "parameter " << i;
    }
  }
}

TEST(GradReducerTest, NotFiniteFlagOfOneRankReachesEveryRank) {
  std::vector<torch::nn::Sequential> nets{smallNet(), smallNet()};
  auto data = batch(8, 41);
  std::vector<int> flagged(2, -1), clean(2, -1);
  runRanks(2, [&](Communicator& c) {
    auto& net = nets[c.rank()];
    GradReducer reducer(c, params(net), smallBuckets());
    auto x = data.x.narrow(0, 4 * c.rank(), 4), y = data.y.narrow(0, 4 * c.rank(), 4);
    for (int s = 0; s < 2; ++s) {
      reducer.zeroGrad();
      reducer.expectBackward(true, s == 0 && c.rank() == 1);
      torch::nn::functional::cross_entropy(net->forward(x), y).backward();
      (s == 0 ? flagged : clean)[c.rank()] = reducer.reduce();
    }
  });
  EXPECT_EQ(flagged, (std::vector<int>{1, 1}));
  EXPECT_EQ(clean, (std::vector<int>{0, 0}));
}

TEST(GradReducerTest, SingleProcessLeavesGradientsAndKeepsTheFlag) {
  auto comm = makeSingleProcessCommunicator();
  auto net = smallNet();
  auto data = batch(4, 51);
  GradReducer reducer(*comm, params(net));
  reducer.zeroGrad();
  for (auto& p : params(net)) EXPECT_FALSE(p.grad().defined());
  reducer.expectBackward(true, true);
  torch::nn::functional::cross_entropy(net->forward(data.x), data.y).backward();
  EXPECT_EQ(reducer.reduce(), 1);
  std::vector<torch::Tensor> g;
  for (auto& p : params(net)) g.push_back(p.grad());
  EXPECT_LT(maxDiff(g, referenceGrads(data.x, data.y)), 1e-7);
}

TEST(GradReducerTest, BroadcastFromRootCoalescesDtypes) {
  std::vector<std::vector<torch::Tensor>> got(2);
  runRanks(2, [&](Communicator& c) {
    std::vector<torch::Tensor> t{torch::full({3}, 1.0f + c.rank()),
                                 torch::full({2, 2}, 10 + c.rank(), torch::kLong),
                                 torch::full({1}, 5.0f * (c.rank() + 1))};
    GradReducer::broadcastFromRoot(c, t);
    got[c.rank()] = t;
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(torch::equal(got[r][0], torch::full({3}, 1.0f)));
    EXPECT_TRUE(torch::equal(got[r][1], torch::full({2, 2}, 10, torch::kLong)));
    EXPECT_TRUE(torch::equal(got[r][2], torch::full({1}, 5.0f)));
  }
}

}  // namespace
}  // namespace fixres::distributed

// Test program for the distributed runtime: one rank of a job whose world comes from the
// environment (as under `fixres launch`, torchrun, SLURM or MPI) or the usual FixRes flags.
//   dist_worker check                      collectives against closed-form expectations
//   dist_worker sgd STEPS GLOBAL_BATCH OUT [none|fp16|bf16]
//                                          SGD steps of a small model, data split over ranks
//   dist_worker loop SECONDS               all-reduce every 50 ms (fault tests kill a rank)
//   dist_worker compare A B TOL            max |A - B| of two weight files, exit 1 if > TOL
#include <unistd.h>

#include <csignal>
#include <iostream>

#include "fixres/common/Error.h"
#include "fixres/distributed/Communicator.h"
#include "fixres/distributed/GradReducer.h"
#include "fixres/distributed/World.h"

using namespace fixres;
using namespace fixres::distributed;

namespace {

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::cerr << "check failed: " << what << std::endl;
    std::exit(1);
  }
}

int check(Communicator& c) {
  const int r = c.rank(), w = c.worldSize();
  std::vector<torch::Tensor> b{torch::full({3}, static_cast<float>(r + 10))};
  c.broadcast(b, 0);
  expect(torch::allclose(b[0], torch::full({3}, 10.f)), "broadcast from rank 0");
  auto s = torch::full({4}, static_cast<double>(r + 1), torch::kDouble);
  c.allReduceSum(s);
  expect(torch::allclose(s, torch::full({4}, w * (w + 1) / 2.0, torch::kDouble)), "all-reduce sum");
  auto g = allGatherVariable(c, torch::full({r + 1, 2}, static_cast<float>(r)));
  expect(g.size(0) == w * (w + 1) / 2, "gathered rows");
  int64_t row = 0;
  for (int k = 0; k < w; ++k)
    for (int j = 0; j <= k; ++j, ++row) expect(g[row][0].item<float>() == k, "gather order");
  auto v = allReduceScalars(c, {1.0, static_cast<double>(r)});
  expect(v[0] == w && v[1] == w * (w - 1) / 2.0, "scalar sums");
  c.barrier();
  std::cout << "check ok rank " << r << " world " << w << " backend " << c.backendName()
            << std::endl;
  return 0;
}

int sgd(Communicator& c, int steps, int globalBatch, const std::string& out,
        const std::string& compression) {
  FIXRES_CHECK(globalBatch % c.worldSize() == 0, UsageError, "global batch must split evenly");
  torch::manual_seed(0);
  auto model =
      torch::nn::Sequential(torch::nn::Linear(8, 16), torch::nn::ReLU(), torch::nn::Linear(16, 4));
  // Every rank starts from different weights: the broadcast must fix that.
  torch::manual_seed(100 + c.rank());
  for (auto& p : model->parameters()) {
    torch::NoGradGuard g;
    p.uniform_(-0.5, 0.5);
  }
  GradReducer::broadcastFromRoot(c, model->parameters());
  ReducerOptions ro;
  ro.bucketMb = 256.0 / (1 << 20);  // several buckets
  ro.firstBucketBytes = 256;
  ro.compression = parseChoice(gradCompressionNames(), compression, "compression");
  GradReducer reducer(c, model->parameters(), ro);
  torch::optim::SGD opt(model->parameters(),
                        torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-4));
  torch::manual_seed(7);
  auto X = torch::randn({steps, globalBatch, 8});
  auto Y = torch::randint(0, 4, {steps, globalBatch});
  const int local = globalBatch / c.worldSize();
  for (int s = 0; s < steps; ++s) {
    auto x = X[s].narrow(0, c.rank() * local, local);
    auto y = Y[s].narrow(0, c.rank() * local, local);
    // Gradients all-reduced from the backward pass's hooks, bucket by bucket.
    reducer.zeroGrad();
    reducer.expectBackward(true);
    torch::nn::functional::cross_entropy(model->forward(x), y).backward();
    expect(reducer.reduce() == 0, "no rank raised the not-finite flag");
    opt.step();
  }
  if (c.rank() == 0) {
    std::vector<torch::Tensor> params;
    for (auto& p : model->parameters()) params.push_back(p.detach().clone());
    torch::save(params, out);
  }
  c.barrier();
  std::cout << "sgd done rank " << c.rank() << " buckets " << reducer.bucketCount() << std::endl;
  return 0;
}

int loop(Communicator& c, double seconds) {
  std::cout << "pid " << ::getpid() << " rank " << c.rank() << std::endl;
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(seconds * 1000));
  while (std::chrono::steady_clock::now() < end) {
    auto t = torch::ones({1024});
    c.allReduceSum(t);
    usleep(50000);
  }
  return 0;
}

int compare(const std::string& a, const std::string& b, double tol) {
  std::vector<torch::Tensor> ta, tb;
  torch::load(ta, a);
  torch::load(tb, b);
  expect(ta.size() == tb.size(), "same number of tensors");
  double maxDiff = 0;
  for (size_t i = 0; i < ta.size(); ++i)
    maxDiff = std::max(maxDiff, (ta[i] - tb[i]).abs().max().item<double>());
  std::cout << "max abs diff " << maxDiff << " (tolerance " << tol << ")" << std::endl;
  return maxDiff <= tol ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> a(argv + 1, argv + argc);
  try {
    if (a.empty()) FIXRES_FAIL(UsageError, "usage: dist_worker check|sgd|loop|compare ...");
    if (a[0] == "compare") return compare(a.at(1), a.at(2), std::stod(a.at(3)));
    ClusterFlags flags;
    // FixRes flags may follow the scenario's own arguments.
    for (size_t i = 1; i + 1 < a.size(); ++i) {
      if (a[i] == "--num-tasks") flags.numTasks = std::stoi(a[i + 1]);
      if (a[i] == "--global-rank") flags.globalRank = std::stoi(a[i + 1]);
      if (a[i] == "--job-id") flags.jobId = a[i + 1];
      if (a[i] == "--shared-folder-path") flags.sharedFolderPath = a[i + 1];
    }
    if (const char* t = std::getenv("FIXRES_DIST_TIMEOUT")) flags.timeoutSeconds = std::stod(t);
    auto world = detectWorld(flags, currentEnvironment());
    auto comm = connect(world, ConnectOptions{});
    if (a[0] == "check") return check(*comm);
    if (a[0] == "sgd") {
      // An optional fifth word: the gradient compression (none, fp16, bf16).
      const bool named = a.size() > 4 && a[4].rfind("--", 0) != 0;
      return sgd(*comm, std::stoi(a.at(1)), std::stoi(a.at(2)), a.at(3), named ? a[4] : "none");
    }
    if (a[0] == "loop") return loop(*comm, std::stod(a.at(1)));
    FIXRES_FAIL(UsageError, "unknown scenario ", a[0]);
  } catch (const Error& e) {
    std::cerr << "fixres: error: " << oneLine(e.what()) << std::endl;
    std::_Exit(static_cast<int>(e.code()));
  }
}

// Metric sums and top-k counts.
#include "fixres/runtime/Metrics.h"

#include <algorithm>

namespace fixres::engine {

void MetricSums::reduce(distributed::Communicator& comm) {
  auto v = distributed::allReduceScalars(comm, {lossSum, top1, top5, count});
  lossSum = v[0];
  top1 = v[1];
  top5 = v[2];
  count = v[3];
}

int64_t correctInTopK(const torch::Tensor& scores, const torch::Tensor& labels, int64_t k) {
  k = std::min<int64_t>(k, scores.size(1));
  auto top = std::get<1>(scores.topk(k, 1));
  return top.eq(labels.view({-1, 1})).any(1).sum().item<int64_t>();
}

std::pair<double, double> topkAccuracy(const torch::Tensor& scores, const torch::Tensor& labels) {
  const double n = std::max<int64_t>(1, labels.size(0));
  return {100.0 * correctInTopK(scores, labels, 1) / n,
          100.0 * correctInTopK(scores, labels, 5) / n};
}

}  // namespace fixres::engine

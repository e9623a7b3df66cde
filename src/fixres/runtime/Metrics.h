// Classification metrics kept as sums and counts, so that accuracy over uneven shards reduces
// exactly over the ranks (sums of sums, never means of means).
#pragma once

#include <torch/types.h>

#include <utility>

#include "fixres/distributed/Communicator.h"

namespace fixres::engine {

struct MetricSums {
  double lossSum = 0, top1 = 0, top5 = 0, count = 0;
  void reduce(distributed::Communicator& comm);  // every rank gets the totals
};

// Rows of `scores` (N x C) whose label is among the k highest scores (k capped at C).
int64_t correctInTopK(const torch::Tensor& scores, const torch::Tensor& labels, int64_t k);

// Top-1/top-5 (percent) of logits or probabilities against labels.
std::pair<double, double> topkAccuracy(const torch::Tensor& scores, const torch::Tensor& labels);

}  // namespace fixres::engine

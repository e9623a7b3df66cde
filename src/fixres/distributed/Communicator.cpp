// Backend names, connect() (a single process, or the rendezvous then a process group) and the
// collectives built on the Communicator interface.
#include "fixres/distributed/Communicator.h"

#include <algorithm>
#include <cstdint>

#include "fixres/common/Error.h"
#include "fixres/distributed/ProcessGroupCommunicator.h"
#include "fixres/distributed/Rendezvous.h"

namespace fixres::distributed {

const ChoiceTable<Backend>& backendNames() {
  static const ChoiceTable<Backend> kNames{
      "backend", {{"auto", Backend::kAuto}, {"gloo", Backend::kGloo}, {"nccl", Backend::kNccl}}};
  return kNames;
}

Backend parseBackend(const std::string& name) {
  return parseChoice(backendNames(), name, "--backend");
}

std::unique_ptr<Communicator> connect(const WorldInfo& w, const ConnectOptions& options) {
  if (!w.distributed()) return makeSingleProcessCommunicator();
  auto store = rendezvous(w);
  return ProcessGroupCommunicator::create(std::move(store), w, options);
}

torch::Tensor allGatherVariable(Communicator& comm, const torch::Tensor& tensor) {
  if (comm.worldSize() == 1) return tensor.clone();
  auto count = torch::full({1}, tensor.size(0), torch::dtype(torch::kLong).device(tensor.device()));
  auto counts = comm.allGather(count);
  int64_t maxCount = 0;
  for (auto& c : counts) maxCount = std::max(maxCount, c.item<int64_t>());
  auto shape = tensor.sizes().vec();
  shape[0] = maxCount;
  auto padded = torch::zeros(shape, tensor.options());
  if (tensor.size(0) > 0) padded.narrow(0, 0, tensor.size(0)).copy_(tensor);
  auto parts = comm.allGather(padded);
  std::vector<torch::Tensor> trimmed;
  for (size_t r = 0; r < parts.size(); ++r) {
    trimmed.push_back(parts[r].narrow(0, 0, counts[r].item<int64_t>()));
  }
  return torch::cat(trimmed, 0);
}

std::vector<double> allReduceScalars(Communicator& comm, const std::vector<double>& values) {
  if (comm.worldSize() == 1 || values.empty()) return values;
  auto t = torch::tensor(values, torch::kDouble).to(comm.device());
  comm.allReduceSum(t);
  t = t.cpu();
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

}  // namespace fixres::distributed

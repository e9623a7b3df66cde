// The run-folder lock taken by train, finetune and sweep's fine-tuning runs.
#include "fixres/train/RunFolder.h"

#include <exception>

#include "fixres/common/Error.h"

namespace fixres::engine {

std::optional<FolderLock> lockRunFolder(const std::string& runDir,
                                        distributed::Communicator& comm) {
  std::optional<FolderLock> lock;
  std::exception_ptr failure;
  double code = 0;
  if (comm.rank() == 0) {
    try {
      lock.emplace(runDir);
      lock->removeStaleTemporaries();
    } catch (const std::exception& e) {
      failure = std::current_exception();
      code = static_cast<double>(exitCodeOf(e));
    }
  }
  // Every rank learns rank 0's outcome, so that none waits for the others at a later collective.
  if (comm.worldSize() > 1) code = distributed::allReduceScalars(comm, {code})[0];
  if (failure) std::rethrow_exception(failure);
  if (code != 0)
    throw Error(static_cast<ExitCode>(static_cast<int>(code)),
                "rank 0 cannot use the run folder " + runDir + " (its error says why)");
  return lock;
}

}  // namespace fixres::engine

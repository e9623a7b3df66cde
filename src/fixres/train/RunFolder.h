// One run per run folder: rank 0 locks the folder before anything is written there (and, once it
// holds the lock, removes the temporary files that interrupted writes left), and every rank
// leaves with rank 0's error when it cannot.
#pragma once

#include <optional>
#include <string>

#include "fixres/common/FolderLock.h"
#include "fixres/distributed/Communicator.h"

namespace fixres::engine {

// Creates and locks `runDir` on rank 0 (FolderLock) and removes its stale temporaries; a
// collective of every rank of `comm`. When rank 0 fails (another run holds the folder: exit 2
// naming its pid), rank 0 rethrows its error and the other ranks throw an error with the same
// exit code. Keep the result for as long as the run writes into the folder (empty on ranks > 0).
std::optional<FolderLock> lockRunFolder(const std::string& runDir, distributed::Communicator& comm);

}  // namespace fixres::engine

// The launcher's local ranks as child processes: started with a torchrun-style environment in
// their own process groups, their stdout and stderr relayed line by line with a "[rank r] "
// prefix, signalled and reaped. What a generation of `fixres launch` (Launcher.cpp) supervises.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "fixres/distributed/Launcher.h"

namespace fixres::distributed {

struct RankProcess {
  int localRank = 0;
  int globalRank = 0;
  pid_t pid = -1;
  int outFd = -1, errFd = -1;  // the read ends of its stdout and stderr pipes; -1 once closed
  std::string outBuf, errBuf;  // a line begun but not yet ended
  bool running = true;
  int exitCode = 0;
};

// Two pipes per rank stay open in the launcher: raises the soft limit on open files when it is
// too low for that, or refuses the rank count naming the limit (UsageError).
void reserveFileDescriptors(int ranks);

// Starts the o.nprocPerNode local ranks of `generation` (RANK, WORLD_SIZE, LOCAL_RANK, ...,
// TORCHELASTIC_RESTART_COUNT; FIXRES_LOCAL_STORE when localStore is not empty), each with its
// output on pipes. When one cannot start, ends those already started and throws InternalError.
std::vector<RankProcess> startRanks(const LaunchOptions& o, int worldSize,
                                    const std::string& localStore, int generation);

// True while a rank runs.
bool anyRunning(const std::vector<RankProcess>& ranks);

// True while a rank runs or one of its pipes is open.
bool anyOpen(const std::vector<RankProcess>& ranks);

// Waits up to timeoutMs for output, then relays what arrived to the launcher's stdout or stderr,
// a line at a time with the rank's prefix; closes a pipe at its end (flushing a last line).
void relayOutput(std::vector<RankProcess>& ranks, int timeoutMs);

// Sends `sig` to the process group of every rank still running (SIGCONT first: a stopped rank
// must wake to die): what a rank started (a shell's children, helpers) stops with it.
void signalRunning(std::vector<RankProcess>& ranks, int sig);

// Ranks that have exited while a process they started still holds their output pipes: SIGKILL to
// their process groups (killLeftovers); their pipes closed, a last partial line relayed
// (closeLeftovers, for a holder that left the group). Bound the launcher's wait for output.
void killLeftovers(std::vector<RankProcess>& ranks);
void closeLeftovers(std::vector<RankProcess>& ranks);

// The exit code of a waitpid status: the process's own, or 128 + the signal that killed it.
int exitCodeOfStatus(int status);

}  // namespace fixres::distributed

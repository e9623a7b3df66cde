// Graceful stop on SIGTERM, SIGHUP (the terminal closed) and SIGINT: the first signal only raises
// a flag that the training loop polls at step boundaries (it then saves a checkpoint and the
// process exits 128 + signal); a second one ends the process at once with the default action.
// A second signal is not needed: a watchdog thread ends the process with 128 + signal and one
// line when the work under way neither polls the flag (stopSignal) nor reports
// progress (noteProgress) for the stop grace: max(kMinimumStopGraceSeconds, 3 x the longest unit
// of work reported), counted from the signal or the last progress after it.
// SIGHUP is handled as SIGTERM, except when it was ignored when the process started (nohup):
// then it stays ignored.
#pragma once

#include <cstdint>

namespace fixres {

constexpr int64_t kMinimumStopGraceSeconds = 60;

void installStopHandlers();
// The stop the training loop acts on (a caller that sees it is at a point where it can stop: the
// watchdog stands down): SIGTERM for SIGTERM and SIGHUP (both ask the process to
// end), SIGINT for SIGINT; 0 while none.
int stopSignal();
// The signal that was received first (SIGTERM, SIGHUP or SIGINT), 0 while none: for the exit
// code 128 + signal and for messages.
int receivedStopSignal();
// One unit of work (a training step, an evaluation batch) ended after `unitSeconds`: the watchdog
// counts the grace from now, and the grace grows to 3 x the longest unit.
void noteProgress(double unitSeconds);
int64_t stopGraceMs();
// Tests: a shorter floor than kMinimumStopGraceSeconds.
void setMinimumStopGrace(double seconds);
// "SIGTERM", "SIGHUP", "SIGINT", else "a signal".
const char* stopSignalName(int signal);

}  // namespace fixres

// Graceful stop on SIGTERM, SIGHUP (the terminal closed) and SIGINT: the first signal only raises
// a flag that the training loop polls at step boundaries (it then saves a checkpoint and the
// process exits 128 + signal); a second one ends the process at once with the default action.
// SIGHUP is handled as SIGTERM, except when it was ignored when the process started (nohup):
// then it stays ignored.
#pragma once

namespace fixres {

void installStopHandlers();
// The stop the training loop acts on: SIGTERM for SIGTERM and SIGHUP (both ask the process to
// end), SIGINT for SIGINT; 0 while none.
int stopSignal();
// The signal that was received first (SIGTERM, SIGHUP or SIGINT), 0 while none: for the exit
// code 128 + signal and for messages.
int receivedStopSignal();
// "SIGTERM", "SIGHUP", "SIGINT", else "a signal".
const char* stopSignalName(int signal);

}  // namespace fixres

// Graceful stop on SIGTERM / SIGINT: the first signal only raises a flag that the training loop
// polls at step boundaries (it then saves a checkpoint and exits 128 + signal); a second one
// ends the process at once with the default action.
#pragma once

namespace fixres {

void installStopHandlers();
// The signal number received (SIGTERM or SIGINT), 0 while none.
int stopSignal();

}  // namespace fixres

// What a command line needs while a command runs in the foreground: the
// signals its user sends passed on, and the terminal in raw mode while the
// sandbox owns it.
#pragma once

#include "mojoup/sandbox/node.h"

namespace mojoup::cli {

// Blocks, here and in threads started from now on, the signals a session's
// owner passes on (INT, TERM, HUP, QUIT) and WINCH, so that only
// RunInForeground takes them. Call before Node::Start.
void BlockSessionSignals();

// Waits for `run` with this process's stdio. Signals go on to the command (a
// second interrupt kills a sandbox), and window size changes to its terminal.
absl::StatusOr<int> RunInForeground(RunningCommand& run);

// The terminal's size on `fd`; false when it is not a terminal.
bool TerminalSize(int fd, unsigned short& rows, unsigned short& columns);

}  // namespace mojoup::cli

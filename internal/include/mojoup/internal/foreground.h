// A command in the foreground of a terminal program: the signals its user
// sends passed on, window size changes passed on, and the terminal in raw
// mode while the command owns it. What `mojoup-node run` and `attach` do,
// shared by the sandbox library's local runs (mojoup/sandbox/foreground.h)
// and the service client's attachments (mojoup/service/client.h).
#pragma once

#include <functional>

#include "absl/status/statusor.h"

namespace mojoup::internal {

// Blocks, here and in threads started from now on, the signals a session's
// owner passes on (INT, TERM, HUP, QUIT) and WINCH, so that only
// RunInForeground takes them. Call before starting the command's threads.
void BlockForegroundSignals();

// The terminal's size on `fd`; false when it is not a terminal.
bool TerminalSize(int fd, unsigned short& rows, unsigned short& columns);

struct ForegroundCommand {
  // The command has a terminal: stdin goes raw while it runs, and the
  // window's size goes with it.
  bool terminal = false;
  // A second interrupt kills (SIGKILL) instead of passing SIGINT on again.
  bool kill_on_second_interrupt = false;
  // Runs the command to its end with this process's stdio and the window's
  // size (0 by 0 when there is no terminal); its exit code.
  std::function<absl::StatusOr<int>(unsigned short rows, unsigned short columns)> wait;
  // From the signal thread while `wait` runs.
  std::function<void(int signal)> signal;
  std::function<void(unsigned short rows, unsigned short columns)> resize;
};

// Runs `command.wait` while a thread of its own takes the blocked signals and
// passes them on.
absl::StatusOr<int> RunInForeground(const ForegroundCommand& command);

}  // namespace mojoup::internal

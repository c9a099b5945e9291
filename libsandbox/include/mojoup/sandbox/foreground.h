// A session or unsandboxed run in the foreground of a terminal program, as
// `mojoup-node run` holds it: the signals its user sends passed on (a second
// interrupt kills a sandbox), window size changes passed on, and the terminal
// in raw mode while the command owns it.
//
//   mojoup::sandbox::BlockForegroundSignals();   // before Node::Start starts threads
//   auto launch = node->Start(request);
//   absl::StatusOr<int> code = mojoup::sandbox::RunInForeground(*launch->run);
#pragma once

#include "absl/status/statusor.h"
#include "mojoup/sandbox/node.h"

namespace mojoup::sandbox {

// Blocks, here and in threads started from now on, the signals a session's
// owner passes on (INT, TERM, HUP, QUIT) and WINCH, so that only
// RunInForeground takes them. Call before Node::Start.
void BlockForegroundSignals();

// Waits for `run` with this process's stdio: its exit code.
absl::StatusOr<int> RunInForeground(RunningCommand& run);

}  // namespace mojoup::sandbox

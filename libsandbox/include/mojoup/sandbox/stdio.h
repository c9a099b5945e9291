// The caller's standard streams as a session's command sees them: what a
// runtime (mojoup/sandbox/backend.h) and a service attachment
// (mojoup/service/client.h) copy to and from. Plain data, with no dependency
// beyond the standard library.
#pragma once

#include <functional>

namespace mojoup::sandbox {

// The caller's side of the command's standard streams.
struct Stdio {
  int in = 0;
  int out = 1;
  int err = 2;
  bool tty = false;  // the sandbox gets a terminal; stdout carries both streams
  unsigned short rows = 0, columns = 0;
  // Called once when `out` stops taking the command's output because its
  // reader went away (EPIPE), so the caller can end the command as a
  // pipeline would end it (SIGPIPE) instead of draining its output forever.
  std::function<void()> output_closed;
};

}  // namespace mojoup::sandbox

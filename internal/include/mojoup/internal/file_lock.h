// LockFile: an exclusive advisory lock (flock) with a deadline, for state that
// several mojoup-node processes update: the node config, the session registry.
//
//   absl::StatusOr<mojoup::internal::Fd> lock = mojoup::internal::LockFile(path + ".lock", 2s);
//   if (!lock.ok()) return lock.status();
//   ...  // read, change, ReplaceAtomically; closing the descriptor releases the lock
#pragma once

#include <chrono>
#include <string>

#include "absl/status/statusor.h"
#include "mojoup/internal/fd.h"

namespace mojoup::internal {

// An exclusive flock on `path` (created with `mode` if missing), waited for up
// to `timeout`; released when the returned descriptor is closed.
absl::StatusOr<Fd> LockFile(const std::string& path, std::chrono::milliseconds timeout,
                            unsigned mode = 0600);

}  // namespace mojoup::internal

// When a process started, from /proc: with its pid, a name for the process
// that a reused pid cannot take over.
#pragma once

#include <cstdint>
#include <optional>

namespace mojoup::internal {

// Field 22 of /proc/<pid>/stat: when the process started, in clock ticks
// since boot. A zombie (state Z: killed, not yet reaped by a parent that is
// busy or never reaps) or a dead process (X) has run its course: nullopt,
// as for a process that is gone.
std::optional<std::uint64_t> ProcStartTime(int pid);

}  // namespace mojoup::internal

// A session's record on disk (<state>/sessions/<id>.json): written by the
// node, read back by later runs, `status`, `stop` and the reaper. What is
// read back is data, never instructions: every value must be one the node
// itself would have written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "mojoup/sandbox/session.h"

namespace mojoup::sandbox {

// What a record may hold.
struct RecordContext {
  std::string sessions_dir;  // <state>/sessions
  std::string home;          // the user's home on the host
  const Getenv* getenv = nullptr;
};

// A record is small; anything larger was not written by the node.
inline constexpr std::size_t kMaxRecordBytes = 256 * 1024;

// The record as one JSON object (schema mojoup.session/v1).
std::string RecordToJson(const SessionRecord& record);

// The record in `text`, read from `path`; DataLoss naming `path` and the
// field when it is not one the node wrote for a session in `context`.
absl::StatusOr<SessionRecord> RecordFromJson(const std::string& path, const std::string& text,
                                             const RecordContext& context);

// Field 22 of /proc/<pid>/stat: when the process started, in clock ticks
// since boot. With the pid it names a process for good (pids are reused).
// A zombie (state Z: killed, not yet reaped by a parent that is busy or
// never reaps) or a dead process (X) has run its course: nullopt, as for a
// process that is gone.
std::optional<std::uint64_t> ProcStartTime(int pid);

}  // namespace mojoup::sandbox

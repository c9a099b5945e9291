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
#include "mojoup/internal/proc_start.h"
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

// A session's control socket (ControlSocketPath) in its directory
// (SessionRecord::dir).
std::string ControlSocketIn(const std::string& session_dir);

// The record as one JSON object (schema mojoup.session/v1).
std::string RecordToJson(const SessionRecord& record);

// The record in `text`, read from `path`; DataLoss naming `path` and the
// field when it is not one the node wrote for a session in `context`.
absl::StatusOr<SessionRecord> RecordFromJson(const std::string& path, const std::string& text,
                                             const RecordContext& context);

// When a process started (mojoup/internal/proc_start.h).
using internal::ProcStartTime;

}  // namespace mojoup::sandbox

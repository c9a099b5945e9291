// The end line of a session whose owner is gone: the owner (the `run`
// process or the service's worker) writes "session.end" as the session
// closes; one that was killed never does, and whoever cleans up after it
// appends the line instead, so that the audit still ends and has no gap.
//
// By then the file is untrusted input (the session's user could have
// written anything into it): it is opened beneath its directory without
// following a link or blocking, must be a regular file of the expected
// owner with one link and no group or other write, and only a bounded tail
// is read. A last line that does not pass is left as it is: nothing is
// appended after it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace mojoup::sandbox {

// The last line of an audit, as its tail says.
struct AuditTail {
  std::uint64_t seq = 0;  // 0 for an empty file
  std::string session;    // empty for an empty file
  bool ended = false;     // the last line is "session.end"
};

// Reads the last line of the audit open at `fd`, `size` bytes long
// (`name` is for the sentences): at most kMaxAuditLineBytes and its newline
// from the end, checked as sandbox::ParseAuditLine checks a line.
// FailedPrecondition, one sentence naming `name`, for a last line without
// its newline, one longer than the bound, or one that does not pass.
absl::StatusOr<AuditTail> ReadAuditTail(int fd, std::uint64_t size, const std::string& name);

struct OrphanAuditEnd {
  std::string dir;      // <state dir>/audit
  std::string session;  // the file is <dir>/<session>.jsonl
  uid_t owner = 0;      // whose file it must be
  std::string detail;   // why, for the line's "detail"
  std::chrono::system_clock::time_point now{};
};

// The reason an end line written this way carries.
inline constexpr std::string_view kOwnerGone = "owner-gone";

// Appends {"event": "session.end", "reason": "owner-gone", "detail": ...}
// with the seq after the last line's, in one write, unless the last line is
// an end line already. True when it appended. NotFound when the session has
// no audit; FailedPrecondition, one sentence naming the file, when the
// file is not safe to append to or its last line does not pass.
absl::StatusOr<bool> EndOrphanedAudit(const OrphanAuditEnd& end);

}  // namespace mojoup::sandbox

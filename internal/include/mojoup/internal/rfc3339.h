// RFC 3339 timestamps in UTC, the one place their format is written: a
// session's start, a policy change's window, a sign-in file's stamp (to the
// second) and the credential proxy's audit lines (to the millisecond).
//
//   record.started_at = mojoup::internal::Rfc3339(std::chrono::system_clock::now());
#pragma once

#include <chrono>
#include <string>

namespace mojoup::internal {

// "2026-11-30T10:00:00Z": `when` in UTC, to the second (truncated).
std::string Rfc3339(std::chrono::system_clock::time_point when);

// "2026-11-30T10:00:00.042Z": `when` in UTC, to the millisecond (truncated).
std::string Rfc3339Millis(std::chrono::system_clock::time_point when);

}  // namespace mojoup::internal

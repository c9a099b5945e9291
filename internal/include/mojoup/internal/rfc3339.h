// The one way times are written for people and records: RFC 3339 in UTC.
#pragma once

#include <chrono>
#include <string>

namespace mojoup::internal {

// "2026-11-30T10:00:00Z": `when` in UTC, to the second.
std::string Rfc3339(std::chrono::system_clock::time_point when);

}  // namespace mojoup::internal

// An audit line's time, "2026-12-04T18:20:01.123Z", as milliseconds since
// the epoch: what the reader checks and the OCSF view writes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace mojoup::sandbox {

// nullopt unless `text` is an RFC 3339 time in UTC ("Z"), to the second or
// with a fraction of up to nine digits.
std::optional<std::int64_t> AuditTimeMillis(std::string_view text);

}  // namespace mojoup::sandbox

#include "mojoup/internal/rfc3339.h"

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace mojoup::internal {

std::string Rfc3339(std::chrono::system_clock::time_point when) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromChrono(when), absl::UTCTimeZone());
}

std::string Rfc3339Millis(std::chrono::system_clock::time_point when) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromChrono(when), absl::UTCTimeZone());
}

}  // namespace mojoup::internal

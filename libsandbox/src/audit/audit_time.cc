#include "audit/audit_time.h"

#include <ctime>
#include <string>

namespace mojoup::sandbox {
namespace {

// The number of `width` digits at `at`, advancing it; nullopt when they are
// not all digits.
std::optional<int> AuditDigits(std::string_view text, std::size_t& at, std::size_t width) {
  if (at + width > text.size()) return std::nullopt;
  int value = 0;
  for (std::size_t i = 0; i < width; ++i) {
    const char c = text[at + i];
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  at += width;
  return value;
}

bool AuditExpect(std::string_view text, std::size_t& at, char c) {
  if (at >= text.size() || text[at] != c) return false;
  ++at;
  return true;
}

}  // namespace

std::optional<std::int64_t> AuditTimeMillis(std::string_view text) {
  std::size_t at = 0;
  std::tm tm{};
  auto year = AuditDigits(text, at, 4);
  if (!year || !AuditExpect(text, at, '-')) return std::nullopt;
  auto month = AuditDigits(text, at, 2);
  if (!month || !AuditExpect(text, at, '-')) return std::nullopt;
  auto day = AuditDigits(text, at, 2);
  if (!day || !AuditExpect(text, at, 'T')) return std::nullopt;
  auto hour = AuditDigits(text, at, 2);
  if (!hour || !AuditExpect(text, at, ':')) return std::nullopt;
  auto minute = AuditDigits(text, at, 2);
  if (!minute || !AuditExpect(text, at, ':')) return std::nullopt;
  auto second = AuditDigits(text, at, 2);
  if (!second) return std::nullopt;
  if (*month < 1 || *month > 12 || *day < 1 || *day > 31 || *hour > 23 || *minute > 59 ||
      *second > 60) {
    return std::nullopt;
  }
  std::int64_t millis = 0;
  if (AuditExpect(text, at, '.')) {
    std::size_t digits = 0;
    for (int scale = 100; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at) {
      millis += (text[at] - '0') * scale;
      scale /= 10;
      ++digits;
    }
    if (digits == 0 || digits > 9) return std::nullopt;
  }
  if (!AuditExpect(text, at, 'Z') || at != text.size()) return std::nullopt;
  tm.tm_year = *year - 1900;
  tm.tm_mon = *month - 1;
  tm.tm_mday = *day;
  tm.tm_hour = *hour;
  tm.tm_min = *minute;
  tm.tm_sec = *second;
  const std::time_t seconds = ::timegm(&tm);
  return static_cast<std::int64_t>(seconds) * 1000 + millis;
}

}  // namespace mojoup::sandbox

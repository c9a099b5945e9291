#include "mojoup/internal/rfc3339.h"

#include <catch2/catch.hpp>
#include <chrono>

using mojoup::internal::Rfc3339;
using mojoup::internal::Rfc3339Millis;

namespace {

std::chrono::system_clock::time_point At(std::int64_t ms) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
}

}  // namespace

TEST_CASE("Rfc3339 writes UTC to the second and drops what is below it", "[rfc3339]") {
  REQUIRE(Rfc3339(At(0)) == "1970-01-01T00:00:00Z");
  // 2026-11-30T10:00:00Z is 1796032800 seconds after the epoch.
  REQUIRE(Rfc3339(At(1796032800000)) == "2026-11-30T10:00:00Z");
  REQUIRE(Rfc3339(At(1796032800999)) == "2026-11-30T10:00:00Z");
  // A leap day, and the last second of a year.
  REQUIRE(Rfc3339(At(1709164800000)) == "2024-02-29T00:00:00Z");
  REQUIRE(Rfc3339(At(1735689599000)) == "2024-12-31T23:59:59Z");
}

TEST_CASE("Rfc3339Millis writes three digits of the second's fraction, always", "[rfc3339]") {
  REQUIRE(Rfc3339Millis(At(0)) == "1970-01-01T00:00:00.000Z");
  REQUIRE(Rfc3339Millis(At(1796032800042)) == "2026-11-30T10:00:00.042Z");
  REQUIRE(Rfc3339Millis(At(1796032800999)) == "2026-11-30T10:00:00.999Z");
  // Microseconds below the millisecond are dropped, not rounded.
  REQUIRE(Rfc3339Millis(std::chrono::system_clock::time_point(
              std::chrono::microseconds(1796032800999999))) == "2026-11-30T10:00:00.999Z");
}

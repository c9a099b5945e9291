// The proxy's wire formats, byte for byte: its audit lines, its 403 refusal
// bodies and its other error bodies, compared with the files under
// tests/golden/credproxy/. Readers of the audit log and agents reading a
// refusal parse these bytes; a change here is a change of format.
#include "../support/golden.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "audit.h"
#include "refusal.h"

using namespace mojoup::credproxy;

namespace {

// 2026-12-04T10:00:00.042Z
std::chrono::system_clock::time_point Started() {
  return std::chrono::system_clock::time_point(std::chrono::seconds(1796378400)) +
         std::chrono::milliseconds(42);
}

AuditRecord Record() {
  AuditRecord record;
  record.session = "0123456789abcdef";
  record.method = "CONNECT";
  record.host = "api.anthropic.com";
  record.port = 443;
  record.started = Started();
  record.clock = std::chrono::steady_clock::time_point{};
  return record;
}

}  // namespace

TEST_CASE("an audit line with every member keeps its bytes", "[audit]") {
  AuditRecord record = Record();
  record.status = 201;
  record.bytes_up = 18446744073709551615ULL;
  record.bytes_down = 1234567;
  const auto now = record.clock + std::chrono::microseconds(12250);
  CHECK_GOLDEN("credproxy/audit.full.json",
               record.Line("intercept", "allow \"api.anthropic.com\":443",
                           "swapped ANTHROPIC_API_KEY\tin \xc3\xa9t\xc3\xa9 \x01 header", now));
}

TEST_CASE("an audit line leaves out an empty detail and a status of 0", "[audit]") {
  AuditRecord record = Record();
  record.method = "";
  record.host = "";
  record.port = 0;
  CHECK_GOLDEN("credproxy/audit.short.json",
               record.Line("deny", "", "", record.clock + std::chrono::microseconds(3)));
}

TEST_CASE("a refusal body keeps its bytes", "[refusal]") {
  CHECK_GOLDEN(
      "credproxy/refusal.blocked.json",
      Refusal::BlockedByPolicy("evil.example.com", 8443, "deny evil.example.com:*").Json());
  Refusal odd{"code \"q\"", "h\xc3\xb4st\n", 65535, "rule\\x\x1f", "m\xe2\x80\xa8"};
  CHECK_GOLDEN("credproxy/refusal.escaped.json", odd.Json());
  CHECK_GOLDEN("credproxy/refusal.empty.json", Refusal{}.Json());
}

TEST_CASE("an error body keeps its bytes", "[refusal]") {
  CHECK_GOLDEN("credproxy/error.json",
               ErrorJson(502, "the upstream \"api\" closed\tthe connection"));
  CHECK_GOLDEN("credproxy/error.negative.json", ErrorJson(-1, ""));
}

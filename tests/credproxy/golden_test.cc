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

AuditRecord Record() {
  AuditRecord record;
  record.method = "CONNECT";
  record.host = "api.anthropic.com";
  record.port = 443;
  record.clock = std::chrono::steady_clock::time_point{};
  return record;
}

// The line the log writes for `event`, as the first of session 0123456789abcdef.
std::string Written(AuditEvent event) {
  event.seq = 1;
  event.time = "2026-12-04T10:00:00.042Z";
  event.session = "0123456789abcdef";
  return AuditLine(event);
}

}  // namespace

TEST_CASE("an egress line with every member keeps its bytes", "[audit]") {
  AuditRecord record = Record();
  record.method = "POST";
  record.rule = "allow \"api.anthropic.com\":443 (repo: /src/app/.mojoup/policy.json)";
  record.source = "repo: /src/app/.mojoup/policy.json";
  record.path = AuditPath("/v1/messages?beta=true#frag");
  record.credentials = {"ANTHROPIC_API_KEY", "OTHER_KEY"};
  record.approval = "3";
  record.status = 201;
  record.bytes_up = 18446744073709551615ULL;
  record.bytes_down = 1234567;
  const auto now = record.clock + std::chrono::microseconds(12250);
  CHECK_GOLDEN("credproxy/audit.full.json",
               Written(record.Event("deny", "credential-host-mismatch",
                                    "swapped\tin \xc3\xa9t\xc3\xa9 \x01 header", now)));
}

TEST_CASE("an egress line leaves out what is empty or zero", "[audit]") {
  AuditRecord record = Record();
  record.method = "";
  record.host = "";
  record.port = 0;
  CHECK_GOLDEN("credproxy/audit.short.json",
               Written(record.Event("deny", "", "", record.clock + std::chrono::microseconds(3))));
}

TEST_CASE("an audit path drops the query and the fragment", "[audit]") {
  CHECK(AuditPath("/v1/messages?key=sk-secret") == "/v1/messages");
  CHECK(AuditPath("/a/b#c?d") == "/a/b");
  CHECK(AuditPath("/") == "/");
  CHECK(AuditPath("") == "");
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

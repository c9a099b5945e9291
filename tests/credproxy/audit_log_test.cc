// The audit log: its lines byte for byte, seq without gaps under several
// writers, the bound with coalescing and "audit.limit", "session.end" kept
// with its totals, and how its files are opened.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "../support/golden.h"
#include "../support/test_support.h"
#include "mojoup/credproxy/audit.h"

using namespace mojoup::credproxy;
using Catch::Matchers::Contains;
using mojoup::test::Slurp;
using mojoup::test::TempDir;

namespace {

// 2026-12-04T10:00:00.042Z
std::chrono::system_clock::time_point Fixed() {
  return std::chrono::system_clock::time_point(std::chrono::seconds(1796378400)) +
         std::chrono::milliseconds(42);
}

AuditOptions Options(const TempDir& dir) {
  AuditOptions options;
  options.path = dir / "0123456789abcdef.jsonl";
  options.session = "0123456789abcdef";
  options.now = Fixed;
  return options;
}

AuditEvent Egress(const std::string& host, const std::string& decision) {
  AuditEvent event;
  event.event = "egress";
  event.method = "CONNECT";
  event.host = host;
  event.port = 443;
  event.decision = decision;
  return event;
}

std::vector<AuditEvent> ReadBack(const std::string& path) {
  std::vector<AuditEvent> events;
  std::istringstream lines(Slurp(path));
  for (std::string line; std::getline(lines, line);) {
    auto event = ParseAuditLine(line);
    REQUIRE(event.ok());
    events.push_back(*std::move(event));
  }
  return events;
}

// The file's last line, without its newline.
std::string LastLine(const std::string& path) {
  std::string text = Slurp(path);
  REQUIRE(!text.empty());
  REQUIRE(text.back() == '\n');
  text.pop_back();
  return text.substr(text.rfind('\n') + 1);
}

void RequireNoGaps(const std::vector<AuditEvent>& events) {
  for (std::size_t i = 0; i < events.size(); ++i) REQUIRE(events[i].seq == i + 1);
}

}  // namespace

TEST_CASE("audit lines keep their bytes", "[audit]") {
  AuditEvent egress = Egress("api.anthropic.com", "deny");
  egress.seq = 7;
  egress.time = "2026-12-04T10:00:00.042Z";
  egress.session = "0123456789abcdef";
  egress.method = "POST";
  egress.reason = "credential-host-mismatch";
  egress.rule = "allow api.anthropic.com:443 (repo: /src/app/.mojoup/policy.json)";
  egress.source = "repo: /src/app/.mojoup/policy.json";
  egress.path = "/v1/messages";
  egress.credentials = {"ANTHROPIC_API_KEY", "OTHER\t\xc3\xa9"};
  egress.approval = "3";
  egress.status = 201;
  egress.bytes_up = 18446744073709551615ULL;
  egress.bytes_down = 1234567;
  egress.duration_ms = 12.25;
  egress.detail = "a \x01 detail";
  CHECK_GOLDEN("credproxy/audit.egress.json", AuditLine(egress));

  AuditEvent start;
  start.seq = 1;
  start.time = "2026-12-04T10:00:00.042Z";
  start.session = "0123456789abcdef";
  start.event = "session.start";
  start.user = "alice";
  start.uid = 0;
  start.repo = "/src/app";
  start.tool = "claude-code";
  start.runtime = "docker";
  start.image = "mojoup/agent:1";
  start.ask = false;
  CHECK_GOLDEN("credproxy/audit.session-start.json", AuditLine(start));

  TempDir dir;
  auto log = AuditLog::Open(Options(dir));
  REQUIRE(log.ok());
  (*log)->Write(Egress("a.test", "allow"));
  (*log)->Write(Egress("b.test", "deny"));
  (*log)->Write(Egress("c.test", "error"));
  (*log)->Write({.event = "session.end", .exit_code = 0});
  CHECK_GOLDEN("credproxy/audit.session-end.json", LastLine(dir / "0123456789abcdef.jsonl"));
}

TEST_CASE("an audit line reads back as the event written", "[audit]") {
  AuditEvent event = Egress("api.test", "allow");
  event.seq = 3;
  event.time = "2026-12-04T10:00:00.042Z";
  event.session = "s";
  event.credentials = {"KEY"};
  event.exit_code = 0;
  auto read = ParseAuditLine(AuditLine(event));
  REQUIRE(read.ok());
  CHECK(AuditLine(*read) == AuditLine(event));
  CHECK(read->exit_code == 0);

  CHECK(ParseAuditLine(R"({"schema":"other","seq":1,"time":"t","session":"s","event":"e"})")
            .status()
            .message() == "the audit line: field \"schema\" must be \"mojoup.audit/v1\"");
  CHECK_THAT(std::string(ParseAuditLine(
                             R"({"schema":"mojoup.audit/v1","time":"t","session":"s","event":"e"})")
                             .status()
                             .message()),
             Contains("field \"seq\" is missing"));
  CHECK_FALSE(ParseAuditLine(R"({"schema":"mojoup.audit/v1","seq":1,"time":"t","session":"s",)"
                             R"("event":"egress","port":70000})")
                  .ok());
  CHECK_FALSE(ParseAuditLine(std::string(70 * 1024, ' ') + "{}").ok());
}

TEST_CASE("seq rises by one per line under several writers", "[audit]") {
  TempDir dir;
  AuditOptions options = Options(dir);
  options.mirror = dir / "mirror.jsonl";
  auto log = AuditLog::Open(options);
  REQUIRE(log.ok());
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < 250; ++i) {
        (*log)->Write(Egress("h" + std::to_string(t) + "-" + std::to_string(i) + ".test",
                             i % 2 == 0 ? "allow" : "deny"));
      }
    });
  }
  for (auto& writer : writers) writer.join();
  CHECK((*log)->last_seq() == 1000);
  const auto events = ReadBack(options.path);
  REQUIRE(events.size() == 1000);
  RequireNoGaps(events);
  CHECK((*log)->counts().allowed == 500);
  CHECK((*log)->counts().denied == 500);
  // The mirror has the very same bytes.
  CHECK(Slurp(options.mirror) == Slurp(options.path));
}

TEST_CASE("near the bound identical events coalesce, and at it one audit.limit line is written",
          "[audit]") {
  TempDir dir;
  AuditOptions options = Options(dir);
  options.max_bytes = 8192;
  auto opened = AuditLog::Open(options);
  REQUIRE(opened.ok());
  AuditLog& log = **opened;
  std::uint64_t decisions = 0;
  // Up to 3/4 of the bound, repeats are written.
  while (log.counts().coalesced == 0) {
    AuditEvent event = Egress("same.test", "deny");
    event.duration_ms = static_cast<double>(log.last_seq());  // ignored when comparing
    log.Write(event);
    ++decisions;
  }
  const std::uint64_t repeated = log.last_seq();
  for (int i = 0; i < 4; ++i, ++decisions) log.Write(Egress("same.test", "deny"));
  CHECK(log.counts().coalesced == 5);
  CHECK(log.last_seq() == repeated);
  log.Write(Egress("other.test", "allow"));  // writes the count, then itself
  ++decisions;
  CHECK(log.last_seq() == repeated + 2);
  // Different events go on to the bound, then are counted as dropped.
  for (int i = 0; log.counts().dropped < 10; ++i, ++decisions) {
    log.Write(Egress("host" + std::to_string(i) + ".test", "allow"));
  }
  const std::uint64_t at_limit = log.last_seq();
  log.Write(Egress("late.test", "allow"));
  ++decisions;
  CHECK(log.last_seq() == at_limit);
  log.Write({.event = "session.end", .exit_code = 3});
  log.Close();

  const auto events = ReadBack(options.path);
  RequireNoGaps(events);
  CHECK(Slurp(options.path).size() <= options.max_bytes);
  REQUIRE(events.size() >= 4);
  const AuditEvent& coalesced = events[repeated];
  CHECK(coalesced.event == "audit.coalesced");
  CHECK(coalesced.count == 5);
  CHECK(coalesced.of == repeated);
  CHECK(events[repeated + 1].host == "other.test");
  int limits = 0;
  for (const AuditEvent& event : events) limits += event.event == "audit.limit" ? 1 : 0;
  CHECK(limits == 1);
  CHECK(events[events.size() - 2].event == "audit.limit");
  CHECK(events[events.size() - 2].max_bytes == 8192);
  const AuditEvent& end = events.back();
  CHECK(end.event == "session.end");
  CHECK(end.exit_code == 3);
  CHECK(end.coalesced == 5);
  CHECK(end.dropped == 11);
  CHECK(end.allowed == log.counts().allowed);
  CHECK(end.denied == log.counts().denied);
  CHECK(end.allowed + end.denied == decisions);
}

TEST_CASE("closing the log writes a pending coalesced count", "[audit]") {
  TempDir dir;
  AuditOptions options = Options(dir);
  options.max_bytes = 8192;
  auto log = AuditLog::Open(options);
  REQUIRE(log.ok());
  while ((*log)->counts().coalesced < 2) (*log)->Write(Egress("same.test", "allow"));
  const std::uint64_t repeated = (*log)->last_seq();
  (*log)->Close();
  const auto events = ReadBack(options.path);
  RequireNoGaps(events);
  REQUIRE(events.size() == repeated + 1);
  CHECK(events.back().event == "audit.coalesced");
  CHECK(events.back().count == 2);
  CHECK(events.back().of == repeated);
}

TEST_CASE("a session's audit file is created new, never followed or appended to", "[audit]") {
  TempDir dir;
  AuditOptions options = Options(dir);
  auto log = AuditLog::Open(options);
  REQUIRE(log.ok());
  struct stat st {};
  REQUIRE(lstat(options.path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);

  auto again = AuditLog::Open(options);
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().message() == options.path +
                                        ": the audit log exists already; a session's audit is "
                                        "never appended to");

  options.path = dir / "link.jsonl";
  REQUIRE(symlink((dir / "target").c_str(), options.path.c_str()) == 0);
  auto linked = AuditLog::Open(options);
  REQUIRE_FALSE(linked.ok());
  CHECK_THAT(std::string(linked.status().message()), Contains(options.path));
  CHECK(access((dir / "target").c_str(), F_OK) != 0);

  // A mirror is appended to, but not through a symlink either.
  options.path.clear();
  options.mirror = dir / "link.jsonl";
  auto mirrored = AuditLog::Open(options);
  REQUIRE_FALSE(mirrored.ok());
  CHECK_THAT(std::string(mirrored.status().message()),
             Contains(options.mirror + ": cannot open the audit log"));
  CHECK(access((dir / "target").c_str(), F_OK) != 0);
}

TEST_CASE("a mirror-only log appends to an existing file", "[audit]") {
  TempDir dir;
  AuditOptions options;
  options.mirror = dir / "audit.log";
  options.session = "proxy";
  { std::ofstream(options.mirror) << "earlier\n"; }
  auto log = AuditLog::Open(options);
  REQUIRE(log.ok());
  (*log)->Write(Egress("a.test", "allow"));
  const std::string text = Slurp(options.mirror);
  CHECK_THAT(text,
             Catch::Matchers::StartsWith("earlier\n{\"schema\":\"mojoup.audit/v1\",\"seq\":1,"));
}

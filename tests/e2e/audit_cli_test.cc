// `mojoup-node audit` through the built CLI, on audit files laid out as a
// session leaves them in the node's state directory.
#include <rapidjson/document.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <sstream>

#include "../support/fake_node.h"
#include "../support/test_support.h"

namespace audit_cli_test {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using mojoup::test::FakeNode;
using mojoup::test::Run;

constexpr const char* kId = "0123456789abcdef";

std::string Line(int seq, const std::string& event, const std::string& more) {
  return "{\"schema\":\"mojoup.audit/v1\",\"seq\":" + std::to_string(seq) +
         ",\"time\":\"2026-12-04T18:20:01.123Z\",\"session\":\"" + kId + "\",\"event\":\"" + event +
         "\"" + (more.empty() ? "" : "," + more) + "}";
}

const std::string kStart = Line(1, "session.start", R"("user":"me","uid":1000,"tool":"claude")");
const std::string kEgress =
    Line(2, "egress", R"("method":"GET","host":"example.com","port":443,"decision":"allow")");
const std::string kEnd = Line(3, "session.end", R"("exit_code":0,"allowed":1)");

// A node whose state directory holds session kId's audit, `text`.
struct AuditNode : FakeNode {
  explicit AuditNode(const std::string& text) {
    env.push_back("MOJOUP_STATE_DIR=" + dir / "state");
    REQUIRE(::mkdir((dir / "state").c_str(), 0700) == 0);
    REQUIRE(::mkdir((dir / "state/audit").c_str(), 0700) == 0);
    mojoup::test::WriteFile(dir / "state/audit/" + kId + ".jsonl", text);
  }
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_CASE("cli: audit prints a session's lines as they were written", "[cli][audit]") {
  AuditNode node(kStart + "\n" + kEgress + "\n" + kEnd + "\n");
  Run run = node.Cli({"audit", kId});
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  CHECK(run.result.out == kStart + "\n" + kEgress + "\n" + kEnd + "\n");
  run = node.Cli({"audit", kId, "--since", "2"});
  REQUIRE(run.result.exit_code == 0);
  CHECK(run.result.out == kEnd + "\n");
  // The session has ended: following prints what there is and stops.
  run = node.Cli({"audit", kId, "--follow", "--since", "1"});
  REQUIRE(run.result.exit_code == 0);
  CHECK(run.result.out == kEgress + "\n" + kEnd + "\n");
}

TEST_CASE("cli: audit --follow of a session gone without its end line stops", "[cli][audit]") {
  AuditNode node(kStart + "\n" + kEgress + "\n");
  Run run = node.Cli({"audit", kId, "--follow"});
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  CHECK(Lines(run.result.out).size() == 2);
}

TEST_CASE("cli: audit --ocsf prints one OCSF 1.8 event per line", "[cli][audit]") {
  AuditNode node(kStart + "\n" + kEgress + "\n" + kEnd + "\n");
  Run run = node.Cli({"audit", kId, "--ocsf"});
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  const std::vector<std::string> lines = Lines(run.result.out);
  REQUIRE(lines.size() == 3);
  const int classes[] = {1007, 4002, 1007};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    rapidjson::Document event;
    event.Parse(lines[i].c_str());
    REQUIRE_FALSE(event.HasParseError());
    CHECK(event["class_uid"].GetInt() == classes[i]);
    CHECK(std::string(event["metadata"]["version"].GetString()) == "1.8.0");
    CHECK(event["metadata"]["sequence"].GetInt() == static_cast<int>(i) + 1);
  }
}

TEST_CASE("cli: audit refuses bad input with exit 2, an unknown session with 1", "[cli][audit]") {
  AuditNode node(kStart + "\n");
  Run run = node.Cli({"audit", "../../etc/passwd"});
  CHECK(run.result.exit_code == 2);
  CHECK_THAT(run.result.err, Contains("\"../../etc/passwd\" is not 16 lowercase hex digits"));
  run = node.Cli({"audit", kId, "--since", "two"});
  CHECK(run.result.exit_code == 2);
  CHECK_THAT(run.result.err, Contains("--since \"two\" is not a line number"));
  run = node.Cli({"audit"});
  CHECK(run.result.exit_code == 2);
  CHECK_THAT(run.result.err, Contains("give one session ID"));
  run = node.Cli({"audit", "fedcba9876543210"});
  CHECK(run.result.exit_code == 1);
  CHECK_THAT(run.result.err,
             StartsWith("mojoup-node audit: no audit of session fedcba9876543210 on this node"));
}

TEST_CASE("cli: audit names the file and line of a line that does not pass", "[cli][audit]") {
  AuditNode node(kStart + "\n" + Line(3, "notice", "") + "\n");
  Run run = node.Cli({"audit", kId});
  CHECK(run.result.exit_code == 2);
  CHECK_THAT(run.result.err, Contains(std::string("/state/audit/") + kId +
                                      ".jsonl:2: field \"seq\" must be 2, not 3"));
  CHECK(run.result.out.empty());
}

}  // namespace audit_cli_test

// Escape suite: ask. From inside a real native session that may ask the
// operator, as a normal user, the agent floods the operator with requests,
// answers its own approvals every way it can reach the proxy, and looks for
// the control socket and the audit. None of it may grant anything.
#include <rapidjson/document.h>

#include <sstream>

#include "../support/echo_server.h"
#include "../support/real_user.h"
#include "../support/test_support.h"

namespace {

using Catch::Matchers::Contains;
using mojoup::test::Described;
using mojoup::test::EchoServer;
using mojoup::test::RealUser;
using mojoup::test::Run;
using mojoup::test::UserNode;

// The session's id, from run's notice "... answer with `mojoup-node approve
// SESSION ID`".
std::string SessionOf(const std::string& err) {
  const std::string marker = "mojoup-node approve ";
  const std::size_t at = err.find(marker);
  REQUIRE(at != std::string::npos);
  return err.substr(at + marker.size(), 16);
}

// "EVENT HOST STATE BY" for each approval line of an audit.
std::vector<std::string> ApprovalLines(const std::string& audit) {
  std::vector<std::string> out;
  std::istringstream lines(audit);
  for (std::string line; std::getline(lines, line);) {
    rapidjson::Document doc;
    doc.Parse(line.c_str());
    REQUIRE_FALSE(doc.HasParseError());
    const std::string event = doc["event"].GetString();
    if (event.rfind("approval.", 0) != 0) continue;
    auto text = [&](const char* name) {
      return doc.HasMember(name) ? std::string(doc[name].GetString()) : std::string("-");
    };
    out.push_back(event + " " + text("host") + " " + text("state") + " " + text("by"));
  }
  return out;
}

}  // namespace

TEST_CASE("escape: an asking agent can neither flood the operator nor answer for them",
          "[escape][ask]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"node.proxy.ask", "on"},
                                                        {"node.proxy.ask_hold", "1"},
                                                        {"node.proxy.ask_max_pending", "2"}}) {
    Run set = node.Cli({"config", "set", key, value});
    INFO(Described(set));
    REQUIRE(set.result.exit_code == 0);
  }
  node.Policy(R"({"agents": {"network": {"ask": true}}})");
  EchoServer upstream;
  const std::string port = std::to_string(upstream.port());
  std::vector<std::string> flags;
  for (int i = 1; i <= 5; ++i) {
    flags.insert(flags.end(),
                 {"--resolve", "a" + std::to_string(i) + ".test:" + port + ":127.0.0.1"});
  }
  const std::string decision = R"('{"decision":"approve","scope":"session"}')";
  Run run = node.Sh(
      // Five hosts against a cap of two: two are asked, three refused unasked.
      "for h in a1 a2 a3 a4 a5; do curl -s -o /dev/null -D - http://$h.test:" + port +
          "/ | tr -d '\\r' | sed -n 's/^X-Mojoup-Proxy-Error: /'$h': /p'; done; "
          // The agent answers its own approval through the proxy: base-URL
          // form and absolute form.
          "curl -s -o /dev/null -D - -X POST -d " +
          decision +
          " http://127.0.0.1:3128/v1/approvals/1 | tr -d '\\r' | sed -n "
          "'s/^HTTP\\/1.1 /base: /p; s/^X-Mojoup-Proxy-Error: /base: /p'; "
          "curl -s -o /dev/null -D - --noproxy '' -x \"$HTTP_PROXY\" -X POST -d " +
          decision +
          " http://localhost/v1/approvals/1 | tr -d '\\r' | sed -n "
          "'s/^HTTP\\/1.1 /absolute: /p; s/^X-Mojoup-Proxy-Error: /absolute: /p'; "
          // The control socket and the audit are nowhere in the sandbox.
          "echo found:$(find / \\( -path /proc -o -path /sys \\) -prune -o \\( -name "
          "control.sock -o -name '*.jsonl' \\) -print 2>/dev/null | wc -l); "
          // Still pending: nothing the agent did granted it.
          "curl -s -o /dev/null -D - http://a1.test:" +
          port + "/ | tr -d '\\r' | sed -n 's/^X-Mojoup-Proxy-Error: /again: /p'",
      flags);
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("a1: approval-pending\na2: approval-pending\n"
                                        "a3: approval-limit\na4: approval-limit\n"
                                        "a5: approval-limit\n"));
  // Base-URL form: "v1" is taken for a host, which does not resolve.
  REQUIRE_THAT(run.result.out, Contains("base: 502 Bad Gateway\n"));
  REQUIRE_THAT(run.result.out, Contains("absolute: 403 Forbidden\nabsolute: blocked-address\n"));
  REQUIRE_THAT(run.result.out, Contains("found:0\n"));
  REQUIRE_THAT(run.result.out, Contains("again: approval-pending"));
  REQUIRE(upstream.seen().empty());
  REQUIRE(node.Leftovers() == 0);

  // The operator was asked twice, and nothing was approved: both expired
  // with the session.
  Run audit = node.Cli({"audit", SessionOf(run.result.err)});
  INFO(Described(audit));
  REQUIRE(audit.result.exit_code == 0);
  REQUIRE(ApprovalLines(audit.result.out) ==
          std::vector<std::string>{"approval.request a1.test - -", "approval.request a2.test - -",
                                   "approval.decision a1.test expired session end",
                                   "approval.decision a2.test expired session end"});
}

TEST_CASE("escape: under a hub that closed the list nothing is asked, whatever the repository says",
          "[escape][ask]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  const std::string org = node.root + "/hub/org.json";
  user->Write(org, R"({"agents": {"network": {"extend": false}}})");
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"node.proxy.ask", "on"}, {"node.proxy.ask_hold", "1"}, {"policy.org", org}}) {
    Run set = node.Cli({"config", "set", key, value});
    INFO(Described(set));
    REQUIRE(set.result.exit_code == 0);
  }
  // The repository, which the agent may write, turns ask on and allows a
  // host: the closed list admits neither.
  node.Policy(R"({"agents": {"network": {"ask": true, "allow": [{"host": "open.test"}]}}})");
  EchoServer upstream;
  const std::string port = std::to_string(upstream.port());
  Run run = node.Sh("for h in open asked; do curl -s -o /dev/null -D - http://$h.test:" + port +
                        "/ | tr -d '\\r' | sed -n 's/^X-Mojoup-Proxy-Error: /'$h': /p'; done",
                    {"--resolve", "open.test:" + port + ":127.0.0.1", "--resolve",
                     "asked.test:" + port + ":127.0.0.1"});
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(run.result.out == "open: blocked-by-policy\nasked: blocked-by-policy\n");
  REQUIRE_THAT(run.result.err, Contains("ask is off: org policy " + org +
                                        " closed the list with \"extend\": false"));
  REQUIRE(upstream.seen().empty());
  REQUIRE(node.Leftovers() == 0);
}

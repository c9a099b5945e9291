#include "mojoup/policy/explain.h"

#include <catch2/catch.hpp>

#include "../support/golden.h"
#include "fmt/format.h"

using namespace mojoup::policy;

namespace {

// Every member explain's JSON has, with characters a writer must escape.
EffectivePolicy Example() {
  EffectivePolicy policy;
  policy.sources = {{Level::kOrg, "/etc/mojoup/org \"hub\".json"},
                    {Level::kRepo, "/work/repo/.mojoup/policy.json"}};
  policy.sandbox = {SandboxAsk::kRequired, {Level::kOrg, "/etc/mojoup/org.json"}};
  policy.allow = {{{"api.github.com", {443}}, {Level::kRepo, "/work/repo/.mojoup/policy.json"}},
                  {{"*.npmjs.org", {443, 80}}, {Level::kTeam, "/etc/team.json"}}};
  policy.deny = {{{"10.0.0.7", {22}}, {Level::kOrg, "/etc/mojoup/org.json"}}};
  policy.dropped = {{{{"pypi.org", {443}}, {Level::kRepo, "/work/repo/.mojoup/policy.json"}},
                     {Level::kOrg, "/etc/mojoup/org.json"}}};
  policy.tool_services = {false, {Level::kTeam, "/etc/team.json"}};
  return policy;
}

SandboxDecision Decided() {
  SandboxDecision decision;
  decision.result = SandboxDecision::Result::kRefused;
  decision.reason = "the org policy requires a sandbox\tand this node has none";
  decision.asked = {SandboxAsk::kRequired, {Level::kOrg, "/etc/mojoup/org.json"}};
  return decision;
}

}  // namespace

TEST_CASE("explain's JSON keeps the bytes of schema mojoup.policy/v1", "[explain]") {
  CHECK_GOLDEN("policy/mojoup.policy.v1.json", ExplainJson(Example(), Decided()));
  CHECK_GOLDEN("policy/mojoup.policy.v1.empty.json",
               ExplainJson(EffectivePolicy{}, SandboxDecision{}));
}

TEST_CASE("explain's JSON keeps the bytes of a host check", "[explain]") {
  const HostCheck denied{"pypi.org", 443, "", false, "no rule allows it", "left out \"here\""};
  CHECK_GOLDEN("policy/mojoup.policy.v1.host_check.json",
               ExplainJson(Example(), Decided(), denied));
  const HostCheck allowed{"api.github.com", 8443, "claude", true, "allow api.github.com:443", ""};
  CHECK_GOLDEN("policy/mojoup.policy.v1.host_allowed.json",
               ExplainJson(Example(), Decided(), allowed));
}

namespace {

// The same policy, with ask turned on by the repository, off by the team's
// word, or forbidden by a closed list.
EffectivePolicy Asked(std::string_view how) {
  EffectivePolicy policy = Example();
  policy.dropped.clear();
  const Source repo{Level::kRepo, "/work/repo/.mojoup/policy.json"};
  const Source org{Level::kOrg, "/etc/mojoup/org.json"};
  if (how == "on") policy.ask = {true, repo};
  if (how == "off") policy.ask = {false, {Level::kTeam, "/etc/team.json"}};
  if (how == "closed") {
    policy.ask = {false, org};
    policy.closed = org;
  }
  return policy;
}

}  // namespace

TEST_CASE("explain shows the policy's ask and its source", "[explain]") {
  for (std::string_view how : {"on", "off", "closed"}) {
    INFO(how);
    CHECK_GOLDEN(fmt::format("policy/mojoup.policy.v1.ask_{}.json", how),
                 ExplainJson(Asked(how), Decided()));
  }
  CHECK_THAT(ExplainText(Asked("on"), Decided()),
             Catch::Matchers::Contains("\nask:            on (from repo)\n"));
  const AskDecision off{false, "ask is off: node.proxy.ask is off"};
  CHECK_THAT(ExplainText(Asked("on"), Decided(), std::nullopt, off),
             Catch::Matchers::Contains(
                 "\nask:            on (from repo)\n  on this node: ask is off: node.proxy.ask is "
                 "off\n"));
  CHECK_THAT(ExplainText(Asked("closed"), Decided()),
             Catch::Matchers::Contains("\nask:            off (from org)\n"));
}

namespace {

// A session's answers: pypi.org approved for the session, files.test once
// (not used yet), no.test denied, and a grant for a host a rule denies.
SessionRules Answered() {
  SessionRules session;
  session.session = "0123456789abcdef";
  session.Add({"3", "pypi.org", 443, "session", "alice", "2026-12-04T21:00:00Z", ""}, true);
  session.Add({"4", "files.test", 8443, "once", "alice", "2026-12-04T21:01:00Z", ""}, true);
  session.Add({"5", "no.test", 443, "", "bob", "2026-12-04T21:02:00Z", "not \"here\""}, false);
  session.Add({"6", "10.0.0.7", 22, "session", "alice", "2026-12-04T21:03:00Z", ""}, true);
  return session;
}

}  // namespace

TEST_CASE("a session's grants and denials decide where no rule does, with their source",
          "[explain]") {
  const EffectivePolicy policy = Asked("on");
  const SessionRules session = Answered();
  HostCheck granted = CheckHost(policy, "", "pypi.org", 443, session);
  CHECK(granted.allowed);
  CHECK(granted.approval == "3");
  CHECK(granted.rule ==
        "session grant: approval 3, approved by alice at 2026-12-04T21:00:00Z, scope session");
  HostCheck denied = CheckHost(policy, "", "no.test", 443, session);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.approval == "5");
  CHECK(denied.rule ==
        "session denial: approval 5, denied by bob at 2026-12-04T21:02:00Z: not "
        "\"here\"");
  // Another port is another destination: asked anew, not granted.
  HostCheck other_port = CheckHost(policy, "", "pypi.org", 80, session);
  CHECK_FALSE(other_port.allowed);
  CHECK(other_port.rule == "no rule allows it");
  CHECK(other_port.approval.empty());
  // A rule decides first: an allow rule, and a deny rule over any grant.
  HostCheck by_rule = CheckHost(policy, "", "api.github.com", 443, session);
  CHECK(by_rule.allowed);
  CHECK(by_rule.approval.empty());
  HostCheck deny_wins = CheckHost(policy, "", "10.0.0.7", 22, session);
  CHECK_FALSE(deny_wins.allowed);
  CHECK_THAT(deny_wins.rule, Catch::Matchers::StartsWith("deny 10.0.0.7:22"));
  // A hub that closed the list admits nothing asked.
  HostCheck closed = CheckHost(Example(), "", "pypi.org", 443, session);
  CHECK_FALSE(closed.allowed);
  CHECK_FALSE(closed.closed_by.empty());
  CHECK(closed.approval.empty());
}

TEST_CASE("explain with a session lists its answers, in text and in JSON", "[explain]") {
  const EffectivePolicy policy = Asked("on");
  const SessionRules session = Answered();
  const HostCheck check = CheckHost(policy, "", "pypi.org", 443, session);
  CHECK_GOLDEN("policy/mojoup.policy.v1.session.json",
               ExplainJson(policy, Decided(), check, session));
  // Without a session the JSON is as it was: the session's members are
  // additions, present only when asked for.
  CHECK(ExplainJson(policy, Decided(), CheckHost(policy, "", "pypi.org", 443)) ==
        ExplainJson(policy, Decided(), CheckHost(policy, "", "pypi.org", 443, SessionRules{})));
  const std::string text = ExplainText(policy, Decided(), check, std::nullopt, session);
  CHECK_THAT(text, Catch::Matchers::Contains(
                       "session 0123456789abcdef (its grants live in the session only):\n"
                       "  allow pypi.org:443  (session grant: approval 3, approved by alice at "
                       "2026-12-04T21:00:00Z, scope session)\n"
                       "  allow files.test:8443  (session grant: approval 4, approved by alice at "
                       "2026-12-04T21:01:00Z, scope once)\n"));
  CHECK_THAT(text, Catch::Matchers::Contains(
                       "  deny  no.test:443  (session denial: approval 5, denied by bob at "
                       "2026-12-04T21:02:00Z: not \"here\")\n"));
  CHECK_THAT(text, Catch::Matchers::EndsWith(
                       "\npypi.org:443: allowed, by session grant: approval 3, approved by alice "
                       "at 2026-12-04T21:00:00Z, scope session\n"));
  CHECK_THAT(
      ExplainText(policy, Decided(), std::nullopt, std::nullopt, SessionRules{"feed", {}, {}}),
      Catch::Matchers::EndsWith("session feed (its grants live in the session only):\n"
                                "  (no grants or denials)\n"));
}

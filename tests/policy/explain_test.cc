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

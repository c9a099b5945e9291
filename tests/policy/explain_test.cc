#include "mojoup/policy/explain.h"

#include <catch2/catch.hpp>

#include "../support/golden.h"

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

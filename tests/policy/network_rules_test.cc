// The network rule matcher: which rule decides, deny first.
#include "mojoup/policy/network_rules.h"

#include <catch2/catch.hpp>

using namespace mojoup::policy;
using Catch::Matchers::Contains;

namespace {

EffectivePolicy PolicyOf(const std::string& text) {
  auto file = ParsePolicy(text, "/src/app/.mojoup/policy.json", Level::kRepo);
  REQUIRE(file.ok());
  return Layer({*file});
}

}  // namespace

TEST_CASE("exact hosts, wildcards and ports", "[rules]") {
  auto rules =
      NetworkRules::Build(PolicyOf(R"({"agents": {"network": {"tool_services": false, "allow": [
        {"host": "api.github.com", "ports": [443]}, {"host": "*.npmjs.org"}]}}})"),
                          "");
  REQUIRE(rules.Check("api.github.com", 443).allowed);
  REQUIRE_FALSE(rules.Check("api.github.com", 80).allowed);
  REQUIRE(rules.Check("API.GitHub.COM.", 443).allowed);
  REQUIRE(rules.Check("registry.npmjs.org", 443).allowed);
  REQUIRE(rules.Check("a.b.npmjs.org", 80).allowed);
  REQUIRE_FALSE(rules.Check("npmjs.org", 443).allowed);  // *. means subdomains only
  REQUIRE_FALSE(rules.Check("evilnpmjs.org", 443).allowed);
  REQUIRE_FALSE(rules.Check("github.com", 443).allowed);
  REQUIRE_FALSE(rules.Check("", 443).allowed);

  auto decision = rules.Check("registry.npmjs.org", 443);
  REQUIRE(decision.Describe() == "allow *.npmjs.org:443,80 (repo: /src/app/.mojoup/policy.json)");
  REQUIRE(rules.Check("example.com", 443).Describe() == "no rule allows it");
}

TEST_CASE("deny wins over allow, and over the tool's own hosts", "[rules]") {
  auto rules = NetworkRules::Build(PolicyOf(R"({"agents": {"network": {
        "allow": [{"host": "*.github.com"}, {"host": "gist.github.com"}],
        "deny": [{"host": "gist.github.com"}, {"host": "api.anthropic.com", "ports": [443]}]}}})"),
                                   "claude-code");
  REQUIRE(rules.Check("docs.github.com", 443).allowed);
  auto decision = rules.Check("gist.github.com", 443);
  REQUIRE_FALSE(decision.allowed);
  REQUIRE(decision.rule != nullptr);
  REQUIRE(decision.rule->deny);
  REQUIRE_THAT(decision.Describe(), Contains("deny gist.github.com:443,80"));

  // The tool's own service host is allowed, except where a deny names it.
  REQUIRE(rules.Check("claude.ai", 443).allowed);
  REQUIRE_THAT(rules.Check("claude.ai", 443).Describe(),
               Contains("claude-code's own service host"));
  REQUIRE_FALSE(rules.Check("api.anthropic.com", 443).allowed);
}

TEST_CASE("tool_services off adds no tool hosts; an unknown tool adds none", "[rules]") {
  auto off = NetworkRules::Build(PolicyOf(R"({"agents": {"network": {"tool_services": false}}})"),
                                 "claude-code");
  REQUIRE_FALSE(off.Check("api.anthropic.com", 443).allowed);
  auto copilot = NetworkRules::Build(PolicyOf("{}"), "copilot");
  REQUIRE(copilot.Check("proxy.individual.githubcopilot.com", 443).allowed);
  REQUIRE_FALSE(NetworkRules::Build(PolicyOf("{}"), "nope").Check("claude.ai", 443).allowed);
}

TEST_CASE("IP literals match the rules that name them", "[rules]") {
  auto rules = NetworkRules::Build(
      PolicyOf(R"({"agents": {"network": {"allow": [{"host": "10.0.0.7", "ports": [8080]},
                                                     {"host": "[fd00::7]", "ports": [8080]}]}}})"),
      "");
  REQUIRE(rules.Check("10.0.0.7", 8080).allowed);
  REQUIRE(rules.Check("[fd00::7]", 8080).allowed);
  REQUIRE_FALSE(rules.Check("10.0.0.8", 8080).allowed);
}

TEST_CASE("ten thousand rules still decide correctly", "[rules]") {
  std::vector<NetworkRules::Rule> list;
  for (int i = 0; i < 10000; ++i) {
    NetworkRules::Rule rule;
    rule.deny = i % 10 == 0;
    rule.host.host = (i % 2 ? "*.d" : "h") + std::to_string(i) + ".example";
    list.push_back(rule);
  }
  auto rules = NetworkRules::FromRules(std::move(list));
  REQUIRE(rules.Check("h2.example", 443).allowed);
  REQUIRE_FALSE(rules.Check("h10.example", 443).allowed);  // a deny
  REQUIRE(rules.Check("x.d9999.example", 80).allowed);
  REQUIRE_FALSE(rules.Check("d9999.example", 80).allowed);
  REQUIRE_FALSE(rules.Check("h3.example", 443).allowed);  // 3 is odd: only *.d3 exists
}

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
  REQUIRE(rules.RuleOn("api.github.com", 443).allowed);
  REQUIRE_FALSE(rules.RuleOn("api.github.com", 80).allowed);
  REQUIRE(rules.RuleOn("API.GitHub.COM.", 443).allowed);
  REQUIRE(rules.RuleOn("registry.npmjs.org", 443).allowed);
  REQUIRE(rules.RuleOn("a.b.npmjs.org", 80).allowed);
  REQUIRE_FALSE(rules.RuleOn("npmjs.org", 443).allowed);  // *. means subdomains only
  REQUIRE_FALSE(rules.RuleOn("evilnpmjs.org", 443).allowed);
  REQUIRE_FALSE(rules.RuleOn("github.com", 443).allowed);
  REQUIRE_FALSE(rules.RuleOn("", 443).allowed);

  auto ruling = rules.RuleOn("registry.npmjs.org", 443);
  REQUIRE(ruling.Describe() == "allow *.npmjs.org:443,80 (repo: /src/app/.mojoup/policy.json)");
  REQUIRE(ruling.rule->DescribeSource() == "repo: /src/app/.mojoup/policy.json");
  REQUIRE(rules.RuleOn("example.com", 443).Describe() == "no rule allows it");
}

TEST_CASE("deny wins over allow, and over the tool's own hosts", "[rules]") {
  auto rules = NetworkRules::Build(PolicyOf(R"({"agents": {"network": {
        "allow": [{"host": "*.github.com"}, {"host": "gist.github.com"}],
        "deny": [{"host": "gist.github.com"}, {"host": "api.anthropic.com", "ports": [443]}]}}})"),
                                   "claude-code");
  REQUIRE(rules.RuleOn("docs.github.com", 443).allowed);
  auto ruling = rules.RuleOn("gist.github.com", 443);
  REQUIRE_FALSE(ruling.allowed);
  REQUIRE(ruling.rule != nullptr);
  REQUIRE(ruling.rule->deny);
  REQUIRE_THAT(ruling.Describe(), Contains("deny gist.github.com:443,80"));

  // The tool's own service host is allowed, except where a deny names it.
  REQUIRE(rules.RuleOn("claude.ai", 443).allowed);
  REQUIRE_THAT(rules.RuleOn("claude.ai", 443).Describe(),
               Contains("claude-code's own service host"));
  REQUIRE(rules.RuleOn("claude.ai", 443).rule->DescribeSource() ==
          "claude-code's own service host");
  REQUIRE_FALSE(rules.RuleOn("api.anthropic.com", 443).allowed);
}

TEST_CASE("a host a rule denies on some port is denied for asking on every port", "[rules]") {
  auto rules = NetworkRules::Build(PolicyOf(R"({"agents": {"network": {"deny": [
        {"host": "gist.github.com", "ports": [443]}, {"host": "*.evil.example"}]}}})"),
                                   "");
  REQUIRE(rules.RuleOn("gist.github.com", 8443).rule == nullptr);
  const NetworkRules::Rule* denying = rules.DenyingHost("Gist.GitHub.com.");
  REQUIRE(denying != nullptr);
  REQUIRE(denying->Describe() == "deny gist.github.com:443 (repo: /src/app/.mojoup/policy.json)");
  REQUIRE(rules.DenyingHost("a.evil.example") != nullptr);
  REQUIRE(rules.DenyingHost("evil.example") == nullptr);
  REQUIRE(rules.DenyingHost("github.com") == nullptr);
  REQUIRE(rules.DenyingHost("not a host") == nullptr);
}

TEST_CASE("tool_services off adds no tool hosts, an unknown tool adds none", "[rules]") {
  auto off = NetworkRules::Build(PolicyOf(R"({"agents": {"network": {"tool_services": false}}})"),
                                 "claude-code");
  REQUIRE_FALSE(off.RuleOn("api.anthropic.com", 443).allowed);
  auto copilot = NetworkRules::Build(PolicyOf("{}"), "copilot");
  REQUIRE(copilot.RuleOn("proxy.individual.githubcopilot.com", 443).allowed);
  REQUIRE_FALSE(NetworkRules::Build(PolicyOf("{}"), "nope").RuleOn("claude.ai", 443).allowed);
}

TEST_CASE("IP literals match the rules that name them", "[rules]") {
  auto rules = NetworkRules::Build(
      PolicyOf(R"({"agents": {"network": {"allow": [{"host": "10.0.0.7", "ports": [8080]},
                                                     {"host": "[fd00::7]", "ports": [8080]}]}}})"),
      "");
  REQUIRE(rules.RuleOn("10.0.0.7", 8080).allowed);
  REQUIRE(rules.RuleOn("[fd00::7]", 8080).allowed);
  REQUIRE(rules.RuleOn("[FD00:0::7]", 8080).allowed);  // any spelling of the same address
  REQUIRE_FALSE(rules.RuleOn("10.0.0.8", 8080).allowed);
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
  REQUIRE(rules.RuleOn("h2.example", 443).allowed);
  REQUIRE_FALSE(rules.RuleOn("h10.example", 443).allowed);  // a deny
  REQUIRE(rules.RuleOn("x.d9999.example", 80).allowed);
  REQUIRE_FALSE(rules.RuleOn("d9999.example", 80).allowed);
  REQUIRE_FALSE(rules.RuleOn("h3.example", 443).allowed);  // 3 is odd: only *.d3 exists
}

TEST_CASE("one spelling of a requested host: lowercase, one trailing dot, canonical IPv6",
          "[rules][hosts]") {
  REQUIRE(CanonicalHost("API.GitHub.com") == "api.github.com");
  REQUIRE(CanonicalHost("api.anthropic.com.") == "api.anthropic.com");
  REQUIRE(CanonicalHost("127.0.0.1.") == "127.0.0.1");
  REQUIRE(CanonicalHost("under_score.test") == "under_score.test");
  REQUIRE(CanonicalHost("[FD00:0::7]") == "[fd00::7]");
  REQUIRE(CanonicalHost("[0:0:0:0:0:ffff:7f00:1]") == "[::ffff:127.0.0.1]");
  REQUIRE(CanonicalHost(std::string(253, 'a')) == std::string(253, 'a'));
  for (std::string_view bad :
       {"", ".", "..", "a..b", ".a", "a..", "api.test..", "a b", "a/b", "a@b", "a:b", "*.a",
        "bücher.example", "[::1", "[::1].", "[1.2.3.4]", "[fe80::1%25eth0]", "[]"}) {
    INFO(bad);
    REQUIRE_FALSE(CanonicalHost(bad).has_value());
  }
  REQUIRE_FALSE(CanonicalHost(std::string(254, 'a')).has_value());
}

TEST_CASE("a host with a trailing dot is the same host, to every rule", "[rules][hosts]") {
  auto rules = NetworkRules::Build(PolicyOf(R"({"agents": {"network": {"tool_services": false,
        "allow": [{"host": "api.anthropic.com."}, {"host": "*.npmjs.org."}],
        "deny": [{"host": "gist.github.com."}]}}})"),
                                   "");
  REQUIRE(rules.rules()[0].host.host == "gist.github.com");
  REQUIRE(rules.rules()[1].host.host == "api.anthropic.com");
  REQUIRE(rules.rules()[2].host.host == "*.npmjs.org");
  REQUIRE(rules.RuleOn("api.anthropic.com.", 443).allowed);
  REQUIRE(rules.RuleOn("registry.npmjs.org.", 443).allowed);
  REQUIRE_FALSE(rules.RuleOn("registry.npmjs.org..", 443).allowed);
  REQUIRE_FALSE(rules.RuleOn(".registry.npmjs.org", 443).allowed);
  REQUIRE_FALSE(rules.RuleOn("registry..npmjs.org", 443).allowed);
}

TEST_CASE("wildcards never match IP addresses, however the rules came to hold them",
          "[rules][addresses]") {
  // The policy parser refuses "*.0.0.1"; rules given directly (and any future
  // source of rules) still must not let it reach loopback or metadata.
  std::vector<NetworkRules::Rule> list;
  for (const char* pattern : {"*.0.0.1", "*.169.254", "*.1", "*.0x1", "*.0.0.0.1"}) {
    NetworkRules::Rule rule;
    rule.host.host = pattern;
    list.push_back(rule);
  }
  auto rules = NetworkRules::FromRules(std::move(list));
  for (const char* address : {"127.0.0.1", "10.0.169.254", "169.254.169.254", "127.1", "10.1",
                              "0x7f.0x1", "127.0.0.1.", "1.0.0.0.1"}) {
    INFO(address);
    REQUIRE_FALSE(rules.RuleOn(address, 443).allowed);
  }
}

TEST_CASE("only an allow rule naming the address itself exempts it", "[rules][addresses]") {
  auto rules = NetworkRules::Build(PolicyOf(R"({"agents": {"network": {"tool_services": false,
        "allow": [{"host": "127.0.0.1", "ports": [8080]}, {"host": "[::1]", "ports": [8080]},
                  {"host": "*.example.com"}, {"host": "localhost"}, {"host": "2130706433"},
                  {"host": "10.0.0.9"}],
        "deny": [{"host": "10.0.0.9"}]}}})"),
                                   "");
  REQUIRE(rules.RuleOn("127.0.0.1", 8080).NamesAddress());
  REQUIRE(rules.RuleOn("[::1]", 8080).NamesAddress());
  REQUIRE(rules.RuleOn("[0::1]", 8080).NamesAddress());
  REQUIRE_FALSE(rules.RuleOn("127.0.0.1", 443).NamesAddress());  // not on this port
  REQUIRE_FALSE(rules.RuleOn("a.example.com", 443).NamesAddress());
  REQUIRE_FALSE(rules.RuleOn("localhost", 443).NamesAddress());
  REQUIRE_FALSE(rules.RuleOn("2130706433", 443).NamesAddress());  // a name, to the rules
  REQUIRE_FALSE(rules.RuleOn("10.0.0.9", 443).NamesAddress());    // denied
  REQUIRE_FALSE(rules.RuleOn("10.0.0.8", 443).NamesAddress());
}

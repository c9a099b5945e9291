// Parsing policy files: what is accepted, normalised, and how each kind of
// malformed file is refused.
#include <catch2/catch.hpp>

#include "mojoup/policy/policy.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using mojoup::policy::HostRule;
using mojoup::policy::kDefaultPorts;
using mojoup::policy::Level;
using mojoup::policy::NormalizeHostPattern;
using mojoup::policy::ParsePolicy;
using mojoup::policy::SandboxAsk;

namespace {

std::string ErrorOf(const std::string& text, Level level = Level::kRepo) {
  auto parsed = ParsePolicy(text, "p.json", level);
  REQUIRE_FALSE(parsed.ok());
  return std::string(parsed.status().message());
}

}  // namespace

TEST_CASE("the contract's example parses, with defaults filled in", "[policy]") {
  auto file = ParsePolicy(R"({
  "agents": {
    "sandbox": "required",
    "network": {
      "allow": [ {"host": "api.github.com", "ports": [443]},
                 {"host": "*.npmjs.org"} ],
      "deny":  [ {"host": "gist.github.com"} ],
      "tool_services": true
    }
  }
})",
                          "p.json", Level::kRepo);
  REQUIRE(file.ok());
  REQUIRE(file->sandbox == SandboxAsk::kRequired);
  REQUIRE(file->allow ==
          std::vector<HostRule>{{"api.github.com", {443}}, {"*.npmjs.org", kDefaultPorts}});
  REQUIRE(file->deny == std::vector<HostRule>{{"gist.github.com", {443, 80}}});
  REQUIRE(file->tool_services == true);
  REQUIRE_FALSE(file->extend.has_value());
  REQUIRE(ParsePolicy("{}", "p.json", Level::kRepo).ok());
  REQUIRE(ParsePolicy(R"({"agents": {}})", "p.json", Level::kRepo)->sandbox == SandboxAsk::kNone);
}

TEST_CASE("hosts are lowercased, IDNs become punycode, IPs are kept", "[policy][hosts]") {
  REQUIRE(*NormalizeHostPattern("API.GitHub.com") == "api.github.com");
  REQUIRE(*NormalizeHostPattern("*.Example.ORG") == "*.example.org");
  REQUIRE(*NormalizeHostPattern("bücher.example") == "xn--bcher-kva.example");
  REQUIRE(*NormalizeHostPattern("*.münchen.de") == "*.xn--mnchen-3ya.de");
  REQUIRE(*NormalizeHostPattern("example.com.") == "example.com");
  REQUIRE(*NormalizeHostPattern("10.0.0.7") == "10.0.0.7");
  REQUIRE(*NormalizeHostPattern("[FD00:0::7]") == "[fd00::7]");
  REQUIRE(*NormalizeHostPattern("localhost") == "localhost");
}

TEST_CASE("a pattern with a trailing dot is stored without it", "[policy][hosts]") {
  REQUIRE(*NormalizeHostPattern("api.github.com.") == "api.github.com");
  REQUIRE(*NormalizeHostPattern("*.GitHub.com.") == "*.github.com");
  REQUIRE(*NormalizeHostPattern("10.0.0.7.") == "10.0.0.7");
  REQUIRE_FALSE(NormalizeHostPattern("api.github.com..").ok());
}

TEST_CASE("a wildcard must stand over a name, not over numbers", "[policy][hosts]") {
  // Labels of numbers only are what IP addresses are made of: "*.0.0.1" would
  // match 127.0.0.1, "*.169.254" 10.0.169.254.
  for (std::string_view pattern : {"*.0.0.1", "*.169.254", "*.254", "*.0.0.0.0.1", "*.1.2.3.4.5",
                                   "*.0x7f.1", "*.0.0.1.", "*.017.1"}) {
    auto normal = NormalizeHostPattern(pattern);
    INFO(pattern);
    REQUIRE_FALSE(normal.ok());
    REQUIRE_THAT(std::string(normal.status().message()),
                 Contains("is a wildcard over numbers only") &&
                     Contains("expected *. followed by a domain name, such as *.example.com"));
  }
  // Before a whole address, the message says so.
  REQUIRE_THAT(std::string(NormalizeHostPattern("*.1.2.3.4").status().message()),
               Contains("puts *. before an IP address; name the address alone"));
  // A number is a fine label anywhere in a name that is not only numbers.
  REQUIRE(*NormalizeHostPattern("*.123.example") == "*.123.example");
  REQUIRE(*NormalizeHostPattern("*.1.2.3.example") == "*.1.2.3.example");
  REQUIRE(*NormalizeHostPattern("*.example.0x1") == "*.example.0x1");
  REQUIRE(*NormalizeHostPattern("*.0xg.1") == "*.0xg.1");
  REQUIRE(*NormalizeHostPattern("127.0.0.1") == "127.0.0.1");  // an address, named exactly
}

TEST_CASE("host patterns that are refused, and why", "[policy][hosts]") {
  struct Case {
    std::string_view pattern;
    const char* why;
  };
  const Case cases[] = {
      {"", "is empty"},
      {"https://api.github.com", "has a scheme"},
      {"api.github.com/repos", "has a path"},
      {"api.github.com:443", "has a port"},
      {"*", "would allow every host"},
      {"api.*.com", "* may only stand first"},
      {"*github.com", "* may only stand first"},
      {"*.10.0.0.1", "before an IP address"},
      {"-bad-.com", "not a host name"},
      {"a..com", "not a host name"},
      {"sp ace.com", "contains a space or a control character"},
      {std::string_view("7.1.1.0\0evil", 12), "contains a space or a control character"},
      {std::string_view("[::1\0]", 6), "contains a space or a control character"},
      {"[::1", "IPv6 address in brackets"},
      {"xn--a.com\xe2\x80\x8b", "not a valid internationalised domain name"},
  };
  for (const Case& c : cases) {
    auto normal = NormalizeHostPattern(c.pattern);
    INFO(c.pattern);
    REQUIRE_FALSE(normal.ok());
    REQUIRE_THAT(std::string(normal.status().message()), Contains(c.why));
  }
}

TEST_CASE("syntax errors name file, line and column", "[policy][errors]") {
  REQUIRE_THAT(ErrorOf("{\n  \"agents\": {\n    \"sandbox\": \"required\",\n  }\n}"),
               StartsWith("p.json:4:3: not valid JSON"));
  REQUIRE_THAT(ErrorOf("{\"agents\": {}} trailing"), StartsWith("p.json:1:16: not valid JSON"));
  REQUIRE_THAT(ErrorOf("{\"agents\": "), StartsWith("p.json:1:12: not valid JSON"));
}

TEST_CASE("semantic errors name line, column, JSON path and what was expected",
          "[policy][errors]") {
  struct Case {
    const char* text;
    const char* where;
    const char* expected;
  };
  const Case cases[] = {
      {R"({"agents": {"sandbx": "required"}})", "p.json:1:13: /agents/sandbx",
       "unknown key \"sandbx\" (did you mean \"sandbox\"?); expected one of: sandbox, network"},
      {R"({"agnets": {}})", "p.json:1:2: /agnets", "did you mean \"agents\"?"},
      {R"({"agents": {"network": {"alow": []}}})", "/agents/network/alow",
       "did you mean \"allow\"?"},
      {R"({"agents": {"sandbox": "requird"}})", "p.json:1:24: /agents/sandbox",
       "expected \"preferred\" or \"required\", got \"requird\" (did you mean \"required\"?)"},
      {R"({"agents": {"sandbox": true}})", "/agents/sandbox", "got a boolean"},
      {R"({"agents": {"network": {"allow": {"host": "a.com"}}}})", "/agents/network/allow",
       "expected an array"},
      {"{\"agents\": {\"network\": {\"allow\": [{\"host\": \"a.com\"}, {\"host\": \"b.com\"},\n"
       "  {\"host\": \"c.com\", \"ports\": [443, 70000]}]}}}",
       "p.json:2:21: /agents/network/allow/2/ports/1",
       "expected a port number from 1 to 65535, got 70000"},
      {R"({"agents": {"network": {"deny": [{"host": "a.com", "ports": [0]}]}}})",
       "/agents/network/deny/0/ports/0", "got 0"},
      {R"({"agents": {"network": {"deny": [{"host": "a.com", "ports": ["443"]}]}}})",
       "/agents/network/deny/0/ports/0", "got a string"},
      {R"({"agents": {"network": {"deny": [{"host": "a.com", "ports": [44.3]}]}}})",
       "/agents/network/deny/0/ports/0", "got 44.3"},
      {R"({"agents": {"network": {"deny": [{"host": "a.com", "ports": []}]}}})",
       "/agents/network/deny/0/ports", "non-empty array"},
      {R"({"agents": {"network": {"deny": [{"ports": [443]}]}}})", "/agents/network/deny/0",
       "expected a \"host\" key"},
      {R"({"agents": {"network": {"deny": [{"host": "a.com", "port": [443]}]}}})",
       "/agents/network/deny/0/port", "did you mean \"ports\"?"},
      {R"({"agents": {"network": {"allow": [{"host": "https://a.com"}]}}})",
       "p.json:1:44: /agents/network/allow/0/host", "has a scheme"},
      {R"({"agents": {"network": {"allow": [{"host": "*.0.0.1"}]}}})",
       "p.json:1:44: /agents/network/allow/0/host",
       "\"*.0.0.1\" is a wildcard over numbers only, which would stand for IP addresses, not "
       "names; expected *. followed by a domain name, such as *.example.com, or one IP address "
       "alone, such as 10.0.0.7"},
      {"{\"agents\": {\"network\": {\"deny\": [{\"host\": \"a.com\"},\n"
       "  {\"host\": \"*.169.254\", \"ports\": [80]}]}}}",
       "p.json:2:12: /agents/network/deny/1/host", "wildcard over numbers only"},
      {R"({"agents": {"network": {"tool_services": "yes"}}})", "/agents/network/tool_services",
       "expected true or false"},
      {"{\"agents\": {\"network\": {\"deny\": [],\n  \"ask\": \"yes\"}}}",
       "p.json:2:3: /agents/network/ask", "expected true or false, got a string"},
      {R"({"agents": {"network": {"ask": null}}})", "/agents/network/ask",
       "expected true or false, got null"},
      {R"({"agents": {"network": {"asks": true}}})", "/agents/network/asks",
       "unknown key \"asks\" (did you mean \"ask\"?); expected one of: allow, deny, "
       "tool_services, ask, extend"},
      {R"({"agents": {"network": {"extend": false}}})", "/agents/network/extend",
       "belongs in a team or organisation hub policy"},
      {R"({"agents": {"sandbox": "required", "sandbox": "preferred"}})",
       "p.json:1:36:", "the key \"sandbox\" appears twice"},
      {R"([{"agents": {}}])", "p.json:1:1: /", "expected a JSON object"},
  };
  for (const Case& c : cases) {
    std::string error = ErrorOf(c.text);
    INFO(c.text << "\n-> " << error);
    REQUIRE_THAT(error, Contains(c.where));
    REQUIRE_THAT(error, Contains(c.expected));
  }
}

TEST_CASE("any level may say ask, and leaving it out says nothing", "[policy]") {
  for (Level level : {Level::kRepo, Level::kTeam, Level::kOrg}) {
    auto on = ParsePolicy(R"({"agents": {"network": {"ask": true}}})", "p.json", level);
    REQUIRE(on.ok());
    CHECK(on->ask == true);
    auto off = ParsePolicy(R"({"agents": {"network": {"ask": false}}})", "p.json", level);
    REQUIRE(off.ok());
    CHECK(off->ask == false);
  }
  auto silent = ParsePolicy(R"({"agents": {"network": {"allow": []}}})", "p.json", Level::kRepo);
  REQUIRE(silent.ok());
  CHECK_FALSE(silent->ask.has_value());
}

TEST_CASE("hub files may say extend: false", "[policy]") {
  auto file = ParsePolicy(R"({"agents": {"network": {"extend": false}}})", "org.json", Level::kOrg);
  REQUIRE(file.ok());
  REQUIRE(file->extend == false);
}

TEST_CASE("empty, non-UTF-8 and oversized files are refused with a clear error",
          "[policy][errors]") {
  REQUIRE_THAT(ErrorOf(""), Contains("p.json:1:1: the file is empty"));
  REQUIRE_THAT(ErrorOf("  \n\t "), Contains("the file is empty"));
  REQUIRE_THAT(ErrorOf("{\"agents\": {\"sandbox\": \"r\xe9quired\"}}"),
               Contains("p.json:1:26: the file is not valid UTF-8 (byte offset 25)"));
  REQUIRE_THAT(ErrorOf("{\"a\": \"\xed\xa0\x80\"}"), Contains("not valid UTF-8"));  // a surrogate
  std::string big = "{\"agents\": {\"network\": {\"allow\": [";
  while (big.size() <= mojoup::policy::kMaxPolicyBytes) big += "{\"host\": \"a.example.com\"},";
  REQUIRE_THAT(ErrorOf(big), Contains("policy files may be at most 1 MiB"));
}

TEST_CASE("deep nesting is refused without exhausting the stack", "[policy][errors]") {
  std::string deep(200000, '[');
  REQUIRE_THAT(ErrorOf(deep), Contains("p.json:1:65: the policy nests deeper than 64 levels"));
  std::string closed = std::string(100000, '[') + std::string(100000, ']');
  REQUIRE_THAT(ErrorOf(closed), Contains("nests deeper than 64 levels"));
  std::string sixty_four = std::string(64, '[') + std::string(64, ']');
  REQUIRE_THAT(ErrorOf(sixty_four), Contains("expected a JSON object"));
  REQUIRE_THAT(ErrorOf(std::string("{\"agents\": {}}") + '\0' + "{\"agents\": 1}"),
               Contains("p.json:1:15: not valid JSON: a NUL byte"));
}

// Layering: org over team over repository, with provenance.
#include <catch2/catch.hpp>

#include "mojoup/policy/effective_policy.h"

using namespace mojoup::policy;

namespace {

PolicyFile Parse(const std::string& text, Level level) {
  std::string path = std::string(LevelName(level)) + ".json";
  auto file = ParsePolicy(text, path, level);
  REQUIRE(file.ok());
  return *file;
}

std::vector<std::string> Hosts(const std::vector<SourcedRule>& rules) {
  std::vector<std::string> hosts;
  for (const SourcedRule& rule : rules) {
    hosts.push_back(rule.rule.host + "@" + std::string(LevelName(rule.source.level)));
  }
  return hosts;
}

}  // namespace

TEST_CASE("required beats preferred across levels, whichever level says it", "[layering]") {
  auto policy = Layer({Parse(R"({"agents": {"sandbox": "preferred"}})", Level::kOrg),
                       Parse(R"({"agents": {"sandbox": "required"}})", Level::kRepo)});
  REQUIRE(policy.sandbox.value == SandboxAsk::kRequired);
  REQUIRE(policy.sandbox.source.level == Level::kRepo);
  REQUIRE(policy.sandbox.source.file == "repo.json");

  policy = Layer({Parse(R"({"agents": {"sandbox": "preferred"}})", Level::kRepo),
                  Parse(R"({"agents": {"sandbox": "required"}})", Level::kTeam)});
  REQUIRE(policy.sandbox.value == SandboxAsk::kRequired);
  REQUIRE(policy.sandbox.source.level == Level::kTeam);

  // A lower level cannot loosen: a repo saying preferred under an org's required.
  policy = Layer({Parse(R"({"agents": {"sandbox": "required"}})", Level::kOrg),
                  Parse(R"({"agents": {"sandbox": "preferred"}})", Level::kRepo)});
  REQUIRE(policy.sandbox.value == SandboxAsk::kRequired);
  REQUIRE(policy.sandbox.source.level == Level::kOrg);

  REQUIRE(Layer({}).sandbox.value == SandboxAsk::kNone);
  REQUIRE(Layer({}).sandbox.source.level == Level::kDefault);
}

TEST_CASE("deny is the union of every level, allow the union unless extend: false", "[layering]") {
  PolicyFile org = Parse(R"({"agents": {"network": {"allow": [{"host": "org.example"}],
                                                     "deny": [{"host": "gist.github.com"}]}}})",
                         Level::kOrg);
  PolicyFile team = Parse(R"({"agents": {"network": {"allow": [{"host": "team.example"}],
                                                      "deny": [{"host": "pastebin.com"}]}}})",
                          Level::kTeam);
  PolicyFile repo = Parse(R"({"agents": {"network": {"allow": [{"host": "repo.example"}],
                                                      "deny": [{"host": "x.example"}]}}})",
                          Level::kRepo);
  auto policy = Layer({repo, team, org});
  REQUIRE(Hosts(policy.allow) ==
          std::vector<std::string>{"org.example@org", "team.example@team", "repo.example@repo"});
  REQUIRE(Hosts(policy.deny) ==
          std::vector<std::string>{"gist.github.com@org", "pastebin.com@team", "x.example@repo"});
  REQUIRE(policy.sources.size() == 3);
  REQUIRE(policy.sources[0].level == Level::kOrg);

  SECTION("the org closes the list: team and repo additions are dropped, their denies kept") {
    org.extend = false;
    policy = Layer({repo, team, org});
    REQUIRE(Hosts(policy.allow) == std::vector<std::string>{"org.example@org"});
    REQUIRE(policy.deny.size() == 3);
    // What was left out, and who closed the list, for explain to say.
    REQUIRE(policy.dropped.size() == 2);
    REQUIRE(policy.dropped[0].rule.rule.host == "team.example");
    REQUIRE(policy.dropped[0].closed_by.level == Level::kOrg);
    REQUIRE(policy.dropped[1].rule.source.level == Level::kRepo);
  }
  SECTION("the team closes it: the repo's additions are dropped") {
    team.extend = false;
    policy = Layer({repo, team, org});
    REQUIRE(Hosts(policy.allow) ==
            std::vector<std::string>{"org.example@org", "team.example@team"});
  }
}

TEST_CASE("tool_services: on by default, off wherever a level turns it off", "[layering]") {
  auto policy = Layer({Parse("{}", Level::kRepo)});
  REQUIRE(policy.tool_services.value);
  REQUIRE(policy.tool_services.source.level == Level::kDefault);

  policy = Layer({Parse(R"({"agents": {"network": {"tool_services": true}}})", Level::kOrg),
                  Parse(R"({"agents": {"network": {"tool_services": false}}})", Level::kRepo)});
  REQUIRE_FALSE(policy.tool_services.value);
  REQUIRE(policy.tool_services.source.level == Level::kRepo);

  policy = Layer({Parse(R"({"agents": {"network": {"tool_services": false}}})", Level::kTeam),
                  Parse(R"({"agents": {"network": {"tool_services": true}}})", Level::kRepo)});
  REQUIRE_FALSE(policy.tool_services.value);
  REQUIRE(policy.tool_services.source.level == Level::kTeam);
}

namespace {

// "on@repo", "off@default": the effective ask and the level it came from.
std::string AskOf(const EffectivePolicy& policy) {
  return std::string(policy.ask.value ? "on@" : "off@") +
         std::string(LevelName(policy.ask.source.level));
}

}  // namespace

TEST_CASE("ask: off unless a level says true, and the level that turns it off wins", "[layering]") {
  const std::string on = R"({"agents": {"network": {"ask": true}}})";
  const std::string off = R"({"agents": {"network": {"ask": false}}})";
  const std::string closed = R"({"agents": {"network": {"extend": false}}})";
  CHECK(AskOf(Layer({Parse("{}", Level::kRepo)})) == "off@default");
  CHECK_FALSE(Layer({Parse("{}", Level::kRepo)}).closed.has_value());

  SECTION("on: the highest level that says true") {
    EffectivePolicy policy = Layer({Parse(on, Level::kRepo)});
    CHECK(AskOf(policy) == "on@repo");
    CHECK(policy.ask.source.file == "repo.json");
    CHECK(AskOf(Layer({Parse(on, Level::kRepo), Parse(on, Level::kTeam),
                       Parse("{}", Level::kOrg)})) == "on@team");
  }
  SECTION("false at any level turns it off, whatever the others say") {
    CHECK(AskOf(Layer({Parse(on, Level::kOrg), Parse(off, Level::kRepo)})) == "off@repo");
    CHECK(AskOf(Layer({Parse(off, Level::kTeam), Parse(on, Level::kRepo)})) == "off@team");
    // Two levels say false: the higher has the credit.
    CHECK(AskOf(Layer({Parse(off, Level::kRepo), Parse(off, Level::kOrg),
                       Parse(on, Level::kTeam)})) == "off@org");
  }
  SECTION("a hub that closes the list turns it off, and is named") {
    EffectivePolicy policy = Layer({Parse(on, Level::kRepo), Parse(closed, Level::kTeam)});
    CHECK(AskOf(policy) == "off@team");
    REQUIRE(policy.closed.has_value());
    CHECK(policy.closed->level == Level::kTeam);
    CHECK(policy.closed->file == "team.json");
    // Even the closing hub's own "ask": true does not reopen it.
    CHECK(AskOf(Layer({Parse(R"({"agents": {"network": {"extend": false, "ask": true}}})",
                             Level::kOrg)})) == "off@org");
    // "extend": true closes nothing.
    policy = Layer({Parse(R"({"agents": {"network": {"extend": true}}})", Level::kOrg),
                    Parse(on, Level::kRepo)});
    CHECK(AskOf(policy) == "on@repo");
    CHECK_FALSE(policy.closed.has_value());
  }
}

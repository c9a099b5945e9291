// The decision table, row by row.
#include "mojoup/policy/decision.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "../support/test_support.h"
#include "fmt/format.h"

using namespace mojoup::policy;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using Result = SandboxDecision::Result;

namespace {

const Capability kCan{true, ""};
const Capability kCannot{false,
                         "Docker is not running: x refused the connection; "
                         "start Docker with `sudo systemctl start docker`."};

NodeConfig Config(mojoup::test::TempDir& dir, const std::string& json) {
  auto config = NodeConfig::Load(dir.Write("node.json", json));
  REQUIRE(config.ok());
  return *config;
}

EffectivePolicy Asking(const std::string& ask) {
  if (ask.empty()) return Layer({});
  auto file = ParsePolicy(R"({"agents": {"sandbox": ")" + ask + R"("}})", "/r/.mojoup/policy.json",
                          Level::kRepo);
  REQUIRE(file.ok());
  return Layer({*file});
}

}  // namespace

TEST_CASE("every row of the decision table", "[decision]") {
  mojoup::test::TempDir dir;
  NodeConfig plain = Config(dir, R"({"node.sandbox.allowed_users": "alice"})");
  NodeConfig role = Config(dir, R"({"node.sandbox.engine": "docker", "node.sandbox.role": true,
                                    "node.sandbox.allowed_users": "*"})");

  SandboxDecision d = Decide(kCan, plain, Asking("required"), "alice");
  REQUIRE(d.result == Result::kSandboxed);
  REQUIRE_THAT(d.reason, Contains("requires a sandbox"));

  d = Decide(kCannot, plain, Asking("required"), "alice");
  REQUIRE(d.result == Result::kRefused);
  REQUIRE(d.reason ==
          "This repository requires a sandbox, but this machine cannot sandbox agents: " +
              kCannot.reason);

  d = Decide(kCan, plain, Asking("preferred"), "alice");
  REQUIRE(d.result == Result::kSandboxed);
  d = Decide(kCan, role, Asking(""), "bob");
  REQUIRE(d.result == Result::kSandboxed);
  REQUIRE(d.asked.source.level == Level::kNode);
  REQUIRE_THAT(d.reason, Contains("node.sandbox.role"));

  d = Decide(kCannot, plain, Asking("preferred"), "alice");
  REQUIRE(d.result == Result::kUnsandboxed);
  REQUIRE_THAT(d.reason, StartsWith("Warning: running without a sandbox"));
  REQUIRE_THAT(d.reason, Contains("Docker is not running"));
  d = Decide(kCannot, role, Asking(""), "alice");
  REQUIRE(d.result == Result::kUnsandboxed);
  REQUIRE_THAT(d.reason, StartsWith("Warning"));

  for (const auto& verdict : {kCan, kCannot}) {
    d = Decide(verdict, plain, Asking(""), "alice");
    REQUIRE(d.result == Result::kUnsandboxed);
    REQUIRE_THAT(d.reason, StartsWith("Nobody asks for a sandbox"));
  }
}

TEST_CASE("a user the node does not allow is treated as if it could not sandbox", "[decision]") {
  mojoup::test::TempDir dir;
  NodeConfig config = Config(dir, R"({"node.sandbox.allowed_users": "alice,carol"})");
  SandboxDecision d = Decide(kCan, config, Asking("required"), "bob");
  REQUIRE(d.result == Result::kRefused);
  REQUIRE_THAT(d.reason, Contains("you may not run agents in this node's sandboxes"));
  d = Decide(kCan, config, Asking("preferred"), "bob");
  REQUIRE(d.result == Result::kUnsandboxed);
  REQUIRE_THAT(d.reason, Contains("you may not run agents in this node's sandboxes"));
  REQUIRE(Decide(kCan, config, Asking("required"), "carol").result == Result::kSandboxed);

  REQUIRE_THAT(d.reason, Contains("grants access with `mojoup-node config set "
                                  "node.sandbox.allowed_users alice,carol,bob`"));
}

TEST_CASE("unset allowed users: the node is its operator's, the owner of the config file",
          "[decision]") {
  mojoup::test::TempDir dir;
  NodeConfig unset = Config(dir, "{}");
  const std::string me = mojoup::policy::CurrentUserName();
  REQUIRE(unset.owner() == getuid());
  REQUIRE(mojoup::policy::NodeOwnerName(unset) == me);
  REQUIRE(UserAllowed(unset, me));
  REQUIRE_FALSE(UserAllowed(unset, "someone-else"));
  REQUIRE(Decide(kCan, unset, Asking("required"), me).result == Result::kSandboxed);
  SandboxDecision d = Decide(kCan, unset, Asking("required"), "someone-else");
  REQUIRE(d.result == Result::kRefused);
  REQUIRE_THAT(d.reason, Contains("which is unset: the node is " + me + "'s"));
  REQUIRE_THAT(d.reason, Contains("`mojoup-node config set node.sandbox.allowed_users " + me +
                                  ",someone-else`"));

  // A config file owned by another user (only root can give one away):
  // that user's node.
  if (geteuid() == 0) {
    const std::string path = dir / "theirs.json";
    std::ofstream(path) << "{}";
    REQUIRE(chown(path.c_str(), 65534, 65534) == 0);  // nobody
    auto theirs = NodeConfig::Load(path);
    REQUIRE(theirs.ok());
    REQUIRE(mojoup::policy::NodeOwnerName(*theirs) == mojoup::policy::UserName(65534));
    REQUIRE(UserAllowed(*theirs, mojoup::policy::UserName(65534)));
    REQUIRE_FALSE(UserAllowed(*theirs, "root"));
  }

  // No config file at all: the invoking user's.
  auto none = NodeConfig::Load(dir / "absent.json");
  REQUIRE(none.ok());
  REQUIRE_FALSE(none->owner().has_value());
  REQUIRE(UserAllowed(*none, me));
}

TEST_CASE("the node asks only with an engine and the role on", "[decision]") {
  mojoup::test::TempDir dir;
  REQUIRE(SandboxAskFor(Config(dir, R"({"node.sandbox.role": true})"), Asking("")).value ==
          SandboxAsk::kNone);
  REQUIRE(SandboxAskFor(Config(dir, R"({"node.sandbox.engine": "docker"})"), Asking("")).value ==
          SandboxAsk::kNone);
  REQUIRE(
      SandboxAskFor(Config(dir, R"({"node.sandbox.engine": "docker", "node.sandbox.role": false})"),
                    Asking(""))
          .value == SandboxAsk::kNone);
}

namespace {

EffectivePolicy Layered(const std::vector<std::pair<std::string, Level>>& files) {
  std::vector<PolicyFile> parsed;
  for (const auto& [text, level] : files) {
    auto file = ParsePolicy(text, fmt::format("/p/{}.json", LevelName(level)), level);
    REQUIRE(file.ok());
    parsed.push_back(*file);
  }
  return Layer(parsed);
}

}  // namespace

TEST_CASE("ask is on only when the policy turns it on and the node allows it", "[decision]") {
  mojoup::test::TempDir dir;
  const NodeConfig node_on = Config(dir, R"({"node.proxy.ask": true})");
  const NodeConfig node_off = Config(dir, R"({"node.proxy.ask": "off"})");
  const std::string on = R"({"agents": {"network": {"ask": true}}})";
  const std::string off = R"({"agents": {"network": {"ask": false}}})";
  const std::string closed = R"({"agents": {"network": {"extend": false}}})";
  auto unset = NodeConfig::Load(dir / "absent.json");
  REQUIRE(unset.ok());

  AskDecision decided = DecideAsk(node_on, Layered({{on, Level::kRepo}}));
  CHECK(decided.on);
  CHECK(decided.why == "ask is on (repo: /p/repo.json; node.proxy.ask on)");

  decided = DecideAsk(node_off, Layered({{on, Level::kRepo}}));
  CHECK_FALSE(decided.on);
  CHECK(decided.why ==
        "ask is off: node.proxy.ask is off, though the repo policy /p/repo.json turns it on");
  CHECK(DecideAsk(*unset, Layered({{on, Level::kTeam}})).why ==
        "ask is off: node.proxy.ask is off, though the team policy /p/team.json turns it on");

  decided = DecideAsk(node_on, Layered({{off, Level::kTeam}, {on, Level::kRepo}}));
  CHECK_FALSE(decided.on);
  CHECK(decided.why == "ask is off: team policy /p/team.json says \"ask\": false");

  decided = DecideAsk(node_on, Layered({{closed, Level::kOrg}, {on, Level::kRepo}}));
  CHECK_FALSE(decided.on);
  CHECK(decided.why == "ask is off: org policy /p/org.json closed the list with \"extend\": false");
  // A closed list wins over a node that is off too: the hub forbids it.
  CHECK(DecideAsk(node_off, Layered({{closed, Level::kOrg}, {on, Level::kRepo}})).why ==
        "ask is off: org policy /p/org.json closed the list with \"extend\": false");

  decided = DecideAsk(node_on, Layered({}));
  CHECK_FALSE(decided.on);
  CHECK(decided.why == "ask is off: no policy says \"ask\": true");
  decided = DecideAsk(*unset, Layered({{"{}", Level::kRepo}}));
  CHECK_FALSE(decided.on);
  CHECK(decided.why == "ask is off: no policy says \"ask\": true, and node.proxy.ask is off");
}

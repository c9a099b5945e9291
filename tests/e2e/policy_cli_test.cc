// `mojoup-node policy explain`, `config` and `setup` as a user runs them.
#include <poll.h>
#include <pty.h>
#include <rapidjson/document.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <thread>

#include "../support/fake_node.h"
#include "mojoup/policy/node_config.h"
#include "mojoup/sandbox/agent_image.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using mojoup::probe::testing::FakeDockerDaemon;
using mojoup::test::FakeNode;
using mojoup::test::Run;

namespace {

// A node with a repository and hub policies in its directory.
struct PolicyNode : FakeNode {
  using FakeNode::FakeNode;

  std::string repo() const { return dir / "repo"; }
  void RepoPolicy(const std::string& json) const { dir.Write("repo/.mojoup/policy.json", json); }
  std::string Hub(const std::string& level, const std::string& json) const {
    return dir.Write("hub/" + level + ".json", json);
  }
  void Set(const std::string& key, const std::string& value) const {
    Run run = Cli({"config", "set", key, value});
    INFO(run.result.err);
    REQUIRE(run.result.exit_code == 0);
  }
  Run Explain(std::vector<std::string> extra = {"--json"}) const {
    std::vector<std::string> args{"policy", "explain", "--repo", repo()};
    args.insert(args.end(), extra.begin(), extra.end());
    return Cli(args);
  }
  rapidjson::Document ExplainJson() const {
    Run run = Explain();
    INFO(run.result.out << run.result.err);
    REQUIRE(run.result.exit_code == 0);
    rapidjson::Document doc;
    doc.Parse(run.result.out.c_str());
    REQUIRE_FALSE(doc.HasParseError());
    REQUIRE(std::string(doc["schema"].GetString()) == "mojoup.policy/v1");
    return doc;
  }
};

std::string Str(const rapidjson::Value& value) {
  return value.IsNull() ? "null" : value.GetString();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("explain: every malformed policy exits 2 naming file, place and what was expected",
          "[explain]") {
  PolicyNode node;
  const std::pair<std::string, std::string> cases[] = {
      {R"({"agents": {"sandbx": "required"}})", "policy.json:1:13: /agents/sandbx"},
      {R"({"agents": {"sandbox": "requird"}})", "expected \"preferred\" or \"required\""},
      {R"({"agents": {"network": {"allow": [{"host": "a.com", "ports": [70000]}]}}})",
       "/agents/network/allow/0/ports/0: expected a port number from 1 to 65535"},
      {R"({"agents": {"network": {"allow": [{"host": "https://a.com/x"}]}}})", "has a scheme"},
      {R"({"agents": {"network": {"allow": [{"host": "a.com:8443"}]}}})", "has a port"},
      {R"({"agents": {"network": {"deny": [{"host": "*"}]}}})", "would allow every host"},
      {R"({"agents": {"network": {"allow": [{"host": "a.com/path"}]}}})", "has a path"},
      {"{\"agents\": {\"network\": {\"allow\": [{\"host\": \"a.com\"},\n"
       "  {\"host\": \"*.0.0.1\"}]}}}",
       "policy.json:2:12: /agents/network/allow/1/host: \"*.0.0.1\" is a wildcard over numbers "
       "only, which would stand for IP addresses, not names; expected *. followed by a domain "
       "name"},
      {R"({"agents": {"network": {"deny": [{"host": "*.169.254"}]}}})",
       "policy.json:1:43: /agents/network/deny/0/host"},
      {R"({"agents": {"network": {"ask": "yes"}}})",
       "policy.json:1:25: /agents/network/ask: expected true or false, got a string"},
      {"", "policy.json:1:1: the file is empty"},
      {"{\"agents\": {\"sandbox\": \"r\xff\"}}", "not valid UTF-8"},
      {"{\"agents\": {,}}", "policy.json:1:13: not valid JSON"},
      {std::string(1100 * 1024, ' '), "at most 1 MiB"},
  };
  for (const auto& [text, expected] : cases) {
    node.RepoPolicy(text);
    Run run = node.Explain();
    INFO(expected << "\n" << run.result.err);
    REQUIRE(run.result.exit_code == 2);
    REQUIRE(run.result.out.empty());
    REQUIRE_THAT(run.result.err, Contains(node.repo() + "/.mojoup/policy.json"));
    REQUIRE_THAT(run.result.err, Contains(expected));
  }
  // A hub file that does not exist is refused when set, and a bad one too.
  node.RepoPolicy("{}");
  Run refused = node.Cli({"config", "set", "policy.org", node.dir / "hub/absent.json"});
  REQUIRE(refused.result.exit_code == 2);
  REQUIRE_THAT(refused.result.err, Contains("absent.json: no such file; expected a policy file"));
  refused =
      node.Cli({"config", "set", "policy.team", node.Hub("team", R"({"agents": {"sandbx": 1}})")});
  REQUIRE(refused.result.exit_code == 2);
  REQUIRE_THAT(refused.result.err, Contains("unknown key \"sandbx\""));
  REQUIRE(node.Cli({"config", "get", "policy.team"}).result.exit_code == 1);
  // One the config names that later goes missing is an error naming it.
  node.Set("policy.org", node.Hub("absent", "{}"));
  std::filesystem::remove(node.dir / "hub/absent.json");
  Run run = node.Explain();
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.err, Contains("absent.json: the org hub policy"));
}

TEST_CASE("explain: layering with provenance for every value", "[explain]") {
  PolicyNode node;
  node.Set("policy.org", node.Hub("org", R"({"agents": {"sandbox": "required",
      "network": {"allow": [{"host": "api.github.com", "ports": [443]}],
                  "deny": [{"host": "gist.github.com"}]}}})"));
  node.Set("policy.team", node.Hub("team", R"({"agents": {"network": {"extend": false,
      "allow": [{"host": "team.example"}], "tool_services": false}}})"));
  node.RepoPolicy(R"({"agents": {"sandbox": "preferred", "network": {
      "allow": [{"host": "repo.example"}, {"host": "gist.github.com"}]}}})");
  auto doc = node.ExplainJson();

  REQUIRE(doc["sources"].Size() == 3);
  REQUIRE(Str(doc["sources"][0]["level"]) == "org");
  REQUIRE(Str(doc["sources"][0]["file"]) == node.dir / "hub/org.json");
  REQUIRE(Str(doc["sources"][2]["level"]) == "repo");
  // required beats preferred
  REQUIRE(Str(doc["sandbox"]["value"]) == "required");
  REQUIRE(Str(doc["sandbox"]["source"]) == "org");
  // extend: false in the team's file drops the repository's additions
  const auto& allow = doc["network"]["allow"];
  REQUIRE(allow.Size() == 2);
  REQUIRE(Str(allow[0]["host"]) == "api.github.com");
  REQUIRE(Str(allow[0]["source"]) == "org");
  REQUIRE(allow[0]["ports"].Size() == 1);
  REQUIRE(Str(allow[1]["host"]) == "team.example");
  REQUIRE(Str(allow[1]["source"]) == "team");
  // deny stands, with its default ports
  const auto& deny = doc["network"]["deny"];
  REQUIRE(deny.Size() == 1);
  REQUIRE(Str(deny[0]["source"]) == "org");
  REQUIRE(deny[0]["ports"][0].GetInt() == 443);
  REQUIRE(deny[0]["ports"][1].GetInt() == 80);
  REQUIRE(doc["network"]["tool_services"]["value"].IsFalse());
  REQUIRE(Str(doc["network"]["tool_services"]["source"]) == "team");
  // ... and says what it left out, and who closed the list.
  const auto& dropped = doc["network"]["dropped"];
  REQUIRE(dropped.Size() == 2);
  REQUIRE(Str(dropped[0]["host"]) == "repo.example");
  REQUIRE(Str(dropped[0]["source"]) == "repo");
  REQUIRE(Str(dropped[0]["closed_by"]) == "team");

  // deny beats allow: the repo's own allow of gist.github.com (here dropped by
  // extend: false anyway) cannot open what the org denies.
  Run run = node.Explain({"--json", "--host", "gist.github.com"});
  REQUIRE(run.result.exit_code == 0);
  rapidjson::Document check;
  check.Parse(run.result.out.c_str());
  REQUIRE(check["host_check"]["allowed"].IsFalse());
  REQUIRE_THAT(Str(check["host_check"]["rule"]),
               Contains("deny gist.github.com:443,80 (org: " + node.dir / "hub/org.json"));
  REQUIRE(check["host_check"]["closed_by"].IsNull());  // the deny decided, not the closed list
  run = node.Explain({"--json", "--host", "api.github.com:443"});
  check.Parse(run.result.out.c_str());
  REQUIRE(check["host_check"]["allowed"].IsTrue());
  // A host only the repository allowed: denied, because the team closed the list.
  run = node.Explain({"--host", "repo.example"});
  REQUIRE_THAT(run.result.out, Contains("repo.example:443: denied"));
  REQUIRE_THAT(run.result.out,
               Contains("allow repo.example:443,80 (repo: " + node.repo() +
                        "/.mojoup/policy.json) is left out: the team hub policy (" +
                        node.dir / "hub/team.json" + ") closed the list with \"extend\": false"));
  REQUIRE(node.Explain({"--host", "a.com:99999"}).result.exit_code == 2);
  REQUIRE(node.Explain({"--host", "a.com", "--tool", "vim"}).result.exit_code == 2);

  // The human form says the same.
  Run text = node.Explain({});
  REQUIRE(text.result.exit_code == 0);
  REQUIRE_THAT(text.result.out, Contains("sandbox:        required (from org)"));
}

TEST_CASE("explain: ask, its source, and what this node makes of it", "[explain][ask]") {
  PolicyNode node;
  node.RepoPolicy(R"({"agents": {"network": {"ask": true}}})");
  auto doc = node.ExplainJson();
  REQUIRE(doc["network"]["ask"]["value"].IsTrue());
  REQUIRE(Str(doc["network"]["ask"]["source"]) == "repo");
  Run text = node.Explain({});
  REQUIRE_THAT(text.result.out, Contains("ask:            on (from repo)\n  on this node: ask is "
                                         "off: node.proxy.ask is off, though the repo policy " +
                                         node.repo() + "/.mojoup/policy.json turns it on\n"));

  node.Set("node.proxy.ask", "on");
  text = node.Explain({});
  REQUIRE_THAT(text.result.out, Contains("  on this node: ask is on (repo: " + node.repo() +
                                         "/.mojoup/policy.json; node.proxy.ask on)\n"));

  // A hub that closes the list forbids it, whatever the repository says.
  node.Set("policy.org", node.Hub("org", R"({"agents": {"network": {"extend": false}}})"));
  doc = node.ExplainJson();
  REQUIRE(doc["network"]["ask"]["value"].IsFalse());
  REQUIRE(Str(doc["network"]["ask"]["source"]) == "org");
  text = node.Explain({});
  REQUIRE_THAT(text.result.out,
               Contains("ask:            off (from org)\n  on this node: ask is "
                        "off: org policy " +
                        node.dir / "hub/org.json" + " closed the list with \"extend\": false\n"));
}

TEST_CASE("explain --host: deny beats allow within and across levels", "[explain]") {
  PolicyNode node;
  node.Set("policy.org", node.Hub("org", R"({"agents": {"network": {
      "deny": [{"host": "gist.github.com"}]}}})"));
  node.RepoPolicy(R"({"agents": {"network": {
      "allow": [{"host": "*.github.com"}, {"host": "gist.github.com"}]}}})");
  Run run = node.Explain({"--host", "gist.github.com"});
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("gist.github.com:443: denied, by deny gist.github.com"));
  run = node.Explain({"--host", "docs.github.com"});
  REQUIRE_THAT(run.result.out, Contains("docs.github.com:443: allowed, by allow *.github.com"));
  run = node.Explain({"--host", "claude.ai", "--tool", "claude-code"});
  REQUIRE_THAT(run.result.out, Contains("allowed, by allow claude.ai:443,80 (claude-code's own"));
}

TEST_CASE("explain: every row of the decision table", "[explain][decision]") {
  struct Row {
    const char* name;
    const char* repo_sandbox;  // "" = no ask
    bool node_role;
    bool can_sandbox;
    const char* result;
    const char* source;
    const char* reason;
  };
  const Row rows[] = {
      {"required, can", "required", false, true, "sandboxed", "repo", "requires a sandbox"},
      {"required, cannot", "required", false, false, "refused", "repo",
       "This repository requires a sandbox, but this machine cannot sandbox agents: Docker is "
       "not running"},
      {"preferred, can", "preferred", false, true, "sandboxed", "repo", "prefers a sandbox"},
      {"node role, can", "", true, true, "sandboxed", "node", "node.sandbox.role"},
      {"preferred, cannot", "preferred", false, false, "unsandboxed", "repo",
       "Warning: running without a sandbox"},
      {"node role, cannot", "", true, false, "unsandboxed", "node",
       "Warning: running without a sandbox"},
      {"nobody, can", "", false, true, "unsandboxed", "default", "Nobody asks for a sandbox"},
      {"nobody, cannot", "", false, false, "unsandboxed", "default", "Nobody asks for a sandbox"},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    PolicyNode node(row.can_sandbox ? FakeDockerDaemon::Mode::kAnswer
                                    : FakeDockerDaemon::Mode::kRefuse);
    node.Set("node.sandbox.allowed_users", "*");
    if (row.node_role) {
      node.Set("node.sandbox.engine", "docker");
      node.Set("node.sandbox.role", "true");
    }
    node.RepoPolicy(*row.repo_sandbox
                        ? std::string(R"({"agents": {"sandbox": ")") + row.repo_sandbox + "\"}}"
                        : "{}");
    auto doc = node.ExplainJson();
    REQUIRE(Str(doc["decision"]["result"]) == row.result);
    REQUIRE(Str(doc["sandbox"]["source"]) == row.source);
    REQUIRE_THAT(Str(doc["decision"]["reason"]), Contains(row.reason));
  }

  SECTION("a user the node does not allow") {
    PolicyNode node;
    node.Set("node.sandbox.allowed_users", "someone-else");
    node.RepoPolicy(R"({"agents": {"sandbox": "required"}})");
    auto doc = node.ExplainJson();
    REQUIRE(Str(doc["decision"]["result"]) == "refused");
    REQUIRE_THAT(Str(doc["decision"]["reason"]),
                 Contains("you may not run agents in this node's sandboxes"));
  }
}

TEST_CASE("config: twenty concurrent set processes on different keys all land", "[config]") {
  PolicyNode node;
  node.Set("node.sandbox.engine", "docker");
  std::vector<std::thread> writers;
  std::vector<int> codes(20, -1);
  for (int i = 0; i < 20; ++i) {
    writers.emplace_back([&, i] {
      codes[i] =
          node.Cli({"config", "set", "node.sandbox.credential_hosts.TOKEN_" + std::to_string(i),
                    "api-" + std::to_string(i) + ".example.com"})
              .result.exit_code;
    });
  }
  for (auto& writer : writers) writer.join();
  for (int code : codes) REQUIRE(code == 0);
  auto config = mojoup::policy::NodeConfig::Load(node.config());
  REQUIRE(config.ok());  // still valid JSON, still valid config
  REQUIRE(config->values().size() == 21);
  for (int i = 0; i < 20; ++i) {
    REQUIRE(config->Get("node.sandbox.credential_hosts.TOKEN_" + std::to_string(i)) ==
            "api-" + std::to_string(i) + ".example.com");
  }
}

TEST_CASE("config: get, unset, list, and what is refused", "[config]") {
  PolicyNode node;
  node.Set("node.sandbox.runtime", "native");
  Run run = node.Cli({"config", "get", "node.sandbox.runtime"});
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(run.result.out == "native\n");
  REQUIRE(node.Cli({"config", "get", "policy.org"}).result.exit_code == 1);  // no default

  run = node.Cli({"config", "list", "--json"});
  REQUIRE(run.result.exit_code == 0);
  rapidjson::Document doc;
  doc.Parse(run.result.out.c_str());
  REQUIRE(Str(doc["schema"]) == "mojoup.config/v1");
  REQUIRE(Str(doc["values"]["node.sandbox.runtime"]) == "native");
  // What is not set but has a default, apart from what the file holds.
  REQUIRE(Str(doc["defaults"]["node.sandbox.image"]) == mojoup::sandbox::DefaultAgentImage());
  REQUIRE_FALSE(doc["values"].HasMember("node.sandbox.image"));
  REQUIRE_FALSE(doc["defaults"].HasMember("node.sandbox.runtime"));
  REQUIRE_FALSE(doc["defaults"].HasMember("policy.org"));

  REQUIRE(node.Cli({"config", "unset", "node.sandbox.runtime"}).result.exit_code == 0);
  // Unset, a key with a default prints it, and says so.
  run = node.Cli({"config", "get", "node.sandbox.runtime"});
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(run.result.out == "openshell\n");
  REQUIRE_THAT(run.result.err,
               Contains("is not set in " + node.config() + "; that is its default"));

  run = node.Cli({"config", "set", "node.sandbox.runtime", "podman"});
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.err, Contains("expected openshell or native"));
  run = node.Cli({"config", "set", "node.sandbox.runtim", "native"});
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.err, Contains("did you mean \"node.sandbox.runtime\"?"));
  REQUIRE(node.Cli({"config", "set", "node.sandbox.runtime"}).result.exit_code == 2);
  REQUIRE(node.Cli({"config", "frob"}).result.exit_code == 2);
  // A credential's hosts are exact names: a wildcard over numbers says why not.
  run = node.Cli({"config", "set", "node.sandbox.credential_hosts.ACME_KEY", "*.0.0.1"});
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.err, Contains("\"*.0.0.1\" is a wildcard over numbers only"));
  REQUIRE(node.Cli({"config", "get", "node.sandbox.credential_hosts.ACME_KEY"}).result.exit_code ==
          1);

  // Ask and audit settings: their defaults, and a value out of range refused.
  run = node.Cli({"config", "get", "node.proxy.ask_hold"});
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(run.result.out == "30\n");
  node.Set("node.proxy.ask", "on");
  node.Set("node.audit.keep", "50");
  REQUIRE(node.Cli({"config", "get", "node.proxy.ask"}).result.out == "true\n");
  run = node.Cli({"config", "list"});
  REQUIRE_THAT(run.result.out, Contains("node.audit.keep = 50\n") &&
                                   Contains("node.audit.max_bytes = 16777216  (default)\n"));
  run = node.Cli({"config", "set", "node.proxy.ask_hold", "301"});
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.err, Contains("\"301\" is not a valid value for node.proxy.ask_hold: "
                                        "expected seconds, from 1 to 300"));

  // A corrupt file is reported, never reset.
  node.dir.Write("node.json", "{\"node.sandbox.engine\": ");
  run = node.Cli({"config", "set", "node.sandbox.role", "true"});
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.err, Contains(node.config() + ":1:"));
  REQUIRE(ReadFile(node.config()) == "{\"node.sandbox.engine\": ");
}

TEST_CASE("setup: flags answer every question without a terminal", "[setup]") {
  PolicyNode node;
  Run run = node.Cli({"setup"});
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.err, Contains("--role on|off"));
  REQUIRE_THAT(run.result.err, Contains("--allowed-users"));
  REQUIRE_FALSE(std::filesystem::exists(node.config()));

  run = node.Cli({"setup", "--role", "on", "--runtime", "native", "--engine", "docker",
                  "--allowed-users", "alice,bob"});
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  auto config = mojoup::policy::NodeConfig::Load(node.config());
  REQUIRE(config->Get("node.sandbox.role") == "true");
  REQUIRE(config->Get("node.sandbox.runtime") == "native");
  REQUIRE(config->Get("node.sandbox.allowed_users") == "alice,bob");

  run = node.Cli({"setup", "--runtime", "podman"});
  REQUIRE(run.result.exit_code == 2);
  REQUIRE(mojoup::policy::NodeConfig::Load(node.config())->Get("node.sandbox.runtime") == "native");
}

TEST_CASE("setup: on a terminal it shows the verdict, then asks", "[setup]") {
  PolicyNode node;
  int master = -1;
  pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (const std::string& entry : node.env) putenv(const_cast<char*>(entry.c_str()));
    execl(node.cli.c_str(), node.cli.c_str(), "setup", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Reads until `text` appears (or 10 s pass), returning everything read.
  std::string screen;
  auto read_until = [&](const std::string& text) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (screen.find(text) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd fd{master, POLLIN, 0};
      if (poll(&fd, 1, 100) > 0) {
        char buf[4096];
        ssize_t n = read(master, buf, sizeof buf);
        if (n <= 0) break;
        screen.append(buf, static_cast<std::size_t>(n));
      }
    }
    return screen.find(text) != std::string::npos;
  };
  auto answer = [&](const std::string& line) {
    std::string text = line + "\n";
    REQUIRE(write(master, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  };
  REQUIRE(read_until("Agents run in a sandbox."));
  REQUIRE(read_until("the sandbox role)? yes/no [yes]: "));
  answer("");
  REQUIRE(read_until("or native (Docker alone) [openshell]: "));
  answer("podman");
  REQUIRE(read_until("expected openshell or native"));
  answer("native");
  REQUIRE(read_until("Container engine [docker]: "));
  answer("");
  REQUIRE(read_until("or * ["));
  answer("carol");
  REQUIRE(read_until("Wrote "));
  // The role is on and this node's Docker lacks the default image.
  REQUIRE(
      read_until("Build the agent image " + mojoup::sandbox::DefaultAgentImage() + " now? [Y/n] "));
  answer("maybe");
  REQUIRE(read_until("answer y or n"));
  answer("n");
  REQUIRE(read_until("Not built; sessions need it: build it with `mojoup-node image build`."));
  // Last, the sandbox service under systemd: no here.
  REQUIRE(read_until("system (for every allowed user), or no? [no] "));
  answer("sometimes");
  REQUIRE(read_until("answer user, system or no"));
  answer("");
  int status = 0;
  waitpid(pid, &status, 0);
  close(master);
  INFO(screen);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  auto config = mojoup::policy::NodeConfig::Load(node.config());
  REQUIRE(config->Get("node.sandbox.role") == "true");
  REQUIRE(config->Get("node.sandbox.runtime") == "native");
  REQUIRE(config->Get("node.sandbox.engine") == "docker");
  REQUIRE(config->Get("node.sandbox.allowed_users") == "carol");
}

TEST_CASE("setup: --build-image builds only the missing default image", "[setup][image]") {
  PolicyNode node;
  const std::string image = mojoup::sandbox::DefaultAgentImage();
  SECTION("there already: nothing to build, and no terminal needed") {
    node.daemon->AddImage(image, "sha256:7a121f86eae0", {{"mojoup.agent.codex", "0.171.0"}});
    Run run = node.Cli({"setup", "--role", "on", "--build-image"});
    INFO(run.result.out << run.result.err);
    REQUIRE(run.result.exit_code == 0);
    REQUIRE_THAT(run.result.out, Contains("  node.sandbox.role = true\n"));
    REQUIRE_THAT(run.result.out,
                 Contains("The agent image " + image + " is already on this node's Docker.\n"));
    // Alone, it writes nothing.
    run = node.Cli({"setup", "--build-image"});
    REQUIRE(run.result.exit_code == 0);
    REQUIRE(run.result.out == "The agent image " + image + " is already on this node's Docker.\n");
  }
  SECTION("a custom image is not this program's to build") {
    node.Set("node.sandbox.image", "my-agents:1");
    Run run = node.Cli({"setup", "--build-image"});
    REQUIRE(run.result.exit_code == 0);
    REQUIRE(run.result.out ==
            "node.sandbox.image is my-agents:1, not the agent image mojoup-node builds; nothing "
            "to build.\n");
  }
}

TEST_CASE("setup: the role off asks nothing about the image", "[setup][image]") {
  PolicyNode node;
  int master = -1;
  pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (const std::string& entry : node.env) putenv(const_cast<char*>(entry.c_str()));
    execl(node.cli.c_str(), node.cli.c_str(), "setup", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string screen;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool answered = false;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd fd{master, POLLIN, 0};
    if (poll(&fd, 1, 100) <= 0) continue;
    char buf[4096];
    ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0) break;  // the wizard ended
    screen.append(buf, static_cast<std::size_t>(n));
    if (!answered && screen.find("yes/no [yes]: ") != std::string::npos) {
      REQUIRE(write(master, "no\n", 3) == 3);
      answered = true;
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  close(master);
  INFO(screen);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE_THAT(screen, Contains("node.sandbox.role = false"));
  REQUIRE(screen.find("Build the agent image") == std::string::npos);
}

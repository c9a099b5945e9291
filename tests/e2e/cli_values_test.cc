// Every documented comma-separated value and every path-taking flag, through
// the built mojoup-node, as a user types them.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "../support/background_process.h"
#include "../support/fake_node.h"
#include "../support/test_support.h"
#include "mojoup/policy/node_config.h"
#include "mojoup/sandbox/agent_image.h"
#include "mojoup/credproxy/session_ca.h"

namespace {

using Catch::Matchers::Contains;
using mojoup::test::BackgroundProcess;
using mojoup::test::FakeNode;
using mojoup::test::Run;

constexpr const char* kKey = "fk-live-0123456789abcdefghijklmnopqrstuvwxyzABCD";

std::optional<std::string> Get(const FakeNode& node, const std::string& key) {
  auto config = mojoup::policy::NodeConfig::Load(node.config());
  REQUIRE(config.ok());
  return config->Get(key);
}

// Exit 2, one line on stderr naming `path` and saying `expected`.
void RequireBadPath(const Run& run, const std::string& path, const std::string& expected) {
  INFO(run.result.err);
  CHECK(run.result.exit_code == 2);
  CHECK_THAT(run.result.err, Contains(path));
  CHECK_THAT(run.result.err, Contains(expected));
  CHECK(std::count(run.result.err.begin(), run.result.err.end(), '\n') == 1);
}

TEST_CASE("cli: comma-separated values arrive whole, for every command that takes one",
          "[cli][lists]") {
  FakeNode node;
  SECTION("config set node.sandbox.allowed_users") {
    Run run = node.Cli({"config", "set", "node.sandbox.allowed_users", "alice,bob"});
    INFO(run.result.err);
    REQUIRE(run.result.exit_code == 0);
    REQUIRE(Get(node, "node.sandbox.allowed_users") == "alice,bob");
  }
  SECTION("config set node.sandbox.credential_hosts.NAME") {
    Run run = node.Cli(
        {"config", "set", "node.sandbox.credential_hosts.FOO", "api.foo.com,api2.foo.com"});
    INFO(run.result.err);
    REQUIRE(run.result.exit_code == 0);
    REQUIRE(Get(node, "node.sandbox.credential_hosts.FOO") == "api.foo.com,api2.foo.com");
    // A wildcard is refused for what it is, not for its comma.
    run = node.Cli({"config", "set", "node.sandbox.credential_hosts.FOO", "api.foo.com,*.foo.com"});
    REQUIRE(run.result.exit_code == 2);
    REQUIRE_THAT(run.result.err, Contains("*.foo.com"));
  }
  SECTION("setup --allowed-users") {
    Run run = node.Cli({"setup", "--role", "on", "--runtime", "native", "--engine", "docker",
                        "--allowed-users", "alice,bob"});
    INFO(run.result.err);
    REQUIRE(run.result.exit_code == 0);
    REQUIRE(Get(node, "node.sandbox.allowed_users") == "alice,bob");
  }
  SECTION("run --credential NAME=HOST,HOST") {
    std::vector<std::string> env = node.env;
    env.push_back(std::string("FOO=") + kKey);
    Run run = mojoup::test::RunWithEnv(
        env, {node.cli, "run", "--credential", "FOO=api.foo.com,api2.foo.com", "--", "true"});
    INFO(run.result.err);
    REQUIRE(run.result.exit_code == 0);
  }
  SECTION("proxy --credential NAME=HOST,HOST binds both hosts") {
    std::vector<std::string> env = node.env;
    env.push_back(std::string("FOO=") + kKey);
    BackgroundProcess proxy(env, {node.cli, "proxy", "--policy", node.dir.Write("p.json", "{}"),
                                  "--credential", "FOO=api.foo.com,api2.foo.com"});
    auto line = proxy.ReadLine(std::chrono::seconds(10));
    INFO(proxy.Stderr());
    REQUIRE(line.has_value());
    rapidjson::Document doc;
    doc.Parse(line->c_str());
    REQUIRE(doc.IsObject());
    const std::string stand_in = doc["env"]["FOO"].GetString();
    REQUIRE(stand_in.size() == std::string(kKey).size());
    REQUIRE(stand_in != kKey);
    proxy.Stop();
  }
}

TEST_CASE(
    "cli: a path that is not there is exit 2 naming it, for every flag and key that takes one",
    "[cli][paths]") {
  FakeNode node;
  const std::string missing = node.dir / "no/such/thing";
  SECTION("--config FILE") {
    for (const std::vector<std::string>& args : {std::vector<std::string>{"doctor"},
                                                 {"status"},
                                                 {"policy", "explain"},
                                                 {"proxy"},
                                                 {"run", "--", "true"},
                                                 {"stop", "--all"},
                                                 {"config", "list"},
                                                 {"config", "get", "node.sandbox.runtime"}}) {
      std::vector<std::string> with = args;
      with.insert(with.begin() + (args[0] == "run" ? 1 : static_cast<long>(args.size())),
                  {"--config", missing});
      INFO(with[0]);
      RequireBadPath(node.Cli(with), missing, "no such file; expected the node config file");
    }
    // Writing a config may create it.
    REQUIRE(node.Cli({"config", "set", "node.sandbox.runtime", "native", "--config",
                      node.dir / "new.json"})
                .result.exit_code == 0);
  }
  SECTION("--repo DIR") {
    RequireBadPath(node.Cli({"policy", "explain", "--repo", missing}), missing,
                   "no such directory");
    RequireBadPath(node.Cli({"proxy", "--repo", missing}), missing, "no such directory");
    RequireBadPath(node.Cli({"run", "--repo", missing, "--", "true"}), missing, "not a directory");
  }
  SECTION("--policy FILE") {
    Run run = node.Cli({"proxy", "--policy", missing});
    INFO(run.result.err);
    REQUIRE(run.result.exit_code == 2);
    REQUIRE_THAT(run.result.err, Contains(missing));
  }
  SECTION("--upstream-ca FILE") {
    RequireBadPath(node.Cli({"proxy", "--upstream-ca", missing}), missing,
                   "no such file; expected a PEM file of CA certificates");
    RequireBadPath(node.Cli({"run", "--upstream-ca", missing, "--", "true"}), missing,
                   "no such file; expected a PEM file of CA certificates");
    const std::string not_pem = node.dir.Write("not.pem", "hello\n");
    RequireBadPath(node.Cli({"proxy", "--upstream-ca", not_pem}), not_pem,
                   "holds no PEM certificate");
  }
  SECTION("--audit FILE") {
    RequireBadPath(node.Cli({"proxy", "--audit", missing}), missing, "does not exist");
    RequireBadPath(node.Cli({"run", "--audit", missing, "--", "true"}), missing, "does not exist");
    RequireBadPath(node.Cli({"proxy", "--audit", node.dir.path()}), node.dir.path(),
                   "is a directory");
  }
  SECTION("--socket PATH") {
    RequireBadPath(node.Cli({"proxy", "--socket", missing}), missing, "does not exist");
  }
  SECTION("config keys that name files") {
    RequireBadPath(node.Cli({"config", "set", "policy.org", missing}), missing,
                   "no such file; expected a policy file");
    RequireBadPath(node.Cli({"config", "set", "policy.team", missing}), missing,
                   "no such file; expected a policy file");
    RequireBadPath(node.Cli({"config", "set", "node.sandbox.openshell_path", missing}), missing,
                   "no such file; expected the openshell program");
    const std::string plain = node.dir.Write("openshell-not-executable", "");
    RequireBadPath(node.Cli({"config", "set", "node.sandbox.openshell_path", plain}), plain,
                   "not executable");
    // Nothing was written.
    REQUIRE_FALSE(Get(node, "policy.org").has_value());
    REQUIRE_FALSE(Get(node, "node.sandbox.openshell_path").has_value());
  }
}

TEST_CASE("cli: the proxy listens on loopback only", "[cli][proxy]") {
  FakeNode node;
  for (const char* address : {"0.0.0.0:0", "[::]:0", "192.0.2.1:3128", "example.com:0"}) {
    INFO(address);
    Run run = node.Cli({"proxy", "--listen", address});
    CHECK(run.result.exit_code == 2);
    CHECK_THAT(run.result.err, Contains("not a loopback address"));
  }
}

TEST_CASE("cli: a command given without -- is named, with where it goes", "[cli][run]") {
  FakeNode node;
  Run run = node.Cli({"run", "sh", "-c", "true"});
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.err, Contains("put it after --: mojoup-node run [flags] -- sh -c true"));
  run = node.Cli({"run", "--tool", "codex", "codex", "--yolo"});
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.err, Contains("-- codex --yolo"));
}

TEST_CASE("cli: one spelling of a switch everywhere", "[cli][role]") {
  FakeNode node;
  for (const auto& [word, stored] :
       std::vector<std::pair<std::string, std::string>>{{"on", "true"},
                                                        {"off", "false"},
                                                        {"yes", "true"},
                                                        {"no", "false"},
                                                        {"true", "true"},
                                                        {"false", "false"}}) {
    INFO(word);
    REQUIRE(node.Cli({"config", "set", "node.sandbox.role", word}).result.exit_code == 0);
    REQUIRE(Get(node, "node.sandbox.role") == stored);
    REQUIRE(node.Cli({"setup", "--role", word}).result.exit_code == 0);
    REQUIRE(Get(node, "node.sandbox.role") == stored);
  }
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"config", "set", "node.sandbox.role", "maybe"},
        {"setup", "--role", "maybe"}}) {
    Run run = node.Cli(args);
    REQUIRE(run.result.exit_code == 2);
    REQUIRE_THAT(run.result.err, Contains("on or off, yes or no, true or false"));
  }
}

TEST_CASE("cli: what a user meets early", "[cli]") {
  FakeNode node;
  Run list = node.Cli({"config", "list"});
  REQUIRE(list.result.exit_code == 0);
  REQUIRE_THAT(list.result.out, Contains("Nothing is set in " + node.config()));
  Run get = node.Cli({"config", "get", "node.sandbox.cpus"});
  REQUIRE(get.result.exit_code == 0);
  REQUIRE_THAT(get.result.err, Contains("that is its default"));
  // The sandbox image has a default: the agent image `image build` makes.
  Run image = node.Cli({"config", "get", "node.sandbox.image"});
  REQUIRE(image.result.exit_code == 0);
  REQUIRE(image.result.out == mojoup::sandbox::DefaultAgentImage() + "\n");
  REQUIRE_THAT(image.result.err, Contains("node.sandbox.image is not set in " + node.config() +
                                          "; that is its default"));
  REQUIRE_THAT(
      list.result.out,
      Contains("node.sandbox.image = " + mojoup::sandbox::DefaultAgentImage() + "  (default)\n"));
  for (const char* command : {"run", "status", "config", "policy", "proxy", "setup", "doctor"}) {
    INFO(command);
    Run help = node.Cli({command, "--help"});
    REQUIRE(help.result.exit_code == 0);
    std::string lower = help.result.out;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    std::size_t usages = 0;
    for (std::size_t at = lower.find("usage:"); at != std::string::npos;
         at = lower.find("usage:", at + 1)) {
      ++usages;
    }
    REQUIRE(usages == 1);
  }
}

TEST_CASE("cli: with Docker down, run and status say it once, in the verdict", "[cli][docker]") {
  FakeNode node;
  node.env[0] = "DOCKER_HOST=unix://" + (node.dir / "no-docker.sock");
  node.dir.Write("node.json", R"({"node.sandbox.runtime": "native"})");
  Run status = node.Cli({"status"});
  INFO(status.result.err);
  REQUIRE(status.result.exit_code == 0);
  REQUIRE_THAT(status.result.out, Contains("cannot sandbox agents"));
  REQUIRE(status.result.err.empty());
  Run run = node.Cli({"run", "--", "true"});
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.err, !Contains("could not list"));
  REQUIRE_THAT(run.result.err, !Contains("No such file"));
}

}  // namespace

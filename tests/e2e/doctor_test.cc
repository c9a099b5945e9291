// `mojoup-node doctor` as a user runs it: the built CLI against the fake
// Docker daemon, the fake openshell, and a real held listener slot.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>

#include "../support/fake_node.h"
#include "mojoup/sandbox/agent_image.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using mojoup::probe::testing::FakeDockerDaemon;
using mojoup::probe::testing::FakeOpenShellOptions;
using mojoup::probe::testing::WriteFakeOpenShell;
using mojoup::test::BinDir;
using mojoup::test::FakeNode;
using mojoup::test::FirstLine;
using mojoup::test::kSystemPath;
using mojoup::test::Run;
using mojoup::test::RunWithEnv;
using mojoup::test::TempDir;
using Gateway = FakeOpenShellOptions::Gateway;

namespace {

// The node, with `Doctor` for `mojoup-node doctor ARGS`.
struct Node : FakeNode {
  using FakeNode::FakeNode;
  Run Doctor(std::vector<std::string> args = {}, std::vector<std::string> prefix = {}) const {
    args.insert(args.begin(), "doctor");
    return Cli(std::move(args), std::move(prefix));
  }
};

struct Json {
  rapidjson::Document doc;
  std::string StatusOf(const std::string& id) const {
    for (const auto& check : doc["checks"].GetArray()) {
      if (id == check["id"].GetString()) return check["status"].GetString();
    }
    return "absent";
  }
};

// Runs doctor --json and checks what every fault must show: exit 1 within
// 3 s, the named check failed, and a one-sentence reason with cause and fix.
void ExpectFault(const Node& node, const std::string& check_id, const std::string& cause,
                 const std::string& fix, std::vector<std::string> prefix = {}) {
  Run run = node.Doctor({"--json"}, prefix);
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 1);
  REQUIRE(run.seconds < 3.0);
  Json json;
  json.doc.Parse(run.result.out.c_str());
  REQUIRE_FALSE(json.doc.HasParseError());
  REQUIRE(json.StatusOf(check_id) == "fail");
  std::string reason = json.doc["reason"].GetString();
  REQUIRE_THAT(reason, Contains(cause));
  REQUIRE_THAT(reason, Contains(fix));
  REQUIRE(reason.back() == '.');
  REQUIRE(reason.find('\n') == std::string::npos);
  REQUIRE(std::string(json.doc["verdict"].GetString()) ==
          "This machine cannot sandbox agents: " + reason);

  // The human form says the same on its first line.
  Run text = node.Doctor({}, prefix);
  REQUIRE(text.result.exit_code == 1);
  REQUIRE(FirstLine(text.result.out) == "This machine cannot sandbox agents: " + reason);
}

}  // namespace

TEST_CASE("doctor: a healthy node exits 0 and says agents run in a sandbox", "[doctor]") {
  Node node;
  Run run = node.Doctor();
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(FirstLine(run.result.out) == "Agents run in a sandbox.");
  REQUIRE_THAT(run.result.out, Contains("pass  docker.daemon"));
  REQUIRE(run.result.out.find('\033') == std::string::npos);

  Run json_run = node.Doctor({"--json"});
  REQUIRE(json_run.result.exit_code == 0);
  Json json;
  json.doc.Parse(json_run.result.out.c_str());
  REQUIRE(std::string(json.doc["schema"].GetString()) == "mojoup.doctor/v1");
  REQUIRE(json.doc["can_sandbox"].IsTrue());
  REQUIRE(json.doc["reason"].IsNull());
}

TEST_CASE("doctor: each Docker fault", "[doctor][docker]") {
  SECTION("no socket") {
    Node node;
    node.env[0] = "DOCKER_HOST=unix://" + (node.dir / "missing.sock");
    ExpectFault(node, "docker.daemon", "not installed or was never started",
                "sudo systemctl start docker");
  }
  SECTION("not running") {
    ExpectFault(Node(FakeDockerDaemon::Mode::kRefuse), "docker.daemon", "Docker is not running",
                "start Docker with `sudo systemctl start docker`");
  }
  SECTION("no answer in time") {
    ExpectFault(Node(FakeDockerDaemon::Mode::kHang), "docker.daemon", "did not answer within 2 s",
                "sudo systemctl restart docker");
  }
  SECTION("an API too old") {
    Node node;
    node.daemon->SetVersion("1.13.1", "1.26");
    ExpectFault(node, "docker.daemon", "Engine API 1.26", "upgrade Docker");
  }
  SECTION("an error from the daemon") {
    ExpectFault(Node(FakeDockerDaemon::Mode::kError500), "docker.daemon", "HTTP 500",
                "journalctl -u docker");
  }
  SECTION("permission denied") {
    if (geteuid() != 0) MOJOUP_SKIP("needs root to run doctor as another user");
    Node node;
    REQUIRE(chmod(node.daemon->socket_path().c_str(), 0660) == 0);
    // nobody runs a copy in the test's own world-readable directory: the
    // build tree may sit under a private home.
    std::filesystem::copy_file(BinDir() + "/mojoup-node", node.dir / "mojoup-node");
    node.cli = node.dir / "mojoup-node";
    ExpectFault(node, "docker.daemon", "user nobody is not in the socket's group root",
                "sudo usermod -aG root nobody",
                {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
  }
}

TEST_CASE("doctor: each OpenShell fault", "[doctor][openshell]") {
  auto with = [](Gateway gateway) {
    FakeOpenShellOptions options;
    options.gateway = gateway;
    return Node(FakeDockerDaemon::Mode::kAnswer, options);
  };
  SECTION("no CLI") {
    Node node;
    node.env[1] = "PATH=" + kSystemPath;
    ExpectFault(node, "openshell.cli", "`openshell` is not on PATH", "node.sandbox.runtime native");
  }
  SECTION("gateway not reachable") {
    ExpectFault(with(Gateway::kUnreachable), "openshell.gateway", "is not reachable",
                "systemctl --user enable --now openshell-gateway");
  }
  SECTION("gateway disconnected") {
    ExpectFault(with(Gateway::kDisconnected), "openshell.gateway", "is disconnected",
                "systemctl --user enable --now openshell-gateway");
  }
  SECTION("gateway unhealthy") {
    ExpectFault(with(Gateway::kError), "openshell.gateway", "unhealthy", "journalctl --user");
  }
  SECTION("no gateway configured") {
    ExpectFault(with(Gateway::kNotConfigured), "openshell.gateway", "no gateway configured",
                "openshell gateway add");
  }
  SECTION("not signed in") {
    ExpectFault(with(Gateway::kUnauthenticated), "openshell.gateway",
                "does not accept this user's credentials", "openshell gateway login local");
  }
  SECTION("gateway hangs") {
    ExpectFault(with(Gateway::kHang), "openshell.gateway", "did not answer within 2 s",
                "systemctl --user restart openshell-gateway");
  }
}

TEST_CASE("doctor: Docker and the gateway both hanging still ends within 3 s", "[doctor]") {
  FakeOpenShellOptions options;
  options.gateway = Gateway::kHang;
  Node node(FakeDockerDaemon::Mode::kHang, options);
  Run run = node.Doctor({"--json"});
  REQUIRE(run.result.exit_code == 1);
  REQUIRE(run.seconds < 3.0);
}

TEST_CASE("doctor: a held seccomp listener slot", "[doctor][seccomp]") {
  Node node;
  ExpectFault(node, "kernel.seccomp_listener", "held by another supervisor",
              "run the node outside that supervisor", {BinDir() + "/hold-listener"});
}

TEST_CASE("doctor: the native runtime needs no OpenShell", "[doctor][config]") {
  Node node;
  node.env[1] = "PATH=" + kSystemPath;
  node.dir.Write("node.json", R"({"node.sandbox.runtime": "native"})");
  Run run = node.Doctor();
  INFO(run.result.out);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(FirstLine(run.result.out) == "Agents run in a sandbox.");
  REQUIRE_THAT(run.result.out, Contains("skip  openshell.cli"));
}

TEST_CASE("doctor: bad usage and bad config exit 2 and say what was wrong", "[doctor][usage]") {
  Node node;
  Run run = node.Doctor({"--jsn"});
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.err, Contains("jsn"));
  REQUIRE(run.result.out.empty());

  run = node.Doctor({"extra"});
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.err, Contains("unexpected argument \"extra\""));

  node.dir.Write("node.json", "{\"node.sandbox.runtime\": \"native\"");
  run = node.Doctor();
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.err, Contains(node.dir / "node.json:1:"));

  run = node.Doctor(
      {"--config", node.dir.Write("other.json", R"({"node.sandbox.engin": "docker"})")});
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.err, Contains("unknown config key \"node.sandbox.engin\""));
}

TEST_CASE("mojoup-node: --help, --version, and unknown commands", "[cli]") {
  Node node;
  Run run = RunWithEnv(node.env, {BinDir() + "/mojoup-node", "--help"});
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("doctor"));
  run = RunWithEnv(node.env, {BinDir() + "/mojoup-node", "--version"});
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, StartsWith("mojoup-node 0."));
  run = RunWithEnv(node.env, {BinDir() + "/mojoup-node", "doctor", "--help"});
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("--json"));
  run = RunWithEnv(node.env, {BinDir() + "/mojoup-node", "docter"});
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.err, Contains("unknown command \"docter\""));
  run = RunWithEnv(node.env, {BinDir() + "/mojoup-node"});
  REQUIRE(run.result.exit_code == 2);
}

TEST_CASE("doctor: sandbox.image warns when the image is missing, without changing the verdict",
          "[doctor][image]") {
  Node node;
  const std::string image = mojoup::sandbox::DefaultAgentImage();
  Run run = node.Doctor();
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(FirstLine(run.result.out) == "Agents run in a sandbox.");
  REQUIRE_THAT(run.result.out,
               Contains("  warn  sandbox.image            The sandbox image " + image +
                        " is not on this node's Docker.\n"
                        "                                 fix: Build it with "
                        "`mojoup-node image build`.\n"));

  Run json_run = node.Doctor({"--json"});
  REQUIRE(json_run.result.exit_code == 0);
  Json json;
  json.doc.Parse(json_run.result.out.c_str());
  REQUIRE(json.doc["can_sandbox"].IsTrue());
  REQUIRE(json.StatusOf("sandbox.image") == "warn");
  const auto& check = json.doc["checks"][json.doc["checks"].Size() - 2];
  REQUIRE(std::string(check["id"].GetString()) == "sandbox.image");
  REQUIRE(check["required"].IsFalse());
  REQUIRE(std::string(check["remedy"].GetString()) == "Build it with `mojoup-node image build`.");

  // A custom image: the operator's to build or load.
  node.dir.Write("node.json", R"({"node.sandbox.image": "my-agents:1"})");
  run = node.Doctor();
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("The sandbox image my-agents:1 (node.sandbox.image) is not "
                                        "on this node's Docker.\n"));
  REQUIRE_THAT(run.result.out, Contains("fix: Build or load it, or set node.sandbox.image.\n"));
}

TEST_CASE("doctor: sandbox.image names the agent versions in the image", "[doctor][image]") {
  Node node;
  const std::string image = mojoup::sandbox::DefaultAgentImage();
  node.daemon->AddImage(image, "sha256:7a121f86eae0",
                        {{"mojoup.image", "agents"},
                         {"mojoup.image.base", "debian:12 (mmdebstrap)"},
                         {"mojoup.agent.claude-code", "2.1.332"},
                         {"mojoup.agent.codex", "0.171.0"}},
                        1'693'788'060);
  Run run = node.Doctor();
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("  pass  sandbox.image            The sandbox image " +
                                        image + " holds claude-code 2.1.332, codex 0.171.0.\n"));
}

TEST_CASE("doctor: with Docker down only docker.daemon reports it", "[doctor][image]") {
  Node node(FakeDockerDaemon::Mode::kRefuse);
  Run run = node.Doctor({"--json"});
  REQUIRE(run.result.exit_code == 1);
  Json json;
  json.doc.Parse(run.result.out.c_str());
  REQUIRE(json.StatusOf("docker.daemon") == "fail");
  REQUIRE(json.StatusOf("sandbox.image") == "skip");
  REQUIRE_THAT(std::string(json.doc["reason"].GetString()), Contains("Docker is not running"));
}

TEST_CASE("status: the sandbox image and its agents, or null", "[status][image]") {
  Node node;
  node.dir.Write("node.json", R"({"node.sandbox.runtime": "native"})");
  const std::string image = mojoup::sandbox::DefaultAgentImage();
  Run run = node.Cli({"status", "--json"});
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 0);
  rapidjson::Document doc;
  doc.Parse(run.result.out.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  REQUIRE(doc["image"].IsNull());
  REQUIRE(doc["sessions"].IsArray());
  REQUIRE(std::string(doc["schema"].GetString()) == "mojoup.status/v1");
  run = node.Cli({"status"});
  REQUIRE_THAT(run.result.out,
               Contains("\nThe sandbox image " + image +
                        " is not on this node's Docker; build it with `mojoup-node image "
                        "build`.\n"));

  node.daemon->AddImage(
      image, "sha256:7a121f86eae0",
      {{"mojoup.image.base", "debian:12-slim"}, {"mojoup.agent.claude-code", "2.1.332"}});
  run = node.Cli({"status", "--json"});
  doc.Parse(run.result.out.c_str());
  REQUIRE(std::string(doc["image"]["reference"].GetString()) == image);
  REQUIRE(std::string(doc["image"]["id"].GetString()) == "sha256:7a121f86eae0");
  REQUIRE(std::string(doc["image"]["base"].GetString()) == "debian:12-slim");
  REQUIRE(std::string(doc["image"]["agents"]["claude-code"].GetString()) == "2.1.332");
  run = node.Cli({"status"});
  REQUIRE_THAT(run.result.out, Contains("\nSandbox image " + image + ": claude-code 2.1.332.\n"));
}

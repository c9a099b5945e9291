// mojoup::Node through its seams: a mock kernel, a fake Docker daemon on a
// real unix socket, and the in-memory backend; no Docker, no OpenShell.
#include "mojoup/sandbox/node.h"

#include <rapidjson/document.h>
#include <signal.h>

#include <catch2/catch.hpp>

#include "../support/test_support.h"
#include "mojoup/probe/testing/fake_docker_daemon.h"
#include "mojoup/probe/testing/mock_kernel.h"
#include "mojoup/sandbox/testing/in_memory_backend.h"

using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;
using mojoup::Node;
using mojoup::NodeOptions;
using mojoup::RunRequest;
using mojoup::probe::testing::FakeDockerDaemon;
using mojoup::probe::testing::MockKernel;
using mojoup::sandbox::testing::InMemoryBackend;
using mojoup::test::TempDir;
using Result = mojoup::policy::SandboxDecision::Result;

namespace {

// A node on a healthy host with the native runtime, whose sandboxes are the
// in-memory backend's, and a repository whose policy says `sandbox`.
struct World {
  TempDir dir;
  MockKernel kernel;
  std::unique_ptr<FakeDockerDaemon> daemon;
  std::unique_ptr<mojoup::probe::DockerApi> docker = mojoup::probe::MakeDockerApi();
  InMemoryBackend backend;
  std::vector<std::string> notices;
  std::string repo;

  explicit World(const std::string& sandbox = "required") {
    daemon =
        std::make_unique<FakeDockerDaemon>(dir / "docker.sock", FakeDockerDaemon::Mode::kAnswer);
    kernel.env["DOCKER_HOST"] = daemon->host();
    dir.Write("node.json", R"({"node.sandbox.runtime": "native", "node.sandbox.image": "img",
                              "node.sandbox.allowed_users": "*"})");
    repo = dir / "src/app";
    mojoup::test::MakeGitDir(repo + "/.git");
    if (!sandbox.empty()) {
      dir.Write("src/app/.mojoup/policy.json", R"({"agents": {"sandbox": ")" + sandbox + R"("}})");
    }
  }

  Node Open() {
    NodeOptions options;
    options.config_path = dir / "node.json";
    options.state_dir = dir / "state";
    options.kernel = &kernel;
    options.docker = docker.get();
    options.backend = &backend;
    options.notice = [this](std::string_view line) { notices.emplace_back(line); };
    auto node = Node::Open(std::move(options));
    REQUIRE(node.ok());
    return *std::move(node);
  }

  RunRequest Request(std::vector<std::string> command) const {
    RunRequest request;
    request.workdir = repo;
    request.command = std::move(command);
    return request;
  }
};

}  // namespace

TEST_CASE("the node config steers the probe", "[node]") {
  TempDir dir;
  auto config = mojoup::policy::NodeConfig::Load(dir / "none.json");
  REQUIRE(config.ok());
  auto options = mojoup::ProbeOptionsFor(*config);
  REQUIRE(options.require_openshell);
  REQUIRE_FALSE(options.openshell_path.has_value());
  config = mojoup::policy::NodeConfig::Load(dir.Write("node.json", R"({
    "node.sandbox.runtime": "native",
    "node.sandbox.openshell_path": "/opt/openshell/bin/openshell"})"));
  REQUIRE(config.ok());
  options = mojoup::ProbeOptionsFor(*config);
  REQUIRE_FALSE(options.require_openshell);
  REQUIRE(options.openshell_path == "/opt/openshell/bin/openshell");
}

TEST_CASE("a named config file that is missing is bad input", "[node]") {
  TempDir dir;
  NodeOptions options;
  options.config_path = dir / "typo.json";
  options.config_named = true;
  auto node = Node::Open(std::move(options));
  REQUIRE(absl::IsInvalidArgument(node.status()));
  REQUIRE_THAT(std::string(node.status().message()),
               StartsWith("--config " + (dir / "typo.json") + ": no such file"));
  NodeOptions fresh;
  fresh.config_path = dir / "typo.json";
  REQUIRE(Node::Open(std::move(fresh)).ok());
}

TEST_CASE("doctor and explain go through the seams", "[node]") {
  World world;
  Node node = world.Open();
  REQUIRE(node.Doctor().verdict.can_sandbox);

  auto explained = node.Explain(world.repo, "", "api.github.com");
  REQUIRE(explained.ok());
  REQUIRE(explained->decision.result == Result::kSandboxed);
  REQUIRE(explained->host.has_value());
  REQUIRE_THAT(explained->Json(), Contains("\"schema\": \"mojoup.policy/v1\""));

  world.kernel.landlock_abi = mojoup::probe::SyscallResult::Err(EOPNOTSUPP);
  explained = node.Explain(world.repo);
  REQUIRE(explained.ok());
  REQUIRE(explained->decision.result == Result::kRefused);
  REQUIRE_THAT(explained->decision.reason, Contains("this machine cannot sandbox agents"));

  REQUIRE(absl::IsInvalidArgument(node.Explain(world.repo, "", "host:99999").status()));
  REQUIRE(absl::IsInvalidArgument(node.Explain(world.repo, "no-such-tool").status()));
  auto missing = node.Explain(world.dir / "nowhere");
  REQUIRE_THAT(std::string(missing.status().message()), Contains("no such directory"));
  world.dir.Write("src/app/.mojoup/policy.json", R"({"agents": {"sandbox": "requird"}})");
  auto broken = node.Explain(world.repo);
  REQUIRE(absl::IsInvalidArgument(broken.status()));
  REQUIRE_THAT(std::string(broken.status().message()), Contains(".mojoup/policy.json"));
}

TEST_CASE("a run in a sandbox: the exit code, the repository at its path, nothing left", "[node]") {
  World world;
  mojoup::sandbox::SandboxSpec seen;
  world.backend.SetScript(
      [&seen](const mojoup::sandbox::SandboxSpec& spec, const mojoup::sandbox::Stdio&) {
        seen = spec;
        return 3;
      });
  Node node = world.Open();
  auto result = node.Run(world.Request({"make", "test"}));
  REQUIRE(result.ok());
  REQUIRE(result->exit_code == 3);
  REQUIRE(result->decision.result == Result::kSandboxed);
  REQUIRE(seen.workdir == world.repo);
  REQUIRE(seen.command == std::vector<std::string>{"make", "test"});
  REQUIRE(seen.environment.count("HTTPS_PROXY") == 1);
  REQUIRE(world.backend.sandboxes().empty());
  auto sessions = node.Sessions();
  REQUIRE(sessions.ok());
  REQUIRE(sessions->empty());
  REQUIRE_FALSE(world.notices.empty());
  REQUIRE_THAT(world.notices.front(), Contains("requires a sandbox"));
}

TEST_CASE("a refused run starts nothing and says why", "[node]") {
  World world;
  world.kernel.landlock_abi = mojoup::probe::SyscallResult::Err(EOPNOTSUPP);
  Node node = world.Open();
  auto launch = node.Start(world.Request({"true"}));
  REQUIRE(launch.ok());
  REQUIRE(launch->run == nullptr);
  REQUIRE(launch->decision.result == Result::kRefused);
  auto result = node.Run(world.Request({"true"}));
  REQUIRE(absl::IsFailedPrecondition(result.status()));
  REQUIRE(world.backend.sandboxes().empty());
}

TEST_CASE("bad requests are refused before anything starts", "[node]") {
  World world;
  Node node = world.Open();
  auto bad = [&node](RunRequest request) {
    auto launch = node.Start(std::move(request));
    REQUIRE(absl::IsInvalidArgument(launch.status()));
    return std::string(launch.status().message());
  };
  REQUIRE(bad(world.Request({})) == "give the command to run");
  RunRequest request = world.Request({"true"});
  request.upstream_ca = world.dir / "none.pem";
  REQUIRE_THAT(bad(request), StartsWith("--upstream-ca " + request.upstream_ca + ": no such file"));
  request = world.Request({"true"});
  request.audit_file = world.dir / "no/dir/audit.log";
  REQUIRE_THAT(bad(request), Contains("does not exist"));
  request = world.Request({"true"});
  request.resolve = {"not-a-pin"};
  bad(request);
  request = world.Request({"true"});
  request.workdir = world.dir / "nowhere";
  REQUIRE_THAT(bad(request), EndsWith("not a directory"));
  REQUIRE(world.backend.sandboxes().empty());
  REQUIRE(world.notices.empty());
}

TEST_CASE("when nobody asks for a sandbox the command runs as a process", "[node]") {
  World world("");
  Node node = world.Open();
  auto result =
      node.Run(world.Request({"sh", "-c", "test \"$(pwd)\" = \"$0\" && exit 5", world.repo}));
  REQUIRE(result.ok());
  REQUIRE(result->decision.result == Result::kUnsandboxed);
  REQUIRE(result->exit_code == 5);

  result = node.Run(world.Request({"/no/such/program"}));
  REQUIRE(result.ok());
  REQUIRE(result->exit_code == 127);
  REQUIRE_THAT(world.notices.back(), StartsWith("cannot run /no/such/program: "));

  // A signal sent before the process exists reaches it once it does.
  auto launch = node.Start(world.Request({"sleep", "30"}));
  REQUIRE(launch.ok());
  REQUIRE(launch->run->Signal(SIGTERM).ok());
  auto code = launch->run->Wait({});
  REQUIRE(code.ok());
  REQUIRE(*code == 128 + SIGTERM);
}

TEST_CASE("status JSON lists sessions with a null tool when none", "[node]") {
  mojoup::probe::Verdict verdict{true, std::nullopt};
  mojoup::sandbox::SessionRecord record;
  record.id = "s1";
  record.pid = 42;
  rapidjson::Document doc;
  doc.Parse(mojoup::StatusJson(verdict, {record}).c_str());
  REQUIRE_FALSE(doc.HasParseError());
  REQUIRE(std::string(doc["schema"].GetString()) == "mojoup.status/v1");
  REQUIRE(doc["sessions"][0]["tool"].IsNull());
  REQUIRE(doc["sessions"][0]["pid"].GetInt() == 42);
  REQUIRE_THAT(mojoup::StatusText(verdict, {}), EndsWith("No sessions in sandboxes.\n"));
}

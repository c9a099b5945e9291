// mojoup::Node through its seams: a mock kernel, a fake Docker daemon on a
// real unix socket, and the in-memory backend; no Docker, no OpenShell.
#include "mojoup/sandbox/node.h"

#include <fcntl.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "../support/test_support.h"
#include "mojoup/credproxy/approvals.h"
#include "mojoup/credproxy/proxy.h"
#include "mojoup/internal/fd.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/probe/testing/fake_docker_daemon.h"
#include "mojoup/probe/testing/mock_kernel.h"
#include "mojoup/probe/testing/scripted_command_runner.h"
#include "mojoup/sandbox/native_backend.h"
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
  mojoup::probe::CommandRunner* commands = nullptr;  // the system's when not lent
  mojoup::sandbox::Getenv getenv;                    // this process's when unset

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
    options.commands = commands;
    options.getenv = getenv;
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
  REQUIRE_FALSE(explained->ask.on);
  REQUIRE_THAT(explained->Text(), Contains("  on this node: " + explained->ask.why + "\n"));

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

TEST_CASE("a credential's value comes from the node's getenv, not its environment", "[node]") {
  World world;
  constexpr char kName[] = "MOJOUP_NODE_TEST_TOKEN";
  REQUIRE(std::getenv(kName) == nullptr);
  world.getenv = [&kName](std::string_view name) -> std::optional<std::string> {
    if (name == kName) return "the caller's secret";
    return std::nullopt;
  };
  std::vector<mojoup::sandbox::SandboxCredential> seen;
  world.backend.SetScript(
      [&seen](const mojoup::sandbox::SandboxSpec& spec, const mojoup::sandbox::Stdio&) {
        seen = spec.credentials;
        return 0;
      });
  Node node = world.Open();
  RunRequest request = world.Request({"true"});
  request.credentials = {std::string(kName) + "=api.example.test"};
  auto result = node.Run(request);
  REQUIRE(result.ok());
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].name == kName);
  CHECK(seen[0].value == "the caller's secret");
  CHECK(std::getenv(kName) == nullptr);

  // Without it, the process's environment is asked, which lacks the name.
  world.getenv = nullptr;
  Node plain = world.Open();
  auto refused = plain.Run(request);
  REQUIRE(absl::IsInvalidArgument(refused.status()));
  CHECK(refused.status().message() ==
        "--credential MOJOUP_NODE_TEST_TOKEN: MOJOUP_NODE_TEST_TOKEN is not set in this "
        "process's environment");
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

TEST_CASE("an unsandboxed command gets the given streams and the node's environment", "[node]") {
  World world("");
  Node node = world.Open();
  ::setenv("MOJOUP_NODE_TEST_VALUE", "from the node", 1);
  mojoup::internal::Fd out(
      ::open((world.dir / "out").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  mojoup::internal::Fd err(
      ::open((world.dir / "err").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  REQUIRE((out.ok() && err.ok()));
  mojoup::sandbox::Stdio stdio;
  stdio.in = -1;  // none: it reads an empty input
  stdio.out = out.get();
  stdio.err = err.get();
  auto result = node.Run(
      world.Request({"sh", "-c", "cat; printf '%s' \"$MOJOUP_NODE_TEST_VALUE\"; printf oops >&2"}),
      stdio);
  ::unsetenv("MOJOUP_NODE_TEST_VALUE");
  REQUIRE(result.ok());
  CHECK(result->exit_code == 0);
  CHECK(mojoup::test::Slurp(world.dir / "out") == "from the node");
  CHECK(mojoup::test::Slurp(world.dir / "err") == "oops");
}

TEST_CASE("an unsandboxed program that cannot be run is 126, as a shell says", "[node]") {
  World world("");
  Node node = world.Open();
  const std::string script = world.dir.Write("not-executable", "#!/bin/sh\nexit 0\n");
  ::chmod(script.c_str(), 0644);
  auto result = node.Run(world.Request({script}));
  REQUIRE(result.ok());
  CHECK(result->exit_code == 126);
  REQUIRE_FALSE(world.notices.empty());
  CHECK(world.notices.back() == "cannot run " + script + ": Permission denied");

  // A signal this process handles ends the command as its default would.
  struct sigaction handle {};
  struct sigaction old {};
  handle.sa_handler = [](int) {};
  REQUIRE(::sigaction(SIGUSR1, &handle, &old) == 0);
  result = node.Run(world.Request({"sh", "-c", "kill -USR1 $$; exit 3"}));
  ::sigaction(SIGUSR1, &old, nullptr);
  REQUIRE(result.ok());
  CHECK(result->exit_code == 128 + SIGUSR1);
}

TEST_CASE("status JSON lists sessions with a null tool when none", "[node]") {
  mojoup::probe::Verdict verdict{true, std::nullopt};
  mojoup::sandbox::SessionRecord record;
  record.id = "s1";
  record.pid = 42;
  rapidjson::Document doc;
  const absl::Status unknown = absl::UnavailableError("Docker does not answer");
  doc.Parse(mojoup::StatusJson(verdict, {record}, unknown).c_str());
  REQUIRE_FALSE(doc.HasParseError());
  REQUIRE(std::string(doc["schema"].GetString()) == "mojoup.status/v1");
  REQUIRE(doc["sessions"][0]["tool"].IsNull());
  REQUIRE(doc["sessions"][0]["pid"].GetInt() == 42);
  REQUIRE_THAT(mojoup::StatusText(verdict, {}, unknown), EndsWith("No sessions in sandboxes.\n"));
}

namespace {

// The labels `mojoup-node image build` puts on the default agent image.
std::map<std::string, std::string> AgentLabels() {
  return {{"mojoup.image", "agents"},
          {"mojoup.image.version", "0.1.0"},
          {"mojoup.image.base", "debian:12-slim"},
          {"mojoup.agent.claude-code", "2.1.332"},
          {"mojoup.agent.codex", "0.171.0"}};
}

// World's node, with node.sandbox.image left unset.
void UnsetImage(World& world) {
  world.dir.Write("node.json", R"({"node.sandbox.runtime": "native",
                                   "node.sandbox.allowed_users": "*"})");
}

const mojoup::probe::Check& ImageCheckOf(const mojoup::probe::Report& report) {
  const mojoup::probe::Check* check = report.Find("sandbox.image");
  REQUIRE(check != nullptr);
  return *check;
}

}  // namespace

TEST_CASE("node.sandbox.image unset is the default agent image", "[node][image]") {
  World world;
  UnsetImage(world);
  mojoup::sandbox::SandboxSpec seen;
  world.backend.SetScript(
      [&seen](const mojoup::sandbox::SandboxSpec& spec, const mojoup::sandbox::Stdio&) {
        seen = spec;
        return 0;
      });
  Node node = world.Open();
  REQUIRE(mojoup::SandboxImage(node.config()) == mojoup::sandbox::DefaultAgentImage());
  REQUIRE_THAT(mojoup::sandbox::DefaultAgentImage(), StartsWith("mojoup/agents:"));
  auto result = node.Run(world.Request({"true"}));
  REQUIRE(result.ok());
  REQUIRE(seen.image == mojoup::sandbox::DefaultAgentImage());

  // `config get` and `config list` say the default is in effect.
  REQUIRE(mojoup::policy::ConfigDefault(node.config(), "node.sandbox.image") ==
          mojoup::sandbox::DefaultAgentImage());
  REQUIRE_THAT(
      mojoup::policy::NodeConfigListText(node.config()),
      Contains("node.sandbox.image = " + mojoup::sandbox::DefaultAgentImage() + "  (default)\n"));
  REQUIRE_THAT(mojoup::policy::NodeConfigListText(node.config()),
               Contains("node.sandbox.runtime = native\n"));
  rapidjson::Document doc;
  doc.Parse(mojoup::policy::NodeConfigListJson(node.config()).c_str());
  REQUIRE(std::string(doc["defaults"]["node.sandbox.image"].GetString()) ==
          mojoup::sandbox::DefaultAgentImage());
  REQUIRE_FALSE(doc["values"].HasMember("node.sandbox.image"));
  REQUIRE_FALSE(doc["defaults"].HasMember("node.sandbox.runtime"));  // set, so no default

  // A set image is used as it is, and is no default.
  world.dir.Write("node.json", R"({"node.sandbox.runtime": "native", "node.sandbox.image": "img",
                                   "node.sandbox.allowed_users": "*"})");
  Node custom = world.Open();
  REQUIRE(mojoup::SandboxImage(custom.config()) == "img");
  REQUIRE_THAT(mojoup::policy::NodeConfigListText(custom.config()),
               Contains("node.sandbox.image = img\n"));
}

TEST_CASE("doctor: sandbox.image names the agents, or warns how to get the image",
          "[node][image]") {
  World world;
  UnsetImage(world);
  const std::string image = mojoup::sandbox::DefaultAgentImage();

  SECTION("missing: a warning that leaves the verdict alone") {
    mojoup::probe::Report report = world.Open().Doctor();
    const auto& check = ImageCheckOf(report);
    REQUIRE(check.status == mojoup::probe::Status::kWarn);
    REQUIRE_FALSE(check.required);
    REQUIRE(check.summary == "The sandbox image " + image + " is not on this node's Docker.");
    REQUIRE(check.remedy == "Build it with `mojoup-node image build`.");
    REQUIRE(report.verdict.can_sandbox);
    REQUIRE(report.verdict.Line() == "Agents run in a sandbox.");
    // After the probe's checks, before host.git: neither decides the verdict.
    REQUIRE(&check == &report.checks[report.checks.size() - 2]);
    REQUIRE(report.checks.back().id == "host.git");
  }
  SECTION("there: the agent versions in it") {
    world.daemon->AddImage(image, "sha256:7a121f86eae0a8b0", AgentLabels(), 612'000'000);
    mojoup::probe::Report report = world.Open().Doctor();
    const auto& check = ImageCheckOf(report);
    REQUIRE(check.status == mojoup::probe::Status::kPass);
    REQUIRE(check.summary ==
            "The sandbox image " + image + " holds claude-code 2.1.332, codex 0.171.0.");
    REQUIRE(check.detail == "sha256:7a121f86eae0, 612 MB, base debian:12-slim");
  }
  SECTION("a custom image that is missing") {
    world.dir.Write("node.json", R"({"node.sandbox.image": "my-agents:1"})");
    mojoup::probe::Report report = world.Open().Doctor();
    const auto& check = ImageCheckOf(report);
    REQUIRE(check.status == mojoup::probe::Status::kWarn);
    REQUIRE(check.summary ==
            "The sandbox image my-agents:1 (node.sandbox.image) is not on this node's Docker.");
    REQUIRE(check.remedy == "Build or load it, or set node.sandbox.image.");
  }
  SECTION("Docker down: docker.daemon fails, sandbox.image is skipped") {
    world.daemon.reset();
    world.daemon = std::make_unique<FakeDockerDaemon>(world.dir / "docker.sock",
                                                      FakeDockerDaemon::Mode::kRefuse);
    mojoup::probe::Report report = world.Open().Doctor();
    REQUIRE(report.Find("docker.daemon")->status == mojoup::probe::Status::kFail);
    const auto& check = ImageCheckOf(report);
    REQUIRE(check.status == mojoup::probe::Status::kSkip);
    REQUIRE(check.summary == "The sandbox image " + image +
                                 " was not looked for: Docker does not answer (docker.daemon).");
    REQUIRE_THAT(report.verdict.Line(), Contains("Docker is not running"));
  }
}

TEST_CASE("status: the image sessions use, and its agents", "[node][image]") {
  World world;
  UnsetImage(world);
  const std::string image = mojoup::sandbox::DefaultAgentImage();
  Node node = world.Open();
  mojoup::probe::Verdict verdict{true, std::nullopt};

  auto missing = node.Image();
  REQUIRE(absl::IsNotFound(missing.status()));
  rapidjson::Document doc;
  doc.Parse(mojoup::StatusJson(verdict, {}, missing).c_str());
  REQUIRE(doc["image"].IsNull());
  REQUIRE(doc["sessions"].IsArray());
  REQUIRE(mojoup::StatusText(verdict, {}, missing) ==
          "Agents run in a sandbox.\nThe sandbox image " + image +
              " is not on this node's Docker; build it with `mojoup-node image build`.\n"
              "No sessions in sandboxes.\n");

  world.daemon->AddImage(image, "sha256:7a121f86eae0", AgentLabels(), 1);
  auto there = node.Image();
  REQUIRE(there.ok());
  doc.Parse(mojoup::StatusJson(verdict, {}, there).c_str());
  REQUIRE(std::string(doc["image"]["reference"].GetString()) == image);
  REQUIRE(std::string(doc["image"]["id"].GetString()) == "sha256:7a121f86eae0");
  REQUIRE(std::string(doc["image"]["base"].GetString()) == "debian:12-slim");
  REQUIRE(std::string(doc["image"]["agents"]["codex"].GetString()) == "0.171.0");
  REQUIRE(doc["image"]["agents"].MemberCount() == 2);
  REQUIRE_THAT(mojoup::StatusText(verdict, {}, there),
               Contains("\nSandbox image " + image + ": claude-code 2.1.332, codex 0.171.0.\n"));

  // A report whose Docker did not answer: not asked again.
  mojoup::probe::Report down;
  mojoup::probe::Check docker;
  docker.id = "docker.daemon";
  docker.status = mojoup::probe::Status::kFail;
  down.checks.push_back(docker);
  auto unknown = node.Image(&down);
  REQUIRE(absl::IsUnavailable(unknown.status()));
  doc.Parse(mojoup::StatusJson(verdict, {}, unknown).c_str());
  REQUIRE(doc["image"].IsNull());
  REQUIRE_THAT(mojoup::StatusText(verdict, {}, unknown),
               Contains("Docker does not answer, so whether it holds the sandbox image " + image +
                        " is not known.\n"));
}

TEST_CASE("setup's image offer: only the default image, only when it is missing", "[node][image]") {
  World world;
  UnsetImage(world);
  const std::string image = mojoup::sandbox::DefaultAgentImage();
  std::vector<mojoup::sandbox::AgentImageOptions> builds;
  auto open = [&] {
    NodeOptions options;
    options.config_path = world.dir / "node.json";
    options.kernel = &world.kernel;
    options.docker = world.docker.get();
    options.build_image = [&](const mojoup::sandbox::AgentImageOptions& asked)
        -> absl::StatusOr<mojoup::sandbox::AgentImage> {
      builds.push_back(asked);
      asked.progress({1, 2, "download codex 0.171.0 (41 MB)", false, {}});
      asked.progress(
          {1, 2, "download codex 0.171.0 (41 MB)", true, std::chrono::milliseconds(3240)});
      mojoup::sandbox::AgentImage built;
      built.reference = asked.reference;
      return built;
    };
    auto node = Node::Open(std::move(options));
    REQUIRE(node.ok());
    return *std::move(node);
  };

  Node node = open();
  REQUIRE(node.ImageToBuild() == image);
  std::vector<std::string> lines;
  auto built = node.BuildImage([&lines](const mojoup::sandbox::ImageStep& step) {
    lines.push_back(mojoup::ImageStepLine(step));
  });
  REQUIRE(built.ok());
  REQUIRE(builds.size() == 1);
  REQUIRE(builds[0].reference == image);
  REQUIRE(builds[0].tools.empty());  // every pinned agent
  REQUIRE(lines ==
          std::vector<std::string>{"[1/2] download codex 0.171.0 (41 MB) ...",
                                   "[1/2] download codex 0.171.0 (41 MB) ... done in 3.2 s"});

  // There already: nothing to offer.
  world.daemon->AddImage(image, "sha256:7a121f86eae0", AgentLabels());
  REQUIRE_FALSE(node.ImageToBuild().has_value());
  // A custom image is the operator's to build.
  world.dir.Write("node.json", R"({"node.sandbox.image": "my-agents:1"})");
  REQUIRE_FALSE(open().ImageToBuild().has_value());
  // Docker down: no offer (a build could not run either).
  UnsetImage(world);
  world.daemon.reset();
  REQUIRE_FALSE(open().ImageToBuild().has_value());
}

TEST_CASE("native backend: the default image missing says to build it", "[node][image]") {
  TempDir dir;
  FakeDockerDaemon daemon(dir / "docker.sock", FakeDockerDaemon::Mode::kAnswer);
  auto backend = mojoup::sandbox::MakeNativeBackend({daemon.host(), "test"}, nullptr);
  mojoup::sandbox::SandboxSpec spec;
  spec.session = "s1";
  spec.image = mojoup::sandbox::DefaultAgentImage();
  spec.supervisor = "/usr/libexec/mojoup/mojoup-sandbox-init";
  spec.workdir = "/home/ada/repo";
  spec.command = {"true"};
  auto created = backend->Create(spec);
  REQUIRE(absl::IsFailedPrecondition(created.status()));
  REQUIRE(std::string(created.status().message()) ==
          "the sandbox image " + mojoup::sandbox::DefaultAgentImage() +
              " is not on this node's Docker; build it with `mojoup-node image build`");
}

TEST_CASE("run: a runtime that fails on the missing default image gets the sentence to fix it",
          "[node][image]") {
  // The openshell runtime's own words for a missing image name no fix; any
  // runtime but native (whose Create already says it) is diagnosed.
  World world;
  UnsetImage(world);
  world.backend.FailNext(
      "create", absl::UnavailableError("OpenShell could not create the sandbox: docker image "
                                       "'mojoup/agents:0.1.0' is not present locally"));
  Node node = world.Open();
  auto launch = node.Start(world.Request({"true"}));
  REQUIRE(absl::IsFailedPrecondition(launch.status()));
  REQUIRE(std::string(launch.status().message()) ==
          "the sandbox image " + mojoup::sandbox::DefaultAgentImage() +
              " is not on this node's Docker; build it with `mojoup-node image build`");

  // With the image there, the runtime's own error stands.
  world.daemon->AddImage(mojoup::sandbox::DefaultAgentImage(), "sha256:7a121f86eae0");
  world.backend.FailNext("create", absl::UnavailableError("the gateway is not reachable"));
  launch = node.Start(world.Request({"true"}));
  REQUIRE(absl::IsUnavailable(launch.status()));
  REQUIRE(std::string(launch.status().message()) == "the gateway is not reachable");
}

TEST_CASE("doctor: host.git warns while the host's git takes bare repositories anywhere",
          "[node][git]") {
  using mojoup::probe::CommandResult;
  using mojoup::probe::Status;
  World world;
  mojoup::probe::testing::ScriptedCommandRunner commands;
  world.commands = &commands;
  const std::string ask = "git config --get safe.bareRepository";
  auto host_git = [&world] {
    mojoup::probe::Report report = world.Open().Doctor();
    const mojoup::probe::Check* check = report.Find("host.git");
    REQUIRE(check != nullptr);
    REQUIRE_FALSE(check->required);
    REQUIRE(report.verdict.can_sandbox);
    return *check;
  };
  // git not installed: nothing of git's runs here.
  CHECK(host_git().status == Status::kSkip);
  // Unset (git exits 1): Debian 12's default, "all".
  auto exited = [](int code, std::string err) {
    CommandResult result;
    result.outcome = CommandResult::Outcome::kExited;
    result.exit_code = code;
    result.err = std::move(err);
    return result;
  };
  commands.Answer(ask, exited(1, ""));
  mojoup::probe::Check unset = host_git();
  CHECK(unset.status == Status::kWarn);
  CHECK_THAT(unset.summary, Contains("safe.bareRepository is unset, so all"));
  CHECK_THAT(unset.remedy.value_or(""),
             Contains("git config --global safe.bareRepository explicit"));
  commands.Prints(ask, "all\n");
  CHECK(host_git().status == Status::kWarn);
  commands.Prints(ask, "explicit\n");
  CHECK(host_git().status == Status::kPass);
  // A config git cannot read: said, not guessed.
  commands.Answer(ask, exited(3, "fatal: bad config line 1"));
  mojoup::probe::Check broken = host_git();
  CHECK(broken.status == Status::kWarn);
  CHECK_THAT(broken.detail, Contains("bad config line 1"));
}

TEST_CASE("explain with a session: its answers, fetched from its control socket", "[node][ask]") {
  World world;
  Node node = world.Open();
  const std::string id = "0123456789abcdef";
  auto refused = [&](const std::string& session, const std::string& why) {
    auto explained = node.Explain(mojoup::ExplainRequest{.dir = world.repo, .session = session});
    INFO(session);
    REQUIRE(absl::IsInvalidArgument(explained.status()));
    REQUIRE_THAT(std::string(explained.status().message()), Contains(why));
  };
  refused("../0123456789abc", "--session ../0123456789abc: expected a session's id");
  refused(id, "no session " + id + " on this node");  // no state directory yet
  const std::string dir = node.state_dir() + "/sessions/" + id;
  REQUIRE(mojoup::internal::MakePrivateDir(dir, "a session's directory").ok());

  refused("fedcba9876543210", "no session fedcba9876543210 on this node");
  refused(id, "session " + id + " does not ask");

  // The session's proxy, answering on its control socket: a.test approved
  // for the session, b.test once, c.test once and used, d.test denied,
  // e.test pending.
  auto approvals = std::make_shared<mojoup::credproxy::Approvals>(
      mojoup::credproxy::ApprovalsOptions{.session = id});
  mojoup::credproxy::ProxyOptions options;
  options.listen = "127.0.0.1:0";
  options.ca_dir = world.dir / "ca";
  options.approvals = approvals;
  options.control_socket = mojoup::sandbox::ControlSocketPath(node.state_dir(), id);
  auto proxy = mojoup::credproxy::Proxy::Start(std::move(options));
  REQUIRE(proxy.ok());
  using Scope = mojoup::credproxy::ApprovalScope;
  for (const char* host : {"a.test", "b.test", "c.test", "d.test", "e.test"}) {
    approvals->Ask(host, 443, "CONNECT");
  }
  REQUIRE(approvals->Decide("1", {true, Scope::kSession, "alice", ""}).ok());
  REQUIRE(approvals->Decide("2", {true, Scope::kOnce, "alice", ""}).ok());
  REQUIRE(approvals->Decide("3", {true, Scope::kOnce, "alice", ""}).ok());
  REQUIRE(approvals->Ask("c.test", 443, "CONNECT").outcome ==
          mojoup::credproxy::Approvals::Asked::Outcome::kGranted);
  REQUIRE(approvals->Decide("4", {false, Scope::kOnce, "bob", "not here"}).ok());

  auto explained =
      node.Explain(mojoup::ExplainRequest{.dir = world.repo, .host = "a.test", .session = id});
  REQUIRE(explained.ok());
  REQUIRE(explained->session.has_value());
  std::vector<std::string> grants;
  for (const auto& grant : explained->session->grants) grants.push_back(grant.host);
  REQUIRE(grants == std::vector<std::string>{"a.test", "b.test"});
  REQUIRE(explained->session->denials.size() == 1);
  REQUIRE(explained->session->denials[0].reason == "not here");
  REQUIRE(explained->host->allowed);
  REQUIRE(explained->host->approval == "1");
  REQUIRE_THAT(
      explained->Text(),
      Contains("\na.test:443: allowed, by session grant: approval 1, approved by alice at "));
  REQUIRE_THAT(explained->Json(), Contains("\"approval\": \"1\""));
  REQUIRE_THAT(explained->Json(), Contains("\"session\": {\n    \"id\": \"" + id + "\""));
  // Without the session, the same host is no rule's.
  auto plain = node.Explain(world.repo, "", "a.test");
  REQUIRE(plain.ok());
  REQUIRE_FALSE(plain->host->allowed);
  REQUIRE_THAT(plain->Json(), !Contains("\"session\""));
}

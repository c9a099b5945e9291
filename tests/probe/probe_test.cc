// Probe(): order, verdict, concurrency and deadlines, and the report's JSON
// and text forms, through the seams.
#include "mojoup/probe/probe.h"

#include <rapidjson/document.h>

#include <catch2/catch.hpp>

#include "../support/test_support.h"
#include "mojoup/probe/testing/fake_docker_daemon.h"
#include "mojoup/probe/testing/fake_openshell.h"
#include "mojoup/probe/testing/mock_kernel.h"

using namespace mojoup::probe;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using mojoup::probe::testing::FakeDockerDaemon;
using mojoup::probe::testing::FakeOpenShellOptions;
using mojoup::probe::testing::MockKernel;
using mojoup::probe::testing::WriteFakeOpenShell;
using mojoup::test::TempDir;

namespace {

// A host whose every part is healthy, with hooks to break each.
struct World {
  TempDir dir;
  MockKernel kernel;
  std::unique_ptr<FakeDockerDaemon> daemon;
  std::unique_ptr<DockerApi> docker = MakeDockerApi();
  std::unique_ptr<CommandRunner> commands = MakeSystemCommandRunner();
  ProbeOptions options;

  explicit World(FakeDockerDaemon::Mode mode = FakeDockerDaemon::Mode::kAnswer,
                 FakeOpenShellOptions openshell = {}) {
    daemon = std::make_unique<FakeDockerDaemon>(dir / "docker.sock", mode);
    kernel.env["DOCKER_HOST"] = daemon->host();
    WriteFakeOpenShell(dir.path(), openshell);
    kernel.env["PATH"] = dir.path();
  }
  Report Run() { return Probe(options, Host{kernel, *docker, *commands}); }
};

}  // namespace

TEST_CASE("a healthy host: agents run in a sandbox, every check in order", "[probe]") {
  World world;
  Report report = world.Run();
  REQUIRE(report.verdict.can_sandbox);
  REQUIRE(report.verdict.Line() == "Agents run in a sandbox.");
  REQUIRE_FALSE(report.verdict.reason.has_value());
  std::vector<std::string> ids;
  for (const Check& check : report.checks) {
    ids.push_back(check.id);
    INFO(check.id << ": " << check.summary);
    REQUIRE(check.status == Status::kPass);
    REQUIRE(check.duration_ms >= 0);
  }
  REQUIRE(ids == std::vector<std::string>{"os.linux", "kernel.landlock", "kernel.seccomp",
                                          "kernel.seccomp_listener", "host.wsl", "docker.daemon",
                                          "openshell.cli", "openshell.gateway"});
}

TEST_CASE("the reason comes from the first failing required check", "[probe]") {
  FakeOpenShellOptions openshell;
  openshell.gateway = FakeOpenShellOptions::Gateway::kDisconnected;
  World world(FakeDockerDaemon::Mode::kRefuse, openshell);
  Report report = world.Run();
  REQUIRE_FALSE(report.verdict.can_sandbox);
  REQUIRE_THAT(*report.verdict.reason, StartsWith("Docker is not running"));
  REQUIRE_THAT(report.verdict.Line(),
               StartsWith("This machine cannot sandbox agents: Docker is not running"));

  world.kernel.landlock_abi = SyscallResult::Ok(2);
  report = world.Run();
  REQUIRE_THAT(*report.verdict.reason, StartsWith("Landlock ABI 2 is too old"));
  REQUIRE(report.Find("docker.daemon")->status == Status::kFail);
  REQUIRE(report.Find("openshell.gateway")->status == Status::kFail);
}

TEST_CASE("a warning does not change the verdict", "[probe]") {
  World world;
  world.options.require_openshell = false;
  world.kernel.env["PATH"] = "/nonexistent";
  Report report = world.Run();
  REQUIRE(report.verdict.can_sandbox);
  REQUIRE(report.Find("openshell.cli")->status == Status::kSkip);
}

TEST_CASE("Docker and the gateway hanging together cost one deadline, not two", "[probe]") {
  FakeOpenShellOptions openshell;
  openshell.gateway = FakeOpenShellOptions::Gateway::kHang;
  World world(FakeDockerDaemon::Mode::kHang, openshell);
  world.options.timeout = std::chrono::milliseconds(1500);
  auto start = std::chrono::steady_clock::now();
  Report report = world.Run();
  auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(report.Find("docker.daemon")->status == Status::kFail);
  REQUIRE(report.Find("openshell.gateway")->status == Status::kFail);
  // One after the other they would take 3 s or more.
  REQUIRE(took < std::chrono::milliseconds(2900));
}

TEST_CASE("the JSON report follows mojoup.doctor/v1", "[probe][json]") {
  World world(FakeDockerDaemon::Mode::kRefuse);
  Report report = world.Run();
  std::string json = ReportToJson(report);
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  REQUIRE(std::string(doc["schema"].GetString()) == "mojoup.doctor/v1");
  REQUIRE(doc["can_sandbox"].IsFalse());
  REQUIRE_THAT(std::string(doc["verdict"].GetString()),
               StartsWith("This machine cannot sandbox agents: Docker is not running"));
  REQUIRE_THAT(std::string(doc["reason"].GetString()), StartsWith("Docker is not running"));
  const auto& checks = doc["checks"];
  REQUIRE(checks.Size() == 8);
  for (const auto& check : checks.GetArray()) {
    REQUIRE(check["id"].IsString());
    REQUIRE(check["summary"].IsString());
    REQUIRE(check["detail"].IsString());
    REQUIRE(check["duration_ms"].IsNumber());
    std::string status = check["status"].GetString();
    REQUIRE((status == "pass" || status == "warn" || status == "fail" || status == "skip"));
    REQUIRE((status == "fail" ? check["remedy"].IsString() : check["remedy"].IsNull()));
  }

  World healthy;
  doc.Parse(ReportToJson(healthy.Run()).c_str());
  REQUIRE(doc["can_sandbox"].IsTrue());
  REQUIRE(doc["reason"].IsNull());
  REQUIRE(std::string(doc["verdict"].GetString()) == "Agents run in a sandbox.");
}

TEST_CASE("the text report: verdict first, remedies under failures, colour on request",
          "[probe][text]") {
  World world(FakeDockerDaemon::Mode::kRefuse);
  Report report = world.Run();
  std::string plain = ReportToText(report, false);
  REQUIRE_THAT(plain, StartsWith(report.verdict.Line() + "\n"));
  REQUIRE_THAT(plain, Contains("fail  docker.daemon"));
  REQUIRE_THAT(plain, Contains("fix: Start Docker"));
  REQUIRE(plain.find('\033') == std::string::npos);
  REQUIRE_THAT(ReportToText(report, true), Contains("\033[31mfail"));
}

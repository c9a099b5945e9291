// openshell.cli and openshell.gateway against the fake `openshell` executable,
// run by the real CommandRunner, for each gateway state.
#include <catch2/catch.hpp>

#include "../support/test_support.h"
#include "mojoup/probe/probe.h"
#include "mojoup/probe/testing/fake_openshell.h"
#include "mojoup/probe/testing/mock_kernel.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using mojoup::probe::Check;
using mojoup::probe::CheckOpenShell;
using mojoup::probe::ParseSemVer;
using mojoup::probe::ProbeOptions;
using mojoup::probe::SemVer;
using mojoup::probe::Status;
using mojoup::probe::testing::FakeOpenShellOptions;
using mojoup::probe::testing::MockKernel;
using mojoup::probe::testing::WriteFakeOpenShell;
using mojoup::test::TempDir;
using Gateway = FakeOpenShellOptions::Gateway;

namespace {

struct Result {
  Check cli;
  Check gateway;
};

Result Probe(const FakeOpenShellOptions& fake, ProbeOptions options = {}) {
  TempDir dir;
  WriteFakeOpenShell(dir.path(), fake);
  MockKernel kernel;
  kernel.env["PATH"] = "/nonexistent:" + dir.path();
  auto runner = mojoup::probe::MakeSystemCommandRunner();
  auto [cli, gateway] = CheckOpenShell(kernel, *runner, options);
  return {cli, gateway};
}

Result WithGateway(Gateway gateway) {
  FakeOpenShellOptions fake;
  fake.gateway = gateway;
  return Probe(fake);
}

}  // namespace

TEST_CASE("versions are read the way the CLI prints them", "[openshell]") {
  REQUIRE(ParseSemVer("openshell 0.0.111\n") == SemVer{0, 0, 111});
  REQUIRE(ParseSemVer("openshell 0.0.112-dev.6+gabc1234") == SemVer{0, 0, 112});
  REQUIRE(ParseSemVer("v1.41") == SemVer{1, 41, 0});
  REQUIRE_FALSE(ParseSemVer("openshell dev").has_value());
  REQUIRE(SemVer{0, 0, 60} < SemVer{0, 0, 61});
}

TEST_CASE("connected: both checks pass", "[openshell]") {
  Result r = WithGateway(Gateway::kConnected);
  INFO(r.cli.summary << " / " << r.gateway.summary);
  REQUIRE(r.cli.status == Status::kPass);
  REQUIRE_THAT(r.cli.summary, Contains("OpenShell 0.0.111"));
  REQUIRE(r.gateway.status == Status::kPass);
  REQUIRE_THAT(r.gateway.summary, Contains("local at https://127.0.0.1:17670 is connected"));
}

TEST_CASE("connected_http passes", "[openshell]") {
  Result r = WithGateway(Gateway::kConnectedHttp);
  REQUIRE(r.gateway.status == Status::kPass);
  REQUIRE_THAT(r.gateway.summary, Contains("connected over HTTP"));
}

TEST_CASE("each unhealthy gateway state fails with its cause and fix", "[openshell]") {
  struct Case {
    Gateway gateway;
    const char* cause;
    const char* fix;
  };
  const Case cases[] = {
      {Gateway::kError, "answers but is unhealthy", "journalctl --user -u openshell-gateway"},
      {Gateway::kDisconnected, "is disconnected: transport error", "systemctl --user enable"},
      {Gateway::kNotConfigured, "has no gateway configured", "openshell gateway add"},
      {Gateway::kUnreachable, "not reachable (exit 1: Error:", "systemctl --user enable"},
      {Gateway::kUnauthenticated, "does not accept this user's credentials",
       "openshell gateway login local"},
      {Gateway::kGarbage, "printed no status", "status -o json"},
  };
  for (const Case& c : cases) {
    Result r = WithGateway(c.gateway);
    INFO(r.gateway.reason);
    REQUIRE(r.cli.status == Status::kPass);
    REQUIRE(r.gateway.status == Status::kFail);
    REQUIRE_THAT(r.gateway.reason, Contains(c.cause));
    REQUIRE_THAT(r.gateway.reason, Contains(c.fix));
  }
}

TEST_CASE("a hanging gateway is cut off at the deadline", "[openshell]") {
  FakeOpenShellOptions fake;
  fake.gateway = Gateway::kHang;
  ProbeOptions options;
  options.timeout = std::chrono::milliseconds(300);
  auto start = std::chrono::steady_clock::now();
  Result r = Probe(fake, options);
  REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  REQUIRE(r.gateway.status == Status::kFail);
  REQUIRE_THAT(r.gateway.reason, Contains("did not answer within 0.3 s"));
}

TEST_CASE("a hanging CLI: the gateway is not asked", "[openshell]") {
  FakeOpenShellOptions fake;
  fake.hang_on_version = true;
  ProbeOptions options;
  options.timeout = std::chrono::milliseconds(300);
  Result r = Probe(fake, options);
  REQUIRE(r.cli.status == Status::kFail);
  REQUIRE_THAT(r.cli.reason, Contains("--version` did not answer within 0.3 s"));
  REQUIRE(r.gateway.status == Status::kSkip);
}

TEST_CASE("an OpenShell older than 0.0.92 lacks the JSON the runtime reads", "[openshell]") {
  FakeOpenShellOptions fake;
  fake.version = "0.0.91";
  Result r = Probe(fake);
  REQUIRE(r.cli.status == Status::kFail);
  REQUIRE_THAT(r.cli.reason,
               StartsWith("OpenShell 0.0.91 at ") &&
                   Contains("is too old: the openshell runtime reads `openshell status -o json` "
                            "and `openshell sandbox get -o json`, which OpenShell has only from "
                            "0.0.92; upgrade OpenShell to 0.0.92 or later."));
  REQUIRE(r.gateway.status == Status::kSkip);

  fake.version = "0.0.92";
  REQUIRE(Probe(fake).cli.status == Status::kPass);
}

TEST_CASE("no CLI on PATH, or a configured path that is wrong", "[openshell]") {
  MockKernel kernel;
  kernel.env["PATH"] = "/nonexistent";
  auto runner = mojoup::probe::MakeSystemCommandRunner();
  ProbeOptions options;
  auto [cli, gateway] = CheckOpenShell(kernel, *runner, options);
  REQUIRE(cli.status == Status::kFail);
  REQUIRE_THAT(cli.reason, StartsWith("The OpenShell CLI `openshell` is not on PATH"));
  REQUIRE_THAT(cli.reason, Contains("node.sandbox.runtime native"));
  REQUIRE(gateway.status == Status::kSkip);

  options.openshell_path = "/opt/openshell/bin/openshell";
  auto [configured, unused] = CheckOpenShell(kernel, *runner, options);
  REQUIRE_THAT(configured.reason,
               Contains("/opt/openshell/bin/openshell (node.sandbox.openshell_path)"));

  SECTION("the configured path is used instead of PATH") {
    TempDir dir;
    std::string path = WriteFakeOpenShell(dir.path(), {});
    options.openshell_path = path;
    auto [found, gw] = CheckOpenShell(kernel, *runner, options);
    REQUIRE(found.status == Status::kPass);
    REQUIRE_THAT(found.summary, Contains(path));
  }
}

TEST_CASE("the native runtime does not need OpenShell", "[openshell]") {
  MockKernel kernel;
  kernel.env["PATH"] = "/nonexistent";
  auto runner = mojoup::probe::MakeSystemCommandRunner();
  ProbeOptions options;
  options.require_openshell = false;
  auto [cli, gateway] = CheckOpenShell(kernel, *runner, options);
  REQUIRE(cli.status == Status::kSkip);
  REQUIRE(cli.summary == "Not needed by the native runtime.");
  REQUIRE_FALSE(cli.required);

  SECTION("a present but unhealthy OpenShell is not asked at all") {
    FakeOpenShellOptions fake;
    fake.gateway = Gateway::kHang;
    Result r = Probe(fake, options);
    REQUIRE(r.cli.status == Status::kSkip);
    REQUIRE(r.gateway.status == Status::kSkip);
    REQUIRE(r.gateway.summary == "Not needed by the native runtime.");
    REQUIRE_FALSE(r.gateway.required);
  }
}

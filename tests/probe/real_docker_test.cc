// docker.daemon against the real dockerd that .ci/run starts.
#include <catch2/catch.hpp>

#include "../support/test_support.h"
#include "mojoup/probe/probe.h"
#include "mojoup/probe/testing/fake_openshell.h"

using namespace mojoup::probe;
using Catch::Matchers::Contains;

namespace {

bool RealDockerAnswers() {
  auto kernel = MakeSystemKernel();
  auto endpoint = ResolveDockerEndpoint(*kernel);
  if (!endpoint.ok()) return false;
  DockerReply ping = MakeDockerApi()->Get(*endpoint, "/_ping", std::chrono::seconds(2));
  return ping.failure == DockerReply::Failure::kNone && ping.status == 200;
}

}  // namespace

TEST_CASE("a real dockerd passes, with the version the docker CLI sees", "[real][docker]") {
  if (!RealDockerAnswers()) MOJOUP_SKIP("no dockerd answers at the resolved endpoint");
  auto kernel = MakeSystemKernel();
  Check check = CheckDocker(*kernel, *MakeDockerApi(), std::chrono::seconds(2));
  INFO(check.summary);
  REQUIRE(check.status == Status::kPass);

  auto runner = MakeSystemCommandRunner();
  CommandResult cli = runner->Run({"docker", "version", "--format", "{{.Server.Version}}"},
                                  std::chrono::seconds(10));
  if (!cli.Succeeded()) MOJOUP_SKIP("the docker CLI is not installed to compare with");
  std::string version = cli.out.substr(0, cli.out.find('\n'));
  REQUIRE_THAT(check.summary, Contains("Docker " + version + " "));
}

TEST_CASE("doctor on a real dockerd with a connected OpenShell gateway: agents run in a sandbox",
          "[real][docker][e2e]") {
  if (!RealDockerAnswers()) MOJOUP_SKIP("no dockerd answers at the resolved endpoint");
  mojoup::test::TempDir dir;
  mojoup::probe::testing::WriteFakeOpenShell(dir.path(), {});
  auto run = mojoup::test::RunWithEnv(
      {"PATH=" + dir.path() + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
       "MOJOUP_NODE_CONFIG=" + (dir / "node.json")},
      {mojoup::test::BinDir() + "/mojoup-node", "doctor"});
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(run.result.out.substr(0, run.result.out.find('\n')) == "Agents run in a sandbox.");
  REQUIRE(run.seconds < 3.0);
}

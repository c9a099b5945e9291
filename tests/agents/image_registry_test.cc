// `mojoup-node image build --base registry` (image/Dockerfile) on the real
// dockerd, compared with the Debian path's image (ctest fixture agent_image).
// Its own program, so that a registry that fails here fails this test alone.
#include "../support/sandbox_image.h"
#include "../support/test_support.h"
#include "mojoup/sandbox/agent_image.h"

namespace {

using Catch::Matchers::Contains;
using mojoup::sandbox::DefaultAgentImage;
using mojoup::test::BinDir;
using mojoup::test::RunWithEnv;

constexpr auto kBuild = std::chrono::minutes(20);

// The last lines of a command's error output: what failed, kept short so
// that a shortened log still shows it.
std::string Tail(const std::string& text, std::size_t lines = 12) {
  std::size_t start = text.size();
  while (start > 0 && lines > 0) {
    start = text.rfind('\n', start - 1);
    if (start == std::string::npos) return text;
    --lines;
  }
  return text.substr(start);
}

std::string InImage(const std::string& image, const std::string& script) {
  auto runner = mojoup::probe::MakeSystemCommandRunner();
  auto ran = runner->Run({"docker", "run", "--rm", "--network", "none", "--user", "1000:1000",
                          "--env", "HOME=/tmp", image, "sh", "-c", script},
                         std::chrono::seconds(120));
  return ran.Succeeded() ? ran.out : "failed: " + ran.err;
}

TEST_CASE("the registry path (image/Dockerfile) gives the same agents as the Debian path",
          "[agents][image]") {
  const std::string why = mojoup::test::WhyNoSandboxDocker();
  if (!why.empty()) MOJOUP_SKIP("needs a real dockerd: " << why);
  auto runner = mojoup::probe::MakeSystemCommandRunner();
  // No registry answers here: a Debian 12 minbase stands in for
  // debian:12-slim, unless the daemon has one (the real one, or the stand-in
  // CI made beside the build, which CI removes itself).
  auto made = RunWithEnv({}, {MOJOUP_SOURCE_DIR "/tests/support/make_registry_base.sh"},
                         std::chrono::minutes(15));
  INFO(Tail(made.result.err));
  REQUIRE(made.result.Succeeded());
  const bool stand_in = made.result.out == "made\n";
  // The Debian path's image to compare with (the agent_image fixture's).
  if (!runner->Run({"docker", "image", "inspect", DefaultAgentImage()}, std::chrono::seconds(30))
           .Succeeded()) {
    REQUIRE(
        RunWithEnv({}, {BinDir() + "/mojoup-node", "image", "build", "--base", "debian"}, kBuild)
            .result.Succeeded());
  }
  const std::string tag = "mojoup/agents:registry-path-test";
  auto run = RunWithEnv(
      {},
      {BinDir() + "/mojoup-node", "image", "build", "--base", "registry", "--tag", tag, "--json"},
      kBuild);
  if (stand_in) runner->Run({"docker", "image", "rm", "debian:12-slim"}, std::chrono::seconds(60));
  INFO(Tail(run.result.err));
  REQUIRE(run.result.Succeeded());
  CHECK_THAT(run.result.out, Contains("\"base\":\"debian:12-slim\""));
  CHECK_THAT(run.result.err,
             Contains("build on debian:12-slim from the registry (image/Dockerfile)"));

  // The same agents, at the same places, answering the same.
  const std::string listing =
      "find /opt/mojoup/agents /usr/local/bin | sort | md5sum; ls -l /usr/local/bin | "
      "sed 's/.* \\([^ ]* -> .*\\)/\\1/' | grep -- '->'; "
      "for p in claude codex copilot opencode kilo; do $p --version 2>&1 | head -1; done; "
      "git --version; test -s /etc/ssl/certs/ca-certificates.crt && echo ca-ok";
  const std::string from_registry = InImage(tag, listing);
  const std::string from_debian = InImage(DefaultAgentImage(), listing);
  runner->Run({"docker", "image", "rm", tag}, std::chrono::seconds(60));
  CHECK_THAT(from_registry, Contains("2.1.332 (Claude Code)") && Contains("ca-ok"));
  CHECK(from_registry == from_debian);
}

}  // namespace

// `mojoup-node image build` for real: the agents from the npm registry, the
// Debian 12 base from the node's apt sources (mmdebstrap) or a registry, on
// the real dockerd. The other `agents` tests run in the image this builds
// (ctest fixture agent_image).
#include <rapidjson/document.h>

#include "../support/sandbox_image.h"
#include "../support/test_support.h"
#include "mojoup/sandbox/agent_image.h"
#include "mojoup/version.h"

namespace {

using Catch::Matchers::Contains;
using mojoup::sandbox::AgentPin;
using mojoup::sandbox::AgentPins;
using mojoup::sandbox::DefaultAgentImage;
using mojoup::test::BinDir;
using mojoup::test::RunWithEnv;

// Downloads of some 600 MB, a Debian base and an import of 1.7 GB, on a
// busy 2-core machine.
constexpr auto kBuild = std::chrono::minutes(20);

std::string Labels(const std::string& image) {
  auto runner = mojoup::probe::MakeSystemCommandRunner();
  auto inspected =
      runner->Run({"docker", "image", "inspect", "--format", "{{json .Config.Labels}}", image},
                  std::chrono::seconds(30));
  return inspected.Succeeded() ? inspected.out : "";
}

TEST_CASE("image build makes the default image with every pinned agent, labelled",
          "[agents][image]") {
  const std::string why = mojoup::test::WhyNoSandboxDocker();
  if (!why.empty()) MOJOUP_SKIP("needs a real dockerd: " << why);
  // The Debian path, whatever the daemon holds: the registry path's test
  // compares its image with this one, and CI may have made a debian:12-slim
  // stand-in by then, which `--base auto` would take.
  auto run = RunWithEnv(
      {}, {BinDir() + "/mojoup-node", "image", "build", "--base", "debian", "--json"}, kBuild);
  INFO(run.result.err);
  REQUIRE(run.result.Succeeded());
  // Not a terminal: each step's start and end on lines of their own.
  const std::size_t steps = AgentPins().size() + 4;
  CHECK_THAT(run.result.err, Contains("[1/" + std::to_string(steps) + "] download claude-code"));
  const std::string last = "[" + std::to_string(steps) + "/" + std::to_string(steps) + "] tag " +
                           DefaultAgentImage() + " ...";
  CHECK_THAT(run.result.err, Contains(last + "\n" + last + " done in "));
  CHECK_THAT(run.result.err, Contains(" ... done in "));

  rapidjson::Document json;
  json.Parse(run.result.out.c_str());
  REQUIRE(json.IsObject());
  CHECK(std::string(json["schema"].GetString()) == "mojoup.image/v1");
  CHECK(std::string(json["reference"].GetString()) == DefaultAgentImage());
  CHECK(std::string(json["id"].GetString()).rfind("sha256:", 0) == 0);
  const std::string base = json["base"].GetString();
  CHECK(base == "debian:12 (mmdebstrap)");
  CHECK(json["size_bytes"].GetInt64() > 100'000'000);
  const std::string labels = Labels(DefaultAgentImage());
  CHECK_THAT(labels, Contains("\"mojoup.image\":\"agents\""));
  CHECK_THAT(labels,
             Contains("\"mojoup.image.version\":\"" + std::string(mojoup::kVersion) + "\""));
  for (const AgentPin& pin : AgentPins()) {
    REQUIRE(json["agents"].HasMember(pin.tool.c_str()));
    CHECK(std::string(json["agents"][pin.tool.c_str()].GetString()) == pin.version);
    CHECK_THAT(labels, Contains("\"mojoup.agent." + pin.tool + "\":\"" + pin.version + "\""));
  }

  // What the agents need beyond their own programs, as root would not see it.
  auto runner = mojoup::probe::MakeSystemCommandRunner();
  auto inside = runner->Run({"docker", "run", "--rm", "--network", "none", "--user", "1000:1000",
                             DefaultAgentImage(), "sh", "-c",
                             "git --version && curl --version | head -1 && "
                             "test -s /etc/ssl/certs/ca-certificates.crt && echo ca-ok"},
                            std::chrono::seconds(60));
  INFO(inside.err);
  CHECK(inside.Succeeded());
  CHECK_THAT(inside.out, Contains("git version") && Contains("curl ") && Contains("ca-ok"));
}

TEST_CASE("a build that fails half-way tags nothing and leaves no image", "[agents][image]") {
  const std::string why = mojoup::test::WhyNoSandboxDocker();
  if (!why.empty()) MOJOUP_SKIP("needs a real dockerd: " << why);
  const std::string tag = "mojoup/agents:half-built-test";
  // A mirror that refuses: the Debian base cannot be made.
  auto run = RunWithEnv({},
                        {BinDir() + "/mojoup-node", "image", "build", "--tools", "opencode",
                         "--base", "debian", "--mirror", "http://127.0.0.1:9/debian", "--tag", tag},
                        kBuild);
  CHECK(run.result.exit_code == 1);
  CHECK_THAT(
      run.result.err,
      Contains("mojoup-node image build: cannot build the Debian 12 base: mmdebstrap: exit 25: "
               "Failed to fetch http://127.0.0.1:9/debian/"));
  CHECK(Labels(tag).empty());
}

TEST_CASE("image build refuses an agent it does not know, naming those it does",
          "[agents][image]") {
  auto run = RunWithEnv(
      {}, {BinDir() + "/mojoup-node", "image", "build", "--tools", "claude-code,claude"});
  CHECK(run.result.exit_code == 2);
  CHECK_THAT(
      run.result.err,
      Contains("--tools: \"claude\" is not an agent of the image; expected some of claude-code, "
               "codex, copilot, opencode, kilocode"));
  auto bad_base = RunWithEnv({}, {BinDir() + "/mojoup-node", "image", "build", "--base", "alpine"});
  CHECK(bad_base.result.exit_code == 2);
  CHECK_THAT(bad_base.result.err,
             Contains("--base: expected auto, registry or debian, not \"alpine\""));
}

}  // namespace

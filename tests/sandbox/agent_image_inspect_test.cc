// InspectSandboxImage against the fake Docker daemon: the labels become the
// image's agents, and each way of not having the image is its own error.
#include <catch2/catch.hpp>

#include "../support/canned_docker.h"
#include "../support/test_support.h"
#include "mojoup/probe/testing/fake_docker_daemon.h"
#include "mojoup/sandbox/agent_image.h"

namespace {

using Catch::Matchers::Contains;
using mojoup::probe::DockerEndpoint;
using mojoup::probe::testing::FakeDockerDaemon;
using mojoup::sandbox::DefaultAgentImage;
using mojoup::sandbox::InspectSandboxImage;
using mojoup::test::TempDir;

constexpr std::chrono::milliseconds kTimeout{500};

struct InspectDaemon {
  TempDir dir;
  FakeDockerDaemon daemon;
  std::unique_ptr<mojoup::probe::DockerApi> api = mojoup::probe::MakeDockerApi();
  explicit InspectDaemon(FakeDockerDaemon::Mode mode = FakeDockerDaemon::Mode::kAnswer)
      : daemon(dir / "docker.sock", mode) {}
  absl::StatusOr<mojoup::sandbox::AgentImage> Inspect(const std::string& reference) {
    return InspectSandboxImage(DockerEndpoint{daemon.host(), "test"}, *api, reference, kTimeout);
  }
};

using mojoup::test::Message;

TEST_CASE("image inspect: the labels say what is inside", "[image]") {
  InspectDaemon fake;
  fake.daemon.AddImage(DefaultAgentImage(), "sha256:7a121f86eae0",
                       {{"mojoup.image", "agents"},
                        {"mojoup.image.version", "0.1.0"},
                        {"mojoup.image.base", "debian:12-slim"},
                        {"mojoup.agent.claude-code", "2.1.332"},
                        {"mojoup.agent.codex", "0.171.0"},
                        {"maintainer", "someone"}},
                       1'693'788'060);
  auto image = fake.Inspect(DefaultAgentImage());
  REQUIRE(image.ok());
  REQUIRE(image->reference == DefaultAgentImage());
  REQUIRE(image->id == "sha256:7a121f86eae0");
  REQUIRE(image->base == "debian:12-slim");
  REQUIRE(image->size_bytes == 1'693'788'060);
  REQUIRE(image->agents ==
          std::map<std::string, std::string>{{"claude-code", "2.1.332"}, {"codex", "0.171.0"}});
  // The reference goes into the versioned path as it is, slash and colon too.
  REQUIRE(fake.daemon.requests().back() == "/v1.40/images/mojoup/agents:0.1.0/json");
}

TEST_CASE("image inspect: an image of another origin has no agents", "[image]") {
  InspectDaemon fake;
  fake.daemon.AddImage("busybox:stable", "sha256:0123456789ab");
  auto image = fake.Inspect("busybox:stable");
  REQUIRE(image.ok());
  REQUIRE(image->agents.empty());
  REQUIRE(image->base.empty());
}

TEST_CASE("image inspect: a missing image says how to get it", "[image]") {
  InspectDaemon fake;
  auto image = fake.Inspect(DefaultAgentImage());
  REQUIRE(absl::IsNotFound(image.status()));
  REQUIRE(Message(image.status()) ==
          "the sandbox image " + DefaultAgentImage() +
              " is not on this node's Docker; build it with `mojoup-node image build`");

  image = fake.Inspect("my-agents:1");
  REQUIRE(absl::IsNotFound(image.status()));
  REQUIRE(Message(image.status()) ==
          "the sandbox image my-agents:1 is not on this node's Docker; build or load it, or set "
          "node.sandbox.image");
}

TEST_CASE("image inspect: a reference cannot leave the path", "[image]") {
  InspectDaemon fake;
  REQUIRE(absl::IsNotFound(fake.Inspect("a?b#c d").status()));
  REQUIRE(fake.daemon.requests().back() == "/v1.40/images/a%3Fb%23c%20d/json");
  REQUIRE(absl::IsInvalidArgument(fake.Inspect("").status()));
}

TEST_CASE("image inspect: a daemon that does not answer is Unavailable", "[image]") {
  InspectDaemon refused(FakeDockerDaemon::Mode::kRefuse);
  auto image = refused.Inspect(DefaultAgentImage());
  REQUIRE(absl::IsUnavailable(image.status()));
  REQUIRE_THAT(Message(image.status()), Contains("Docker did not say whether it holds the image"));

  InspectDaemon hung(FakeDockerDaemon::Mode::kHang);
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(absl::IsUnavailable(hung.Inspect(DefaultAgentImage()).status()));
  REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));

  InspectDaemon broken(FakeDockerDaemon::Mode::kError500);
  image = broken.Inspect(DefaultAgentImage());
  REQUIRE(absl::IsInternal(image.status()));
  REQUIRE_THAT(Message(image.status()), Contains("containerd: connection error"));
}

// What InspectSandboxImage makes of an answer the fake daemon would never give.
absl::StatusOr<mojoup::sandbox::AgentImage> InspectAnswer(const std::string& body) {
  mojoup::test::CannedDocker docker;
  docker.Answer("/v1.40/images/odd:1/json", body);
  return InspectSandboxImage(DockerEndpoint{"unix:///run/odd.sock", "test"}, docker, "odd:1",
                             kTimeout);
}

TEST_CASE("image inspect: members of another type are as if absent", "[image]") {
  auto image = InspectAnswer(
      R"({"Id": "sha256:0a", "Size": 42, "RepoTags": ["odd:1"], "Config": {"Env": [],)"
      R"( "Labels": {"mojoup.image.base": "debian:12-slim", "mojoup.agent.codex": "0.171.0",)"
      R"( "mojoup.agent.claude-code": 2, "mojoup.agent.": "x", "mojoup.agent.aider": null,)"
      R"( "mojoup.agentx": "1", "maintainer": ["someone"]}}})");
  REQUIRE(image.ok());
  CHECK(image->reference == "odd:1");
  CHECK(image->id == "sha256:0a");
  CHECK(image->size_bytes == 42);
  CHECK(image->base == "debian:12-slim");
  CHECK(image->agents == std::map<std::string, std::string>{{"codex", "0.171.0"}});

  image =
      InspectAnswer(R"({"Id": 7, "Size": "42", "Config": {"Labels": {"mojoup.image.base": 1}}})");
  REQUIRE(image.ok());
  CHECK(image->id.empty());
  CHECK(image->size_bytes == 0);
  CHECK(image->base.empty());
  CHECK(image->agents.empty());

  // A size past int64, or not whole, is unknown; a negative one is taken.
  CHECK(InspectAnswer(R"({"Size": 18446744073709551615})")->size_bytes == 0);
  CHECK(InspectAnswer(R"({"Size": 1.5})")->size_bytes == 0);
  CHECK(InspectAnswer(R"({"Size": -3})")->size_bytes == -3);

  for (const char* body :
       {R"({"Config": null})", R"({"Config": []})", R"({"Config": {"Labels": null}})",
        R"({"Config": {"Labels": ["mojoup.agent.codex=1"]}})", R"({"Config": {}})", "{}"}) {
    INFO(body);
    image = InspectAnswer(body);
    REQUIRE(image.ok());
    CHECK(image->id.empty());
    CHECK(image->base.empty());
    CHECK(image->agents.empty());
  }
}

TEST_CASE("image inspect: an answer that is not an object is an internal error", "[image]") {
  for (const char* body : {"[]", "null", R"("sha256:0a")", "{", ""}) {
    INFO(body);
    auto image = InspectAnswer(body);
    REQUIRE(absl::IsInternal(image.status()));
    CHECK(Message(image.status()) == "Docker's answer about the image odd:1 is not a JSON object");
  }
}

}  // namespace

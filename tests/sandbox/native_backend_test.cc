// The native backend against the fake Docker daemon on a real unix socket:
// every way the daemon can fail becomes a clear error within the deadline.
#include <chrono>

#include "../support/test_support.h"
#include "mojoup/probe/testing/fake_docker_daemon.h"
#include "mojoup/sandbox/native_backend.h"
#include "runtime/native/stream_pump.h"

namespace {

using Catch::Matchers::Contains;
using mojoup::probe::DockerEndpoint;
using mojoup::probe::testing::FakeDockerDaemon;
using mojoup::sandbox::FrameSplitter;
using mojoup::sandbox::MakeNativeBackend;
using mojoup::sandbox::NativeBackendOptions;
using mojoup::sandbox::SandboxSpec;
using mojoup::test::TempDir;

SandboxSpec Spec() {
  SandboxSpec spec;
  spec.session = "s1";
  spec.image = "agent-image:1";
  spec.supervisor = "/usr/libexec/mojoup/mojoup-sandbox-init";
  spec.workdir = "/home/ada/repo";
  spec.command = {"true"};
  return spec;
}

struct BackendDaemon {
  TempDir dir;
  FakeDockerDaemon daemon;
  explicit BackendDaemon(FakeDockerDaemon::Mode mode) : daemon(dir / "docker.sock", mode) {}
  std::unique_ptr<mojoup::sandbox::Backend> Backend() {
    NativeBackendOptions options;
    options.api_timeout = std::chrono::milliseconds(300);
    return MakeNativeBackend(DockerEndpoint{daemon.host(), "test"}, nullptr, options);
  }
};

using mojoup::test::Message;

TEST_CASE("native backend: a daemon that is down is a clear error", "[native]") {
  BackendDaemon fake(FakeDockerDaemon::Mode::kRefuse);
  auto created = fake.Backend()->Create(Spec());
  REQUIRE(absl::IsUnavailable(created.status()));
  REQUIRE_THAT(Message(created.status()), Contains("Docker could not create the sandbox"));
  REQUIRE_THAT(Message(created.status()), Contains("refused"));
}

TEST_CASE("native backend: a daemon that hangs costs the deadline, no more", "[native]") {
  BackendDaemon fake(FakeDockerDaemon::Mode::kHang);
  auto backend = fake.Backend();
  const auto start = std::chrono::steady_clock::now();
  auto created = backend->Create(Spec());
  auto removed = backend->Remove("abc");
  auto listed = backend->List({{"mojoup.state", "/run/mojoup"}});
  const auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(absl::IsUnavailable(created.status()));
  REQUIRE_FALSE(removed.ok());
  REQUIRE_FALSE(listed.ok());
  REQUIRE(took < std::chrono::seconds(3));
}

TEST_CASE("native backend: the daemon's own error message comes through", "[native]") {
  BackendDaemon fake(FakeDockerDaemon::Mode::kError500);
  auto created = fake.Backend()->Create(Spec());
  REQUIRE(absl::IsInternal(created.status()));
  REQUIRE_THAT(Message(created.status()), Contains("containerd: connection error"));
}

TEST_CASE("native backend: a 404 on create names the image to build or load", "[native]") {
  BackendDaemon fake(FakeDockerDaemon::Mode::kAnswer);
  auto backend = fake.Backend();
  auto created = backend->Create(Spec());
  REQUIRE(absl::IsFailedPrecondition(created.status()));
  REQUIRE_THAT(Message(created.status()), Contains("agent-image:1"));
  REQUIRE_THAT(Message(created.status()), Contains("node.sandbox.image"));
  // A sandbox that is already gone is removed.
  REQUIRE(backend->Remove("0123abcd").ok());
  // The requests went to the versioned API, the create with our name.
  auto seen = fake.daemon.requests();
  REQUIRE_FALSE(seen.empty());
  REQUIRE_THAT(seen.front(), Contains("/v1.40/containers/create?name=mojoup-s1"));
}

TEST_CASE("native backend: a spec without image or supervisor is refused", "[native]") {
  BackendDaemon fake(FakeDockerDaemon::Mode::kAnswer);
  SandboxSpec spec = Spec();
  spec.image.clear();
  REQUIRE(absl::IsInvalidArgument(fake.Backend()->Create(spec).status()));
  spec = Spec();
  spec.supervisor.clear();
  REQUIRE(absl::IsInvalidArgument(fake.Backend()->Create(spec).status()));
}

TEST_CASE("attach output frames split by stream, in any pieces", "[native]") {
  const std::string frames = std::string("\x01\0\0\0\0\0\0\x05hello", 13) +
                             std::string("\x02\0\0\0\0\0\0\x04oops", 12) +
                             std::string("\x01\0\0\0\0\0\0\0", 8) +  // empty frame
                             std::string("\x01\0\0\0\0\0\0\x01!", 9);
  for (std::size_t piece : {std::size_t{1}, std::size_t{3}, std::size_t{7}, frames.size()}) {
    INFO("pieces of " << piece);
    FrameSplitter splitter;
    std::string out;
    std::string err;
    for (std::size_t at = 0; at < frames.size(); at += piece) {
      const std::size_t size = std::min(piece, frames.size() - at);
      splitter.Feed(frames.data() + at, size,
                    [&](unsigned char stream, const char* data, std::size_t length) {
                      (stream == 2 ? err : out).append(data, length);
                    });
    }
    REQUIRE(out == "hello!");
    REQUIRE(err == "oops");
  }
}

}  // namespace

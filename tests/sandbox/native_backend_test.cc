// The native backend against the fake Docker daemon on a real unix socket:
// every way the daemon can fail becomes a clear error within the deadline.
#include "mojoup/sandbox/native_backend.h"

#include <chrono>

#include "../support/golden.h"
#include "../support/test_support.h"
#include "mojoup/probe/testing/fake_docker_daemon.h"
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

namespace {

// A Docker that answers from a script and keeps every request's target and
// body: what the backend writes, byte for byte.
class RecordingDocker : public mojoup::probe::DockerApi {
 public:
  std::vector<std::pair<std::string, std::string>> sent;
  std::string list_answer = "[]";

  mojoup::probe::DockerReply Send(const DockerEndpoint&, std::string_view method,
                                  std::string_view target, std::string_view body,
                                  std::chrono::milliseconds) override {
    sent.emplace_back(std::string(method) + " " + std::string(target), std::string(body));
    mojoup::probe::DockerReply reply;
    reply.failure = mojoup::probe::DockerReply::Failure::kNone;
    reply.status = 200;
    if (target.find("/containers/create") != std::string_view::npos) {
      reply.status = 201;
      reply.body = R"({"Id":"c0ffee","Warnings":[]})";
    } else if (target.find("/containers/json") != std::string_view::npos) {
      reply.body = list_answer;
    }
    return reply;
  }
  mojoup::probe::DockerReply Upgrade(const DockerEndpoint&, std::string_view, std::string_view,
                                     std::string_view, std::chrono::milliseconds,
                                     mojoup::probe::DockerStream&) override {
    return {};
  }
};

}  // namespace

TEST_CASE("native backend: the create body keeps its bytes", "[native]") {
  auto docker = std::make_unique<RecordingDocker>();
  RecordingDocker* seen = docker.get();
  auto backend = MakeNativeBackend(DockerEndpoint{"unix:///nowhere", "test"}, std::move(docker),
                                   NativeBackendOptions{});
  SandboxSpec spec = Spec();
  spec.labels = {{"mojoup.user", "ada"}, {"mojoup.state", "/run/mojoup \"x\""}};
  spec.uid = 1000;
  spec.gid = 1001;
  spec.command = {"sh", "-c", "echo \xc3\xa9t\xc3\xa9\t\x01"};
  spec.environment = {{"TERM", "xterm"}, {"HOME", "/home/ada"}};
  spec.mounts = {{"/home/ada/repo", "/home/ada/repo", false}, {"/etc/hosts", "/etc/hosts", true}};
  spec.writable = {"/home/ada/repo", "/tmp"};
  spec.tty = true;
  auto created = backend->Create(spec);
  REQUIRE(created.ok());
  REQUIRE(*created == "c0ffee");
  spec.proxy_socket = "/run/mojoup/s1/proxy.sock";
  spec.cpus = 1.5;
  spec.tty = false;
  REQUIRE(backend->Create(spec).ok());
  REQUIRE(seen->sent.size() == 2);
  CHECK_GOLDEN("sandbox/docker.create.json", seen->sent[0].second);
  CHECK_GOLDEN("sandbox/docker.create.proxy.json", seen->sent[1].second);
}

TEST_CASE("native backend: the list filter keeps its bytes, and odd entries are passed over",
          "[native]") {
  auto docker = std::make_unique<RecordingDocker>();
  RecordingDocker* seen = docker.get();
  docker->list_answer =
      R"([{"Id":"a1","Labels":{"mojoup.session":"s1","x":"y"},"State":"running"},)"
      R"({"Id":7},"odd",{"Id":"b2","State":"exited"},{"Id":"c3","Labels":[],"State":1}])";
  auto backend = MakeNativeBackend(DockerEndpoint{"unix:///nowhere", "test"}, std::move(docker),
                                   NativeBackendOptions{});
  auto listed = backend->List({{"mojoup.state", "/run/mojoup"}, {"mojoup.user", "ada"}});
  REQUIRE(listed.ok());
  REQUIRE(listed->size() == 3);
  REQUIRE((*listed)[0].id == "a1");
  REQUIRE((*listed)[0].session == "s1");
  REQUIRE((*listed)[0].labels.at("x") == "y");
  REQUIRE((*listed)[0].running);
  REQUIRE((*listed)[1].id == "b2");
  REQUIRE_FALSE((*listed)[1].running);
  REQUIRE((*listed)[2].id == "c3");
  REQUIRE((*listed)[2].session.empty());
  REQUIRE(seen->sent.size() == 1);
  CHECK_GOLDEN("sandbox/docker.list.target", seen->sent[0].first);
}

// docker.daemon: endpoint resolution as the docker CLI does it, and every
// daemon fault through the real client against the fake daemon on a real
// unix socket.
#include <fmt/format.h>
#include <grp.h>
#include <openssl/sha.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include "../support/canned_docker.h"
#include "../support/test_support.h"
#include "mojoup/probe/probe.h"
#include "mojoup/probe/testing/fake_docker_daemon.h"
#include "mojoup/probe/testing/mock_kernel.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using mojoup::probe::Check;
using mojoup::probe::CheckDocker;
using mojoup::probe::DockerReply;
using mojoup::probe::DockerReplyProblem;
using mojoup::probe::MakeDockerApi;
using mojoup::probe::ResolveDockerEndpoint;
using mojoup::probe::Status;
using mojoup::probe::testing::FakeDockerDaemon;
using mojoup::probe::testing::MockKernel;
using mojoup::test::CannedDocker;
using mojoup::test::TempDir;

namespace {

std::string ContextDir(const std::string& name) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(name.data()), name.size(), digest);
  std::string hex;
  for (unsigned char byte : digest) hex += fmt::format("{:02x}", byte);
  return "contexts/meta/" + hex;
}

Check DockerCheckAt(const std::string& host,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) {
  MockKernel kernel;
  kernel.env["DOCKER_HOST"] = host;
  auto api = MakeDockerApi();
  return CheckDocker(kernel, *api, timeout);
}

// The check of a daemon whose /_ping has no version headers and whose
// /version answers `body` (with an Api-Version header when given).
Check CheckWithVersionBody(const std::string& body, const std::string& header = {}) {
  MockKernel kernel;
  kernel.env["DOCKER_HOST"] = "unix:///run/odd.sock";
  CannedDocker docker;
  docker.Answer("/_ping", "OK");
  docker.Answer("/version", body, 200, header);
  return CheckDocker(kernel, docker, std::chrono::milliseconds(2000));
}

// What the endpoint resolves to for a config.json and the context "odd"'s
// meta.json.
absl::StatusOr<mojoup::probe::DockerEndpoint> EndpointFrom(const std::string& config,
                                                           const std::string& meta = {}) {
  MockKernel kernel;
  kernel.env["HOME"] = "/home/alice";
  kernel.files["/home/alice/.docker/config.json"] = config;
  if (!meta.empty()) kernel.files["/home/alice/.docker/" + ContextDir("odd") + "/meta.json"] = meta;
  return ResolveDockerEndpoint(kernel);
}

DockerReply Answered(int status, std::string body) {
  DockerReply reply;
  reply.failure = DockerReply::Failure::kNone;
  reply.status = status;
  reply.body = std::move(body);
  return reply;
}

}  // namespace

TEST_CASE("endpoint: DOCKER_HOST wins over everything", "[docker]") {
  MockKernel kernel;
  kernel.env["DOCKER_HOST"] = "unix:///run/user/1000/docker.sock";
  kernel.env["DOCKER_CONTEXT"] = "rootless";
  auto endpoint = ResolveDockerEndpoint(kernel);
  REQUIRE(endpoint.ok());
  REQUIRE(endpoint->host == "unix:///run/user/1000/docker.sock");
  REQUIRE(endpoint->source == "DOCKER_HOST");
  REQUIRE(endpoint->UnixPath() == "/run/user/1000/docker.sock");
}

TEST_CASE("endpoint: DOCKER_CONTEXT, then currentContext, then the default", "[docker]") {
  MockKernel kernel;
  kernel.env["HOME"] = "/home/alice";
  kernel.files["/home/alice/.docker/" + ContextDir("rootless") + "/meta.json"] =
      R"({"Name":"rootless","Endpoints":{"docker":{"Host":"unix:///run/user/1000/docker.sock"}}})";
  kernel.files["/home/alice/.docker/" + ContextDir("desktop-linux") + "/meta.json"] =
      R"({"Name":"desktop-linux","Endpoints":{"docker":{"Host":"unix:///home/alice/.docker/desktop/docker.sock"}}})";

  auto endpoint = ResolveDockerEndpoint(kernel);
  REQUIRE(endpoint.ok());
  REQUIRE(endpoint->host == "unix:///var/run/docker.sock");
  REQUIRE(endpoint->source == "default");

  kernel.files["/home/alice/.docker/config.json"] = R"({"currentContext": "desktop-linux"})";
  endpoint = ResolveDockerEndpoint(kernel);
  REQUIRE(endpoint.ok());
  REQUIRE(endpoint->host == "unix:///home/alice/.docker/desktop/docker.sock");
  REQUIRE(endpoint->source == "context \"desktop-linux\"");

  kernel.env["DOCKER_CONTEXT"] = "rootless";
  endpoint = ResolveDockerEndpoint(kernel);
  REQUIRE(endpoint.ok());
  REQUIRE(endpoint->host == "unix:///run/user/1000/docker.sock");

  SECTION("DOCKER_CONFIG moves the config directory") {
    kernel.env["DOCKER_CONFIG"] = "/etc/dockercfg";
    endpoint = ResolveDockerEndpoint(kernel);
    REQUIRE_FALSE(endpoint.ok());
    REQUIRE_THAT(std::string(endpoint.status().message()),
                 Contains("/etc/dockercfg/" + ContextDir("rootless") + "/meta.json"));
  }
  SECTION("the context named default is the default socket") {
    kernel.env["DOCKER_CONTEXT"] = "default";
    REQUIRE(ResolveDockerEndpoint(kernel)->host == "unix:///var/run/docker.sock");
  }
}

TEST_CASE("endpoint: a missing context or a broken file is an error naming it", "[docker]") {
  MockKernel kernel;
  kernel.env["HOME"] = "/home/alice";
  kernel.env["DOCKER_CONTEXT"] = "nope";
  auto endpoint = ResolveDockerEndpoint(kernel);
  REQUIRE_FALSE(endpoint.ok());
  REQUIRE_THAT(std::string(endpoint.status().message()),
               Contains("Docker context \"nope\" (from DOCKER_CONTEXT) does not exist"));

  kernel.env.erase("DOCKER_CONTEXT");
  kernel.files["/home/alice/.docker/config.json"] = "{\"currentContext\": ";
  endpoint = ResolveDockerEndpoint(kernel);
  REQUIRE_FALSE(endpoint.ok());
  REQUIRE_THAT(std::string(endpoint.status().message()),
               StartsWith("/home/alice/.docker/config.json is not valid JSON"));

  Check check = CheckDocker(kernel, *MakeDockerApi(), std::chrono::milliseconds(500));
  REQUIRE(check.status == Status::kFail);
  REQUIRE_THAT(check.reason, Contains("config.json"));
}

TEST_CASE("a healthy daemon passes with its versions", "[docker]") {
  TempDir dir;
  FakeDockerDaemon daemon(dir / "docker.sock", FakeDockerDaemon::Mode::kAnswer);
  Check check = DockerCheckAt(daemon.host());
  INFO(check.summary << " " << check.detail);
  REQUIRE(check.status == Status::kPass);
  REQUIRE_THAT(check.summary, Contains("Docker 20.10.24 (API 1.41)"));
  // The versions came with /_ping: /version, slow on a real dockerd, was not asked.
  REQUIRE(daemon.requests() == std::vector<std::string>{"/_ping"});
}

TEST_CASE("without version headers on /_ping, /version is asked", "[docker]") {
  TempDir dir;
  FakeDockerDaemon daemon(dir / "docker.sock", FakeDockerDaemon::Mode::kAnswer);
  daemon.SetVersion("24.0.7", "1.43");
  daemon.OmitPingHeaders();
  Check check = DockerCheckAt(daemon.host());
  REQUIRE(check.status == Status::kPass);
  REQUIRE_THAT(check.summary, Contains("Docker 24.0.7 (API 1.43)"));
  REQUIRE(daemon.requests() == std::vector<std::string>{"/_ping", "/version"});

  daemon.SetVersion("1.13.1", "1.26");
  REQUIRE_THAT(DockerCheckAt(daemon.host()).reason, Contains("Engine API 1.26"));
}

TEST_CASE("no socket: Docker is not installed or never started", "[docker]") {
  TempDir dir;
  Check check = DockerCheckAt("unix://" + (dir / "absent.sock"));
  REQUIRE(check.status == Status::kFail);
  REQUIRE_THAT(check.reason, Contains("not installed or was never started"));
  REQUIRE_THAT(check.reason, Contains("systemctl start docker"));
}

TEST_CASE("a stale socket: Docker is not running", "[docker]") {
  TempDir dir;
  FakeDockerDaemon daemon(dir / "docker.sock", FakeDockerDaemon::Mode::kRefuse);
  Check check = DockerCheckAt(daemon.host());
  REQUIRE(check.status == Status::kFail);
  REQUIRE_THAT(check.reason, StartsWith("Docker is not running"));
  REQUIRE_THAT(check.reason, Contains("refused the connection"));
}

TEST_CASE("a wedged daemon: no answer within the deadline", "[docker]") {
  TempDir dir;
  FakeDockerDaemon daemon(dir / "docker.sock", FakeDockerDaemon::Mode::kHang);
  auto start = std::chrono::steady_clock::now();
  Check check = DockerCheckAt(daemon.host(), std::chrono::milliseconds(300));
  auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(check.status == Status::kFail);
  REQUIRE_THAT(check.reason, Contains("did not answer within 0.3 s"));
  // Bounded by the deadline, with generous room for a loaded machine.
  REQUIRE(took < std::chrono::seconds(2));
}

TEST_CASE("a daemon answering 500 names the status and the daemon's words", "[docker]") {
  TempDir dir;
  FakeDockerDaemon daemon(dir / "docker.sock", FakeDockerDaemon::Mode::kError500);
  Check check = DockerCheckAt(daemon.host());
  REQUIRE(check.status == Status::kFail);
  REQUIRE_THAT(check.reason, Contains("HTTP 500"));
  REQUIRE_THAT(check.reason, Contains("containerd"));
}

TEST_CASE("something that is not a Docker daemon", "[docker]") {
  TempDir dir;
  FakeDockerDaemon daemon(dir / "docker.sock", FakeDockerDaemon::Mode::kGarbage);
  Check check = DockerCheckAt(daemon.host());
  REQUIRE(check.status == Status::kFail);
  REQUIRE_THAT(check.reason, Contains("did not answer like a Docker daemon"));
}

TEST_CASE("an API older than the sandbox needs", "[docker]") {
  TempDir dir;
  FakeDockerDaemon daemon(dir / "docker.sock", FakeDockerDaemon::Mode::kAnswer);
  daemon.SetVersion("1.13.1", "1.26");
  Check check = DockerCheckAt(daemon.host());
  REQUIRE(check.status == Status::kFail);
  REQUIRE_THAT(check.reason, Contains("Engine API 1.26, older than the 1.40"));
  REQUIRE_THAT(check.reason, Contains("upgrade Docker"));
}

TEST_CASE("bad DOCKER_HOST values are named", "[docker]") {
  REQUIRE_THAT(DockerCheckAt("ssh://me@host").reason, Contains("unix:// or tcp://"));
  REQUIRE_THAT(DockerCheckAt("tcp://127.0.0.1").reason, Contains("no port"));
  REQUIRE_THAT(DockerCheckAt("tcp://127.0.0.1:1").reason, StartsWith("Docker is not running"));
}

TEST_CASE("permission denied: the user is not in the socket's group", "[docker]") {
  TempDir dir;
  FakeDockerDaemon daemon(dir / "docker.sock", FakeDockerDaemon::Mode::kAnswer);
  REQUIRE(chmod(daemon.socket_path().c_str(), 0660) == 0);
  if (geteuid() != 0) {
    // An ordinary user: take the socket away from them.
    REQUIRE(chmod(daemon.socket_path().c_str(), 0) == 0);
    Check check = DockerCheckAt(daemon.host());
    REQUIRE_THAT(check.reason, Contains("Permission denied"));
    return;
  }
  // As root, check from a child that became nobody.
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
        setresuid(65534, 65534, 65534) != 0) {
      _exit(3);
    }
    auto kernel = mojoup::probe::MakeSystemKernel();
    MockKernel mock;
    mock.env["DOCKER_HOST"] = daemon.host();
    mock.user_name = kernel->UserName();
    mock.file_groups[daemon.socket_path()] = kernel->FileGroupName(daemon.socket_path()).value();
    Check check = CheckDocker(mock, *MakeDockerApi(), std::chrono::milliseconds(2000));
    (void)!write(fds[1], check.reason.data(), check.reason.size());
    _exit(0);
  }
  close(fds[1]);
  std::string reason;
  char buf[1024];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) reason.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  INFO(reason);
  REQUIRE_THAT(reason, StartsWith("Permission denied while connecting to the Docker API"));
  REQUIRE_THAT(reason, Contains("user nobody is not in the socket's group root"));
  REQUIRE_THAT(reason, Contains("sudo usermod -aG root nobody"));
}

TEST_CASE("endpoint: config.json of another shape", "[docker]") {
  // Not an object, or without currentContext: the default socket.
  for (const char* config : {"[]", "null", "7", R"({"auths": {}})", R"({"currentContext": ""})",
                             R"({"currentContext": "default", "credsStore": "pass"})"}) {
    INFO(config);
    auto endpoint = EndpointFrom(config);
    REQUIRE(endpoint.ok());
    CHECK(endpoint->host == "unix:///var/run/docker.sock");
    CHECK(endpoint->source == "default");
  }
  // A currentContext that is not a string is named.
  for (const char* config : {R"({"currentContext": 5})", R"({"currentContext": null})",
                             R"({"currentContext": ["odd"]})"}) {
    INFO(config);
    auto endpoint = EndpointFrom(config);
    REQUIRE_FALSE(endpoint.ok());
    CHECK(absl::IsInvalidArgument(endpoint.status()));
    CHECK(endpoint.status().message() ==
          "/home/alice/.docker/config.json: \"currentContext\" should be a string");
  }
}

TEST_CASE("endpoint: a context's meta.json of another shape", "[docker]") {
  const std::string config = R"({"currentContext": "odd"})";
  auto endpoint =
      EndpointFrom(config, R"({"Name": "odd", "Metadata": {}, "Endpoints": {"docker": {"Host": )"
                           R"("tcp://10.0.0.2:2375", "SkipTLSVerify": false}, "kubernetes": {}}})");
  REQUIRE(endpoint.ok());
  CHECK(endpoint->host == "tcp://10.0.0.2:2375");
  CHECK(endpoint->source == "context \"odd\"");

  for (const char* meta :
       {"[]", "null", R"({"Name": "odd"})", R"({"Endpoints": []})", R"({"Endpoints": {}})",
        R"({"Endpoints": {"docker": "unix:///x.sock"}})", R"({"Endpoints": {"docker": {}}})",
        R"({"Endpoints": {"docker": {"Host": 5}}})", R"({"Endpoints": {"docker": {"Host": null}}})",
        R"({"Endpoints": {"docker": {"Host": ""}}})"}) {
    INFO(meta);
    endpoint = EndpointFrom(config, meta);
    REQUIRE_FALSE(endpoint.ok());
    CHECK(absl::IsInvalidArgument(endpoint.status()));
    CHECK(endpoint.status().message() == "/home/alice/.docker/" + ContextDir("odd") +
                                             "/meta.json: expected a string at "
                                             "Endpoints.docker.Host for Docker context \"odd\"");
  }
}

TEST_CASE("docker /version of another shape: what is not a string is not there", "[docker]") {
  // Members it does not read change nothing.
  Check check = CheckWithVersionBody(
      R"({"Platform": {"Name": ""}, "Version": "24.0.7", "ApiVersion": "1.43", "Os": 1})");
  CHECK(check.status == Status::kPass);
  CHECK(check.summary == "Docker 24.0.7 (API 1.43) answers at unix:///run/odd.sock (DOCKER_HOST).");

  // An ApiVersion absent, or not a string, is the Api-Version header's.
  for (const char* body :
       {R"({"Version": "24.0.7"})", R"({"Version": "24.0.7", "ApiVersion": 1.43})",
        R"({"Version": "24.0.7", "ApiVersion": null})"}) {
    INFO(body);
    check = CheckWithVersionBody(body, "1.41");
    CHECK(check.status == Status::kPass);
    CHECK(check.summary ==
          "Docker 24.0.7 (API 1.41) answers at unix:///run/odd.sock (DOCKER_HOST).");
  }

  // No Version string, or no object at all: not a Docker daemon.
  for (const char* body :
       {R"({"Version": 24, "ApiVersion": "1.43"})", R"({"Version": "", "ApiVersion": "1.43"})",
        R"({"ApiVersion": "1.43"})", R"(["24.0.7", "1.43"])", "null", "Version: 24.0.7"}) {
    INFO(body);
    check = CheckWithVersionBody(body, "1.43");
    CHECK(check.status == Status::kFail);
    CHECK(check.reason ==
          "Unix:///run/odd.sock (DOCKER_HOST) answered /version without a Version and "
          "ApiVersion; point DOCKER_HOST or the Docker context at dockerd.");
    CHECK(check.detail == body);
  }
}

TEST_CASE("DockerReplyProblem: the daemon's message when it is a string", "[docker]") {
  CHECK(DockerReplyProblem(Answered(500, R"({"message": "boom"})")) == "boom");
  CHECK(DockerReplyProblem(Answered(409, R"({"message": "in use", "because": 1})")) == "in use");
  CHECK(DockerReplyProblem(Answered(500, R"({"message": ""})")).empty());
  for (const char* body : {R"({"message": 5})", R"({"message": null})", R"({"Message": "x"})",
                           R"(["boom"])", "boom", ""}) {
    INFO(body);
    CHECK(DockerReplyProblem(Answered(500, body)) == "HTTP 500");
  }
  DockerReply failed = Answered(0, R"({"message": "boom"})");
  failed.failure = DockerReply::Failure::kRefused;
  CHECK(DockerReplyProblem(failed) == "the Docker daemon did not answer");
}

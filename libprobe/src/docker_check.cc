// docker.daemon: resolve the endpoint as the docker CLI does, then /_ping and
// /version. Error meanings: the design's FACTS.md, "Docker endpoint and errors".
#include "check_util.h"
#include "fmt/format.h"
#include "mojoup/internal/docker_api_version.h"
#include "mojoup/internal/json_codec.h"
#include "mojoup/probe/probe.h"

namespace mojoup::probe {

// The libraries speak the oldest Engine API the probe accepts.
static_assert(kMinDockerApi ==
                  SemVer{mojoup::internal::kDockerApiMajor, mojoup::internal::kDockerApiMinor, 0},
              "mojoup/internal/docker_api_version.h names the probe's minimum");
namespace {

using internal::FailedCheck;
using internal::FirstLine;
using internal::Pass;
using internal::Seconds;
namespace json = mojoup::internal::json;

// What the check reads of /version; a member that is not a string is as if
// absent.
struct VersionAnswer {
  std::string version;
  std::string api_version;
};
constexpr auto kVersionAnswer = json::Message<VersionAnswer>(
    json::Optional("Version", &VersionAnswer::version).Lenient(),
    json::Optional("ApiVersion", &VersionAnswer::api_version).Lenient());

// "unix:///var/run/docker.sock" or "unix:///x.sock (DOCKER_HOST)".
std::string Where(const DockerEndpoint& endpoint) {
  if (endpoint.source == "default") return endpoint.host;
  return fmt::format("{} ({})", endpoint.host, endpoint.source);
}

Check FailedCall(Kernel& kernel, const DockerEndpoint& endpoint, std::string_view target,
                 const DockerReply& reply, std::chrono::milliseconds timeout) {
  const std::string where = Where(endpoint);
  const std::string detail =
      fmt::format("GET {} on {}: {}", target, endpoint.host,
                  reply.message.empty() ? fmt::format("HTTP {}", reply.status) : reply.message);
  switch (reply.failure) {
    case DockerReply::Failure::kNoSocket:
      return FailedCheck(
          check_id::kDocker,
          fmt::format("Docker is not installed or was never started: there is no socket "
                      "at {}",
                      where),
          "install Docker (`sudo apt-get install docker.io`) and start it "
          "(`sudo systemctl start docker`)",
          detail);
    case DockerReply::Failure::kRefused:
      return FailedCheck(check_id::kDocker,
                         fmt::format("Docker is not running: {} refused the connection", where),
                         "start Docker with `sudo systemctl start docker`", detail);
    case DockerReply::Failure::kPermission: {
      const std::string user = kernel.UserName();
      const std::string group = kernel.FileGroupName(endpoint.UnixPath()).value_or("docker");
      return FailedCheck(
          check_id::kDocker,
          fmt::format("Permission denied while connecting to the Docker API at {}: user "
                      "{} is not in the socket's group {}",
                      where, user, group),
          fmt::format("add the user to it with `sudo usermod -aG {} {}` and log in again", group,
                      user),
          detail);
    }
    case DockerReply::Failure::kTimedOut:
      return FailedCheck(
          check_id::kDocker,
          fmt::format("Docker at {} did not answer within {}, so the daemon is wedged", where,
                      Seconds(timeout)),
          "restart the Docker daemon with `sudo systemctl restart docker`", detail);
    case DockerReply::Failure::kBadEndpoint:
      return FailedCheck(check_id::kDocker, fmt::format("The Docker endpoint {}", reply.message),
                         "set DOCKER_HOST to unix:///PATH or tcp://ADDRESS:PORT", detail);
    case DockerReply::Failure::kProtocol:
      return FailedCheck(
          check_id::kDocker,
          fmt::format("{} did not answer like a Docker daemon ({})", where, reply.message),
          "point DOCKER_HOST or the Docker context at dockerd", detail);
    case DockerReply::Failure::kOther:
      return FailedCheck(check_id::kDocker,
                         fmt::format("Cannot reach Docker at {}: {}", where, reply.message),
                         "check that dockerd is running (`sudo systemctl status docker`)", detail);
    case DockerReply::Failure::kNone:
      break;
  }
  std::string said = FirstLine(reply.body);
  return FailedCheck(check_id::kDocker,
                     fmt::format("Docker at {} answered {} with HTTP {}{}", where, target,
                                 reply.status, said.empty() ? "" : ": " + said),
                     "read the daemon's log (`journalctl -u docker`) and restart it", detail);
}

// "Docker/20.10.24+dfsg1 (linux)" -> "20.10.24+dfsg1"; "" for any other server.
std::string EngineFromServerHeader(std::string_view server) {
  constexpr std::string_view kPrefix = "Docker/";
  if (server.substr(0, kPrefix.size()) != kPrefix) return {};
  server.remove_prefix(kPrefix.size());
  return std::string(server.substr(0, server.find(' ')));
}

}  // namespace

Check CheckDocker(Kernel& kernel, DockerApi& docker, std::chrono::milliseconds timeout) {
  auto endpoint = ResolveDockerEndpoint(kernel);
  if (!endpoint.ok()) {
    return FailedCheck(
        check_id::kDocker, std::string(endpoint.status().message()),
        "fix DOCKER_HOST, DOCKER_CONTEXT or the docker config so they name a daemon, or "
        "unset them");
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto left = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now()));
  };
  DockerReply ping = docker.Get(*endpoint, "/_ping", left());
  if (ping.failure != DockerReply::Failure::kNone || ping.status != 200) {
    return FailedCall(kernel, *endpoint, "/_ping", ping, timeout);
  }
  // dockerd answers /_ping with its versions in the Api-Version and Server
  // headers; /version costs it several milliseconds (it runs runc and
  // docker-init to learn theirs), so it is asked only when the headers lack them.
  std::string engine = EngineFromServerHeader(ping.server);
  std::string api = ping.api_version;
  std::string body;
  if (engine.empty() || api.empty()) {
    DockerReply version = docker.Get(*endpoint, "/version", left());
    if (version.failure != DockerReply::Failure::kNone || version.status != 200) {
      return FailedCall(kernel, *endpoint, "/version", version, timeout);
    }
    const VersionAnswer answer =
        json::Parse<VersionAnswer>(version.body, kVersionAnswer, "Docker's /version answer")
            .value_or(VersionAnswer{});
    engine = answer.version;
    api = answer.api_version;
    if (api.empty()) api = version.api_version;
    body = FirstLine(version.body);
  }
  auto parsed = ParseSemVer(api);
  const std::string where = Where(*endpoint);
  if (engine.empty() || !parsed) {
    return FailedCheck(check_id::kDocker,
                       fmt::format("{} answered /version without a Version and ApiVersion", where),
                       "point DOCKER_HOST or the Docker context at dockerd", body);
  }
  if (*parsed < kMinDockerApi) {
    return FailedCheck(check_id::kDocker,
                       fmt::format("Docker {} at {} speaks Engine API {}, older than the {}.{} the "
                                   "sandbox needs",
                                   engine, where, api, kMinDockerApi.major, kMinDockerApi.minor),
                       "upgrade Docker to 19.03 or later");
  }
  return Pass(check_id::kDocker,
              fmt::format("Docker {} (API {}) answers at {}", engine, api, where),
              fmt::format("endpoint from {}", endpoint->source));
}

}  // namespace mojoup::probe

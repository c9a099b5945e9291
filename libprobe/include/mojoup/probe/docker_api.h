// DockerApi: the probe's seam to the Docker Engine API.
//
// ResolveDockerEndpoint() finds the daemon the way the docker CLI does:
// DOCKER_HOST, then DOCKER_CONTEXT, then `currentContext` in
// $DOCKER_CONFIG/config.json (default ~/.docker) with the context's
// meta.json, then unix:///var/run/docker.sock. DockerApi::Get() sends one
// HTTP/1.1 request to it with a deadline and tells apart the ways it can fail.
//
//   auto endpoint = mojoup::probe::ResolveDockerEndpoint(*kernel);
//   auto reply = mojoup::probe::MakeDockerApi()->Get(*endpoint, "/_ping",
//                                                    std::chrono::seconds(2));
//   if (reply.failure == DockerReply::Failure::kRefused) ...  // daemon down
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "mojoup/probe/kernel.h"

namespace mojoup::probe {

struct DockerEndpoint {
  // "unix:///var/run/docker.sock" or "tcp://host:port", as the user wrote it.
  std::string host;
  // Where it came from: "DOCKER_HOST", "context \"rootless\"", "default".
  std::string source;

  // The socket path for a unix:// endpoint, else empty.
  std::string UnixPath() const;
};

// Errors name the file or variable that was wrong (an unknown context, an
// unreadable meta.json) and what was expected.
absl::StatusOr<DockerEndpoint> ResolveDockerEndpoint(Kernel& host);

struct DockerReply {
  enum class Failure {
    kNone,         // got an HTTP response; see status
    kNoSocket,     // ENOENT: nothing at that path
    kRefused,      // ECONNREFUSED: a stale socket, the daemon is down
    kPermission,   // EACCES / EPERM on connect
    kTimedOut,     // no complete answer before the deadline
    kBadEndpoint,  // a scheme or address this client cannot use
    kProtocol,     // the peer did not speak HTTP
    kOther,        // any other connect or I/O error; see sys_error / message
  };
  Failure failure = Failure::kOther;
  int sys_error = 0;    // errno, when the failure came from a syscall
  std::string message;  // the error as the system put it
  int status = 0;       // HTTP status
  std::string body;
  std::string api_version;  // the Api-Version header, if any
  std::string server;       // the Server header ("Docker/20.10.24 (linux)"), if any
};

// A hijacked connection (attach, exec): the raw stream after the response
// head. The caller owns `fd`.
struct DockerStream {
  int fd = -1;
  std::string pending;  // stream bytes that arrived with the response head
};

class DockerApi {
 public:
  virtual ~DockerApi() = default;
  // One request; `body`, when not empty, is sent as application/json.
  virtual DockerReply Send(const DockerEndpoint& endpoint, std::string_view method,
                           std::string_view target, std::string_view body,
                           std::chrono::milliseconds timeout) = 0;

  // A request that takes the connection over (Connection: Upgrade). On 101 or
  // 200 the connection is in `stream`; on any other status the reply holds
  // the daemon's error body.
  virtual DockerReply Upgrade(const DockerEndpoint& endpoint, std::string_view method,
                              std::string_view target, std::string_view body,
                              std::chrono::milliseconds timeout, DockerStream& stream) = 0;

  DockerReply Get(const DockerEndpoint& endpoint, std::string_view target,
                  std::chrono::milliseconds timeout) {
    return Send(endpoint, "GET", target, {}, timeout);
  }
};

// HTTP/1.1 over the endpoint's unix socket or TCP address (plain, no TLS).
std::unique_ptr<DockerApi> MakeDockerApi();

// What went wrong with a reply that was not the answer hoped for, for an
// error message: the daemon's own words from an error body ({"message":
// "..."}), else the transport failure, else "HTTP <status>".
std::string DockerReplyProblem(const DockerReply& reply);

}  // namespace mojoup::probe

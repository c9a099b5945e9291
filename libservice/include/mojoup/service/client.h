// A client of the node's sandbox service (`mojoup-node serve`): many
// sessions from one long-running process, each in a worker process of its
// own, reached over a unix socket that speaks versioned JSON over HTTP/1.1
// (docs/service-api.md has the API's reference). The server's side is
// mojoup/service/server.h.
//
// This is the library's way to run many sessions at once: a Node is one per
// thread, and a program that wants more talks to the service. A program that
// only talks to the service links mojoup::service_client alone: the
// protocol, the client and the library's internal helpers, without the
// runtimes, the image builder or the credential proxy.
//
//   auto client = mojoup::ServiceClient::Connect();        // "" = the default socket
//   if (!client.ok()) return Fail(client.status());        // Unavailable: no service runs
//   mojoup::RunRequest request;
//   request.workdir = "/home/me/src/app";
//   request.command = {"make", "test"};
//   auto started = client->Start(request, {.detach = true});
//   auto attached = client->Attach(started->id);           // scrollback, then live output
//   int code = *(*attached)->Pump(mojoup::sandbox::Stdio{}, {});
//
// Every refusal is one sentence; an InvalidArgument status is bad input.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mojoup/sandbox/run_request.h"
#include "mojoup/sandbox/stdio.h"
#include "mojoup/service/reason.h"

namespace mojoup {

// Where a service listens: $MOJOUP_SERVICE_SOCKET when absolute; else, for
// root, /run/mojoup/node.sock (the system service, which serves every user
// in node.sandbox.allowed_users); else <state dir>/node.sock (the user's own
// service, which serves only that user).
std::string DefaultServiceSocket();

// The sockets a client tries, in order: $MOJOUP_SERVICE_SOCKET alone when
// set; else the user's own service, then the system service.
std::vector<std::string> ServiceSocketCandidates();

// A session the service runs, as GET /v1/sessions/ID gives it.
struct ServiceSession {
  std::string id;
  std::string user;
  uid_t uid = 0;
  std::string repo;
  std::string tool;
  std::string runtime;
  std::string state;  // "starting", "running", "stopping", "ended"
  std::string started_at;
  bool terminal = false;
  bool detached = false;
  std::optional<int> exit_code;  // once ended
};

struct StartOptions {
  bool detach = false;                   // the session runs without waiting for an attach
  unsigned short rows = 0, columns = 0;  // the terminal's size, with request.terminal
};

struct StartResult {
  std::string id;
  // The notices the node gave while starting (the decision's sentence, warnings).
  std::vector<std::string> notices;
  bool terminal = false;
  // The decision was to run unsandboxed: the service does not run those, the
  // caller runs the command itself (Node::Start), as `run` does.
  bool unsandboxed = false;
};

// What Attachment::Pump does with the session's signals and its end.
struct PumpHooks {
  // A notice the session gave after it started (sign-ins written back, ...).
  std::function<void(std::string_view)> notice;
};

// A connection to one session's stdio (POST /v1/sessions/ID/attach): the
// last 1 MiB of its output first, then its output live.
class Attachment {
 public:
  virtual ~Attachment() = default;
  // Copies stdio.in to the session and its output to stdio.out/err until the
  // session ends; its exit code (128+N for signal N). Returns Unavailable
  // when the service went away mid-session.
  virtual absl::StatusOr<int> Pump(const sandbox::Stdio& stdio, const PumpHooks& hooks) = 0;
  // From any thread while Pump runs.
  virtual absl::Status Signal(int signal) = 0;
  virtual absl::Status Resize(unsigned short rows, unsigned short columns) = 0;
  // Ends Pump without ending the session (detaches).
  virtual void Detach() = 0;
};

// An attachment in the foreground of a terminal program, as `mojoup-node
// run` and `attach` hold one: the signals its user sends go to the session,
// window size changes to its terminal, and this process's terminal is raw
// while the session owns it.
struct ForegroundAttach {
  bool terminal = false;  // the session has a terminal, and so does this process
  // SIGTERM and SIGHUP end the attach, not the session (`attach`); else they
  // go to the session as every other signal does (`run`).
  bool detach_on_end = false;
  PumpHooks hooks;
};

// Blocks, here and in threads started from now on, the signals an attachment
// in the foreground passes on (INT, TERM, HUP, QUIT) and WINCH, so that only
// AttachInForeground takes them. Call before starting other threads.
void BlockForegroundSignals();

// Pumps `attachment` with this process's stdio until the session ends (its
// exit code) or the attach is ended (Cancelled: the session goes on).
absl::StatusOr<int> AttachInForeground(Attachment& attachment, const ForegroundAttach& how);

// One per thread, as a Node is (last_reason() belongs to the object); each
// call opens a connection of its own.
class ServiceClient {
 public:
  // The first of ServiceSocketCandidates() (or `socket`) that answers.
  // Unavailable when none does: no service runs.
  static absl::StatusOr<ServiceClient> Connect(const std::string& socket = "");

  const std::string& socket() const { return socket_; }

  // Starts a session as the calling user. The request's paths must be
  // absolute or are taken from this process's working directory; each
  // credential's value is read from this process's environment and sent over
  // the socket. Refusals (limits, draining, a host that cannot sandbox) are
  // FailedPrecondition or ResourceExhausted with the service's sentence.
  absl::StatusOr<StartResult> Start(const RunRequest& request, const StartOptions& options);
  absl::StatusOr<std::vector<ServiceSession>> Sessions();
  absl::StatusOr<ServiceSession> Get(const std::string& id);
  absl::Status Signal(const std::string& id, int signal);
  absl::Status Resize(const std::string& id, unsigned short rows, unsigned short columns);
  // Stops the session as `mojoup-node stop` does and waits for its end: its exit code.
  absl::StatusOr<int> Stop(const std::string& id);
  absl::StatusOr<std::unique_ptr<Attachment>> Attach(const std::string& id);
  // Stops admitting sessions; the service exits once they have ended.
  absl::Status Drain();
  // GET on the API: the body of a 200 answer (JSON).
  absl::StatusOr<std::string> GetJson(const std::string& path);

  // Why a refusal happened, as the service put it ("max_sessions", ...),
  // for the last call that was refused.
  const std::string& last_reason() const { return last_reason_; }
  // The same as a Reason: kNone when the last call was not refused, or was
  // refused for a reason this client does not know (a newer service's).
  Reason reason() const { return ReasonFromName(last_reason_).value_or(Reason::kNone); }

 private:
  explicit ServiceClient(std::string socket) : socket_(std::move(socket)) {}
  absl::StatusOr<std::string> Call(std::string_view method, const std::string& path,
                                   const std::string& body, int expected);
  std::string socket_;
  std::string last_reason_;
};

}  // namespace mojoup

// The node's sandbox service (`mojoup-node serve`) and its client: many
// sessions from one long-running process, each in a worker process of its
// own, reached over a unix socket that speaks versioned JSON over HTTP/1.1
// (README, "The sandbox service", has the API's reference).
//
// This is the library's way to run many sessions at once: a Node is one per
// thread, and a program that wants more talks to the service.
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
#include "mojoup/sandbox/backend.h"
#include "mojoup/sandbox/node.h"

namespace mojoup {

// Where a service listens: $MOJOUP_SERVICE_SOCKET when absolute; else, for
// root, /run/mojoup/node.sock (the system service, which serves every user
// in node.sandbox.allowed_users); else <state dir>/node.sock (the user's own
// service, which serves only that user).
std::string DefaultServiceSocket();

// The sockets a client tries, in order: $MOJOUP_SERVICE_SOCKET alone when
// set; else the user's own service, then the system service.
std::vector<std::string> ServiceSocketCandidates();

struct ServiceOptions {
  std::string config_path;  // empty: policy::DefaultConfigPath()
  bool config_named = false;
  std::string socket;  // empty: DefaultServiceSocket()
  // The program each session's worker runs: a mojoup-node, whose hidden
  // `__session-worker` command is RunSessionWorker. Empty: this program
  // itself (through /proc/self/exe, so an upgrade mid-run changes nothing).
  std::string worker_program;
  // A line for the service's log (journald takes stderr).
  std::function<void(std::string_view)> log;
  // systemd's notification protocol: "READY=1", "STOPPING=1", "STATUS=...".
  std::function<void(std::string_view)> notify;
  // How often the service probes the host again while it runs.
  std::chrono::seconds reprobe{30};
};

// Serves until drained: SIGTERM or SIGINT (a second one stops the sessions
// without waiting), or `POST /v1/service/drain`. SIGHUP reloads the config
// and probes again. 0 when every session ended and nothing was left; 1 when
// the service could not start or something could not be cleaned up; 2 for a
// bad config.
int RunService(ServiceOptions options);

// The worker's side of a session: reads the start request from `control`
// (its first packet), runs the session, serves attaches on `listener`, and
// returns the session's exit code. The service starts it; nothing else should.
int RunSessionWorker(int control, int listener);

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

 private:
  explicit ServiceClient(std::string socket) : socket_(std::move(socket)) {}
  absl::StatusOr<std::string> Call(std::string_view method, const std::string& path,
                                   const std::string& body, int expected);
  std::string socket_;
  std::string last_reason_;
};

}  // namespace mojoup

// The node's sandbox service itself (`mojoup-node serve`) and the worker
// each of its sessions runs in. A program that only starts and watches
// sessions needs the client (mojoup/service/client.h), not this.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mojoup {

// Who is at the other end of a connection to the service's socket.
struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

// Who a worker runs as, and its environment.
struct WorkerIdentity {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  // NAME=VALUE entries: exactly the worker's environment.
  std::vector<std::string> environment;
  // The service is root and the caller is not: the worker drops to uid,
  // gid and groups before it runs.
  bool change = false;
};

// A worker the service starts: the hidden mojoup-node `command` it runs
// ("__session-worker" for a session, "__session-reap" to clean up after a
// user's sessions whose worker is gone), as whom, and the descriptors it
// gets as its 3 (the session's control socket) and 4 (its listener).
struct WorkerLaunch {
  std::string command;
  WorkerIdentity identity;
  int control = -1;   // its descriptor 3, when >= 0
  int listener = -1;  // its descriptor 4, when >= 0 (and control is)
};

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

  // Seams for a harness; unset, the real ones.
  // Who called, on a connection accepted on the API's socket (SO_PEERCRED).
  std::function<absl::StatusOr<PeerCredentials>(int fd)> peer_credentials;
  // The monotonic clock behind the drain's deadline and the sessions'
  // durations (waits on sockets and processes keep the real one).
  std::function<std::chrono::steady_clock::time_point()> clock;
  // Starts a worker and returns its pid, which the service then waits for
  // and reaps; an error when it could not start it (a session's client is
  // told the service could not start the session's worker). Unset:
  // worker_program in a session of its own, with no other descriptor than
  // the launch's and /dev/null as its stdin.
  std::function<absl::StatusOr<pid_t>(const WorkerLaunch& launch)> launch_worker;
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

// Enables and starts the service's systemd unit, mojoup-node.service: the
// user's own (`kind` "user") or the system one ("system", root's to enable).
// InvalidArgument for another kind; FailedPrecondition, with the sentence
// `mojoup-node setup` prints, when systemctl refuses or it is not root's.
absl::Status EnableServiceUnit(std::string_view kind);

}  // namespace mojoup

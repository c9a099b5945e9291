// The sandbox service's inside, shared by its source files: the sessions it
// runs (one worker process each), the host's verdict, its limits, drain and
// metrics. Everything under `mu`.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "mojoup/policy/node_config.h"
#include "mojoup/probe/report.h"
#include "mojoup/sandbox/agent_image.h"
#include "mojoup/sandbox/node.h"
#include "mojoup/service/client.h"
#include "mojoup/service/server.h"
#include "protocol/protocol.h"

namespace mojoup::service {

// Who is calling, from SO_PEERCRED.
struct Caller {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
  std::string user;
};

// One session the service runs.
struct SessionSlot {
  WorkerEntry entry;
  ServiceSession info;
  int pidfd = -1;
  bool child = false;  // started by this service (else re-adopted)
  // The worker's packets: its control socket (a child) or a watch
  // connection (re-adopted). Tallies come here, and an adopted one's exit.
  int watch = -1;
  std::optional<int> exit_code;  // as the watch connection said it
  // Past its budget of packets in one wake, the watch is not read again
  // until then: a worker that floods it slows only itself.
  std::chrono::steady_clock::time_point watch_quiet_until{};
  bool watch_flooded = false;  // said once in the log
  // The worker's last tally: what it says of its own session only, never
  // taken when a count went down.
  WorkerTally tally;
  bool tally_refused = false;  // said once in the log
  bool stop_sent = false;
  std::chrono::steady_clock::time_point started;
};

// A Prometheus histogram with fixed upper bounds.
struct Histogram {
  std::vector<double> bounds;
  std::vector<std::uint64_t> counts;  // one per bound, plus +Inf
  double sum = 0;
  void Observe(double value);
};

struct Metrics {
  std::uint64_t started = 0;
  std::map<std::string, std::uint64_t> ended;     // by outcome
  std::map<std::string, std::uint64_t> refusals;  // by reason
  // Connections refused or cut short, by {listener, reason}.
  std::map<std::pair<std::string, std::string>, std::uint64_t> connection_refusals;
  std::uint64_t reaped = 0;
  // The tallies of the sessions that ended (their `pending` unused).
  WorkerTally ended_tally;
  Histogram start_seconds{{0.25, 0.5, 1, 2, 5, 10, 30, 60, 120}, {}, 0};
  Histogram duration_seconds{{1, 10, 60, 300, 900, 1800, 3600, 14400}, {}, 0};
};

class State {
 public:
  explicit State(ServiceOptions options);

  ServiceOptions options;
  uid_t service_uid = 0;
  std::string service_user;
  std::string socket_path;
  std::string workers_dir;

  absl::Mutex mu;
  policy::NodeConfig config ABSL_GUARDED_BY(mu);
  probe::Report report ABSL_GUARDED_BY(mu);
  absl::StatusOr<sandbox::AgentImage> image ABSL_GUARDED_BY(mu) =
      absl::NotFoundError("not probed yet");
  std::map<std::string, SessionSlot> sessions ABSL_GUARDED_BY(mu);
  std::deque<ServiceSession> ended ABSL_GUARDED_BY(mu);  // the last ones, for GET
  bool draining ABSL_GUARDED_BY(mu) = false;
  std::optional<std::chrono::steady_clock::time_point> drain_deadline ABSL_GUARDED_BY(mu);
  bool stop_now ABSL_GUARDED_BY(mu) = false;
  Metrics metrics ABSL_GUARDED_BY(mu);
  // users whose dead sessions want cleaning up
  std::set<uid_t> reap_for ABSL_GUARDED_BY(mu);
  // processes a thread of ours waits for itself
  std::set<pid_t> helpers ABSL_GUARDED_BY(mu);
  // The prober, which waits on these: probe again now (probe_now), reread
  // the config first (reload).
  bool probe_now ABSL_GUARDED_BY(mu) = false;
  bool reload ABSL_GUARDED_BY(mu) = false;
  bool quitting ABSL_GUARDED_BY(mu) = false;

  // Wakes the main loop (an eventfd).
  int wake_fd = -1;
  void Wake() const;

  // options.clock, else the steady clock.
  std::chrono::steady_clock::time_point Now() const {
    return options.clock ? options.clock() : std::chrono::steady_clock::now();
  }
  // options.peer_credentials, else the socket's SO_PEERCRED.
  absl::StatusOr<PeerCredentials> PeerOf(int fd) const;
  void Log(std::string_view line) const;

  // Whether `caller` may use this service at all; the refusal's sentence if not.
  std::optional<std::string> Refuse(const Caller& caller);
  // Whether `caller` may see and steer `session`.
  bool Owns(const Caller& caller, const ServiceSession& session) const;
  // Starts draining (`why`: "SIGTERM", "a drain request").
  void Drain(std::string_view why);

  // The limit a new session of `caller` would break, as {reason, sentence}; mu held.
  std::optional<std::pair<Reason, std::string>> Limit(const Caller& caller)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Where `caller`'s sessions keep their state: the filesystem the disk
  // floor is checked on.
  std::string SessionStateDir(const Caller& caller) const;
  // The state directory a worker of `uid` keeps its sessions in, as the
  // environment IdentityFor gives it says; empty when `uid` has no account.
  std::string WorkerStateDir(uid_t uid) const;
  // Records a refusal in the metrics; mu held.
  void Refused(Reason reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Records a connection refused at accept or cut off (`listener`: api or
  // health); takes mu.
  void ConnectionRefused(const std::string& listener, Reason reason) ABSL_LOCKS_EXCLUDED(mu);
};

// The session's worker, started for `caller`; the start's outcome as an
// HTTP status and body. Blocks until the worker said how its start went.
std::pair<int, std::string> StartSession(State& state, const Caller& caller,
                                         const std::string& body);

// Who a worker or helper for a caller runs as: the caller, when the
// service is root; else the service's own user, with its environment.
absl::StatusOr<WorkerIdentity> IdentityFor(const State& state, const Caller& caller);

// Starts `mojoup-node COMMAND` as `id` through options.launch_worker (by
// default SpawnWorker), with `control` and `listener` (when >= 0) as
// descriptors 3 and 4; the service reaps it. The pid, or -1 (logged).
pid_t LaunchWorker(const State& state, WorkerIdentity id, const char* command, int control = -1,
                   int listener = -1);

// pidfd_open(2); -1 when it fails.
int PidfdOpen(pid_t pid);

// Asks the session's worker something (service/worker.cc's ops); its answer.
absl::StatusOr<std::string> AskWorker(const State& state, const std::string& id,
                                      const std::string& op, int pass = -1);

// The main loop: accepts, waits on the workers' pidfds, signals, probes.
int Serve(State& state);

// Who a connection's SO_PEERCRED says is calling.
Caller CallerOf(const PeerCredentials& credentials);

// Takes the next connection of `listener` (the API's unix socket: `local`;
// else the health and metrics listener), admits or refuses it within its
// budget (admission.cc), and hands it to HandleConnection on a thread.
void Accept(State& state, int listener, bool local);

// Keeps `fd`, its answer sent and its write side shut, for up to a second,
// reading and dropping at most `max_bytes` of what the client still sends,
// then closes it: so that the client reads the answer rather than a reset.
// Past 256 such connections at once, it is closed at once.
void LingerThenClose(int fd, std::size_t max_bytes);

// Connections whose handlers have not returned yet.
std::size_t ConnectionsBeingHandled();

// One admitted connection: to the API from `caller`, or to the health and
// metrics listener (nullptr); closes `fd`. The request, head and body, must
// come whole within a deadline of its listener's.
void HandleConnection(State& state, int fd, const Caller* caller);

// Adds each of `tally`'s counts (`pending` too) to `into`'s, stopping at
// the largest std::uint64_t rather than wrapping.
void AddTally(WorkerTally& into, const WorkerTally& tally);

// GET /metrics and /status.json, and the documents of the API's GETs; mu held.
std::string MetricsText(const State& state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.mu);
// mojoup.status/v1 with the sessions `caller` may see (nullptr: every
// session, without its repository, for the health listener).
std::string StatusDocument(const State& state, const Caller* caller)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.mu);
// The id of the required check that failed, "" when the host can sandbox.
std::string FailingCheck(const probe::Report& report);
std::string NodeDocument(const State& state, const Caller& caller)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.mu);
std::string SessionsDocument(const State& state, const Caller& caller)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.mu);

}  // namespace mojoup::service

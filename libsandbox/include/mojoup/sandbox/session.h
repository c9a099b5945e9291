// SessionManager: starts agent sessions in sandboxes and makes sure nothing
// of them outlives them, even when the process that started them is killed.
//
// Start() writes the session's record (owner pid and start time) first, then
// opens the session's audit (AuditPath) with its start line, stages the
// tool's sign-in files, starts the session's credential proxy on a unix
// socket, and has the backend build the sandbox. Session::Close()
// undoes all of it in reverse, writing refreshed sign-in files back to the
// host. Reap(), which `run`, `status` and `stop` call first, does the same
// for every session whose owner is gone, and removes labelled sandboxes that
// have no record at all.
//
//   SessionManager manager({.state_dir = dir, .backend = docker.get(),
//                           .supervisor = init_path});
//   manager.Reap();
//   auto session = manager.Start(std::move(spec));
//   int code = *(*session)->Run(Stdio{});
//   auto report = (*session)->Close();
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "mojoup/credproxy/approvals.h"
#include "mojoup/credproxy/audit.h"
#include "mojoup/credproxy/proxy.h"
#include "mojoup/policy/node_config.h"
#include "mojoup/sandbox/backend.h"
#include "mojoup/sandbox/signin.h"

namespace mojoup::sandbox {

struct SessionSpec {
  // The session's id: 16 lowercase hex digits, chosen by the caller (the
  // sandbox service names a session before it starts); empty: a new one.
  std::string id;
  std::string user;  // who runs it (checked against node.sandbox.allowed_users by the caller)
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;     // the user's home on the host; the sandbox's HOME is the same path
  std::string repo;     // absolute; mounted at its own path
  std::string workdir;  // where the command starts; empty: the repository
  std::string tool;     // "claude-code", ...; empty for none
  std::vector<std::string> command;
  std::map<std::string, std::string> environment;  // added to the sandbox's (TERM, ...)
  std::string image;
  bool tty = false;
  double cpus = 0;  // the CPUs the sandbox may use (node.sandbox.cpus); 0: no limit
  // Tells the user what the runtime decided (one sentence); may be empty.
  std::function<void(const std::string&)> notice;
  // The session's egress rules, credentials and pins. The manager fills in
  // the session name, socket, CA directory and audit.
  credproxy::ProxyOptions proxy;
  // The session's audit: its bound (node.audit.max_bytes) and a mirror
  // (`run --audit FILE`). The manager fills in the path (AuditPath) and the
  // session.
  credproxy::AuditOptions audit;
  // Set: the session asks (credproxy/approvals.h). The manager names the
  // approvals after the session, serves them on its control socket
  // (ControlSocketPath) and expires what is pending when the session ends.
  std::optional<credproxy::ApprovalsOptions> ask;
};

// What the state directory holds for a session (sessions/<id>.json).
struct SessionRecord {
  std::string id;
  std::string user;
  std::string repo;
  std::string tool;
  std::string runtime;  // the backend's name
  std::string sandbox;  // the backend's id, once created
  std::string state;  // "starting", "running", "stopping", "leftover" (owner gone, not all removed)
  std::string started_at;       // RFC 3339, UTC
  std::int64_t started_ns = 0;  // the same, in nanoseconds since the epoch
  int pid = 0;                  // the owning process
  std::uint64_t pid_start = 0;  // its start time (clock ticks since boot)
  std::string dir;              // the session's directory: home staging, proxy socket, CA
  bool repo_had_git = true;     // a .git the session creates is moved aside at the end
  std::string problem;          // for a leftover: what could not be removed, and the fix
  std::optional<SignInStaging> sign_in;
};

// What ending a session did beyond removing things.
struct CloseReport {
  WriteBackReport sign_in;
  std::vector<std::string> errors;   // one sentence each; removal still went as far as it could
  std::vector<std::string> notices;  // what was done to keep the host safe, one sentence each
};

struct ReapReport {
  std::vector<std::string> sessions;   // ids of dead owners' sessions cleaned up
  std::vector<std::string> sandboxes;  // unrecorded sandboxes removed
  std::vector<std::string> errors;
  std::vector<std::string> notices;
  std::vector<WriteBackReport> sign_in;
  std::vector<std::string> audits;  // ids of old sessions whose audit was removed
  // Why the backend could not be asked for its sandboxes (Docker down, say);
  // the probe's verdict says the same, so callers that print it need not.
  std::string unreachable;
};

// What a session's proxy decided and its approvals came to so far (the
// service's /metrics): counts that only rise, but for approvals.pending.
struct SessionTally {
  credproxy::AuditCounts egress;
  credproxy::Approvals::Counts approvals;
};

class SessionManager;
class SignInKeeper;  // private: writes a session's refreshed sign-in to the host
class RuntimeAsk;    // private: ask where the runtime's own proxy refuses at once

// A session this process owns. Close() (or the destructor) ends it.
class Session {
 public:
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const SessionRecord& record() const { return record_; }
  const std::map<std::string, std::string>& environment() const { return environment_; }

  // Runs the command to its end; its exit code (the session's end line in
  // the audit carries it).
  absl::StatusOr<int> Run(const Stdio& stdio);
  absl::Status Signal(int signal);
  absl::Status Resize(unsigned short rows, unsigned short columns);

  // The session's audit (AuditPath), for events of others who act on the
  // session (approvals); null once closed.
  const std::shared_ptr<credproxy::AuditLog>& audit() const { return audit_; }
  // The session's tally; from any thread, also while or after it closes
  // (then the final one).
  SessionTally Tally() const;

  // Removes the sandbox, stops the proxy, writes the sign-in's refreshed
  // tokens back (as the provider gave them to the proxy), removes the
  // staging and the record, then ends the audit: a notice for each thing
  // the report says and the session's end line. Safe to call twice.
  CloseReport Close();

 private:
  friend class SessionManager;
  Session(SessionManager& manager, SessionRecord record);

  SessionManager& manager_;
  SessionRecord record_;
  std::map<std::string, std::string> environment_;
  std::shared_ptr<SignInKeeper> keeper_;  // shared with the proxy's hooks
  std::shared_ptr<credproxy::Approvals> approvals_;  // when the session asks
  std::shared_ptr<RuntimeAsk> runtime_ask_;          // when its runtime refuses at once
  std::unique_ptr<credproxy::Proxy> proxy_;
  std::shared_ptr<credproxy::AuditLog> audit_;
  // The same log and approvals, kept for Tally: set before the session is
  // handed out and never changed after.
  std::shared_ptr<const credproxy::AuditLog> counted_;
  std::optional<int> exit_code_;
  bool closed_ = false;
};

struct SessionManagerOptions {
  std::string state_dir;
  Backend* backend = nullptr;  // not owned
  std::string supervisor;      // host path of mojoup-sandbox-init
  // Seams: the clock, session ids, a process's start time (nullopt: no such
  // process), environment lookups for the tools' relocation variables.
  std::function<std::chrono::system_clock::time_point()> now;
  std::function<std::string()> new_id;
  std::function<std::optional<std::uint64_t>(int pid)> process_start;
  Getenv getenv;
  // The user's home on the host, where sign-in files are found and written
  // back; default UserHome().
  std::string home;
  // What names this node on a gateway other nodes may share (the label
  // kNodeLabel of its sandboxes); default NodeId().
  std::string node_id;
  // How long Stop() gives the owner to end a session before removing it.
  std::chrono::milliseconds stop_grace{10000};
  // Which ended sessions' audits Reap() keeps: the newest audit_keep
  // (node.audit.keep), none older than audit_max_age (node.audit.max_age_days).
  std::size_t audit_keep = 200;
  std::chrono::hours audit_max_age{24 * 30};
};

// This machine, as 16 hex digits of the SHA-256 of /etc/machine-id (else
// of its host name): the same for every user of the node, and different on
// another machine even where the state directories' paths are alike.
std::string NodeId();

class SessionManager {
 public:
  explicit SessionManager(SessionManagerOptions options);

  absl::StatusOr<std::unique_ptr<Session>> Start(SessionSpec spec);

  // Ends a session from any process: asks its command to stop (SIGTERM),
  // removes the sandbox after stop_grace, and cleans up after an owner that
  // does not. NotFound for an unknown id.
  absl::StatusOr<CloseReport> Stop(const std::string& id);

  // The sessions on record, oldest first.
  absl::StatusOr<std::vector<SessionRecord>> List();

  ReapReport Reap();

  const SessionManagerOptions& options() const { return options_; }

 private:
  friend class Session;
  std::string RecordPath(const std::string& id) const;
  absl::Status WriteRecord(const SessionRecord& record);
  bool OwnerAlive(const SessionRecord& record) const;
  // Opens `session`'s audit, writes its start line and hands it to the
  // session's proxy (spec.proxy.audit).
  absl::Status StartAudit(SessionSpec& spec, Session& session);
  // The state directory is the user's alone (internal::CheckPrivateDir).
  absl::Status CheckStateDir() const;
  // Removes the sandbox, writes sign-in files back, deletes staging and record.
  // `keeper`: the session's own, when this process runs it (its refreshed
  // sign-in is written back once the sandbox is gone).
  CloseReport CleanUp(const SessionRecord& record, SignInKeeper* keeper = nullptr);

  SessionManagerOptions options_;
};

// Where the operator reaches a session's approvals (ask): its control socket,
// in the session's directory under the state directory.
std::string ControlSocketPath(const std::string& state_dir, const std::string& id);

// $MOJOUP_STATE_DIR when absolute; else /var/lib/mojoup for root, and
// $XDG_STATE_HOME/mojoup (default ~/.local/state/mojoup) for a user
// (docs/configuration.md, "Environment and config"). Private and persistent: never in a
// directory others can write, nor on a tmpfs that a reboot or a logout
// empties, since it holds which sessions ran on which repository.
std::string DefaultStateDir();

// Where session `id`'s audit is kept: <state_dir>/audit/<id>.jsonl.
std::string AuditPath(const std::string& state_dir, const std::string& id);

// The user's home: $HOME when absolute, else the password database's.
std::string UserHome();

// Where mojoup-sandbox-init is, beside `program` (bin/) or in
// ../libexec/mojoup/. Empty when neither has it.
std::string FindSupervisor(const std::string& program);

// --credential NAME[=HOST,...]: keeps $NAME's value (looked up with
// `getenv`) in `vault`, bound to the hosts given, else to the node config's
// node.sandbox.credential_hosts.NAME, else to the built-in binding. Errors
// name the credential and say what to do.
absl::Status AddCredential(const std::string& spec, const policy::NodeConfig& config,
                           const Getenv& getenv, credproxy::Vault& vault);

// "host:port" -> address pins from HOST:PORT:ADDR (the proxy's --resolve),
// HOST in policy::CanonicalHost's spelling.
absl::Status AddPin(const std::string& spec, std::map<std::string, std::string>& pins);

}  // namespace mojoup::sandbox

// The sandbox service: its state, its sessions' workers (started, waited
// on through their pidfds, re-adopted after a restart), its limits, drain
// and the main loop.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "fmt/format.h"
#include "mojoup/internal/atomic_file.h"
#include "mojoup/internal/bounded_json.h"
#include "mojoup/internal/file_lock.h"
#include "mojoup/internal/proc_start.h"
#include "mojoup/internal/rfc3339.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/internal/session_id.h"
#include "mojoup/internal/spawn.h"
#include "mojoup/internal/user_dirs.h"
#include "mojoup/policy/decision.h"
#include "server/service_state.h"

namespace mojoup {
namespace service {
namespace {

namespace fs = std::filesystem;

// What the password database says of `uid`.
struct Account {
  std::string name, home;
  gid_t gid = 0;
};

std::optional<Account> AccountOf(uid_t uid) {
  passwd entry{};
  passwd* found = nullptr;
  char buffer[4096];
  if (::getpwuid_r(uid, &entry, buffer, sizeof buffer, &found) != 0 || found == nullptr) {
    return std::nullopt;
  }
  return Account{found->pw_name, found->pw_dir, found->pw_gid};
}

}  // namespace

int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

absl::StatusOr<WorkerIdentity> IdentityFor(const State& state, const Caller& caller) {
  WorkerIdentity id;
  id.uid = caller.uid;
  id.gid = caller.gid;
  id.change = state.service_uid == 0 && caller.uid != 0;
  if (!id.change) {
    for (char** env = environ; *env != nullptr; ++env) id.environment.emplace_back(*env);
  } else {
    std::optional<Account> account = AccountOf(caller.uid);
    if (!account) {
      return absl::FailedPreconditionError(
          fmt::format("uid {} has no entry in the password database", caller.uid));
    }
    id.gid = account->gid;
    int count = 64;
    id.groups.resize(static_cast<std::size_t>(count));
    if (::getgrouplist(account->name.c_str(), account->gid, id.groups.data(), &count) < 0) {
      id.groups.resize(static_cast<std::size_t>(count));
      ::getgrouplist(account->name.c_str(), account->gid, id.groups.data(), &count);
    }
    id.groups.resize(static_cast<std::size_t>(std::max(count, 0)));
    // The user's own basic environment, as a login gives it: their state
    // directory and config defaults follow from HOME.
    id.environment = {"HOME=" + account->home, "USER=" + account->name, "LOGNAME=" + account->name,
                      "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"};
  }
  // The service's config, whatever the caller's own default would be.
  if (!state.options.config_path.empty()) {
    std::erase_if(id.environment,
                  [](const std::string& e) { return e.rfind("MOJOUP_NODE_CONFIG=", 0) == 0; });
    id.environment.push_back("MOJOUP_NODE_CONFIG=" + state.options.config_path);
  }
  return id;
}

void Histogram::Observe(double value) {
  if (counts.empty()) counts.assign(bounds.size() + 1, 0);
  std::size_t i = 0;
  while (i < bounds.size() && value > bounds[i]) ++i;
  ++counts[i];
  sum += value;
}

State::State(ServiceOptions opts) : options(std::move(opts)) {
  service_uid = ::geteuid();
  service_user = policy::UserName(service_uid);
}

void State::Wake() const {
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t wrote = ::write(wake_fd, &one, sizeof one);
}

void State::Log(std::string_view line) const {
  if (options.log) options.log(line);
}

std::optional<std::string> State::Refuse(const Caller& caller) {
  if (service_uid != 0) {
    if (caller.uid == service_uid) return std::nullopt;
    return fmt::format(
        "this is {}'s own sandbox service and serves only {}; ask the node's operator for the "
        "system service",
        service_user, service_user);
  }
  absl::MutexLock lock(&mu);
  if (caller.uid == 0 || policy::UserAllowed(config, caller.user)) return std::nullopt;
  return fmt::format(
      "you ({}) may not run agents in this node's sandboxes (node.sandbox.allowed_users)",
      caller.user);
}

bool State::Owns(const Caller& caller, const ServiceSession& session) const {
  return caller.uid == 0 || caller.uid == session.uid;
}

void State::Drain(std::string_view why) {
  absl::MutexLock lock(&mu);
  if (draining) {
    stop_now = true;  // asked twice: stop the sessions without waiting
    Log(fmt::format("{} again: stopping {} session(s) now", why, sessions.size()));
  } else {
    draining = true;
    drain_deadline = Now() + policy::ServiceDrainTimeout(config);
    Log(fmt::format("{}: draining; {} session(s) have {} s to finish", why, sessions.size(),
                    policy::ServiceDrainTimeout(config).count()));
    if (options.notify) options.notify("STOPPING=1");
  }
  Wake();
}

absl::StatusOr<PeerCredentials> State::PeerOf(int fd) const {
  if (options.peer_credentials) return options.peer_credentials(fd);
  ucred credentials{};
  socklen_t size = sizeof credentials;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) {
    return absl::PermissionDeniedError("the caller's identity cannot be read");
  }
  return PeerCredentials{credentials.pid, credentials.uid, credentials.gid};
}

void State::Refused(Reason reason) { ++metrics.refusals[std::string(ReasonName(reason))]; }

void State::ConnectionRefused(const std::string& listener, Reason reason) {
  absl::MutexLock lock(&mu);
  ++metrics.connection_refusals[{listener, std::string(ReasonName(reason))}];
}

std::string State::SessionStateDir(const Caller& caller) const {
  // The user's own service keeps its sessions beside its socket; the system
  // service's sessions are their users', in each one's home.
  std::string dir = fs::path(socket_path).parent_path().string();
  if (service_uid == 0 && caller.uid != 0) {
    if (std::optional<Account> account = AccountOf(caller.uid)) {
      dir = account->home + "/.local/state/mojoup";
    }
  }
  // The nearest directory that exists is on the filesystem it will be on.
  std::error_code ec;
  fs::path path = dir;
  while (!fs::exists(path, ec) && path.has_parent_path() && path != path.parent_path()) {
    path = path.parent_path();
  }
  return path.string();
}

std::string State::WorkerStateDir(uid_t uid) const {
  if (service_uid == 0 && uid != 0) {
    std::optional<Account> account = AccountOf(uid);
    return account ? account->home + "/.local/state/mojoup" : "";
  }
  return internal::DefaultStateDir();
}

std::optional<std::pair<Reason, std::string>> State::Limit(const Caller& caller) {
  if (draining) {
    return std::pair{Reason::kDraining,
                     std::string("this node is draining and admits no new sessions")};
  }
  if (!report.verdict.can_sandbox) {
    return std::pair{Reason::kCannotSandbox, report.verdict.Line()};
  }
  const int most = policy::ServiceMaxSessions(config);
  if (static_cast<int>(sessions.size()) >= most) {
    return std::pair{Reason::kMaxSessions,
                     fmt::format("this node already runs its most sessions at once ({}, "
                                 "node.service.max_sessions); try again when one ends",
                                 most)};
  }
  const int per_user = policy::ServiceMaxSessionsPerUser(config);
  int mine = 0;
  for (const auto& [id, slot] : sessions) mine += slot.info.uid == caller.uid ? 1 : 0;
  if (mine >= per_user) {
    return std::pair{Reason::kMaxSessionsPerUser,
                     fmt::format("you already run your most sessions at once on this node ({}, "
                                 "node.service.max_sessions_per_user); stop one first",
                                 per_user)};
  }
  const long long floor_mb = policy::ServiceMinFreeDiskMb(config);
  for (const auto& [path, what] : {std::pair{SessionStateDir(caller), "the sessions' state"},
                                   {std::string("/var/lib/docker"), "Docker's"}}) {
    struct statvfs fs {};
    if (::statvfs(path.c_str(), &fs) != 0) continue;
    const long long free_mb =
        static_cast<long long>(fs.f_bavail) * static_cast<long long>(fs.f_frsize) / (1 << 20);
    if (free_mb < floor_mb) {
      return std::pair{Reason::kDisk,
                       fmt::format("only {} MiB are free on {} ({} filesystem), below the {} MiB "
                                   "floor (node.service.min_free_disk_mb); free some space",
                                   free_mb, path, what, floor_mb)};
    }
  }
  return std::nullopt;
}

namespace {

// The default launcher: this very program when none is named, through
// /proc/self/exe, which still runs it when an upgrade replaced its file (a
// worker is then the service's version).
absl::StatusOr<pid_t> SpawnWorker(const WorkerLaunch& launch, const std::string& program) {
  const bool self = program.empty();
  internal::SpawnOptions options;
  options.argv = {self ? std::string("mojoup-node") : program, launch.command};
  options.program = self ? std::string("/proc/self/exe") : program;
  options.environment = launch.identity.environment;
  // Its own session: the service's terminal and process group are not its.
  options.group = internal::SpawnOptions::Group::kSession;
  if (const WorkerIdentity& id = launch.identity; id.change) {
    options.credentials = internal::Credentials{id.uid, id.gid, id.groups};
  }
  if (launch.control >= 0) {
    options.keep.emplace_back(launch.control, 3);
    if (launch.listener >= 0) options.keep.emplace_back(launch.listener, 4);
  }
  auto child = internal::Spawn(options);
  if (!child.ok()) return child.status();
  // The service's loop waits for it, through its pidfd, and reaps it.
  return child->Release();
}

}  // namespace

pid_t LaunchWorker(const State& state, WorkerIdentity id, const char* command, int control,
                   int listener) {
  const WorkerLaunch launch{command, std::move(id), control, listener};
  absl::StatusOr<pid_t> pid = state.options.launch_worker
                                  ? state.options.launch_worker(launch)
                                  : SpawnWorker(launch, state.options.worker_program);
  if (pid.ok()) return *pid;
  state.Log(
      fmt::format("cannot start a worker ({}): {}", command, std::string(pid.status().message())));
  return -1;
}

absl::StatusOr<std::string> AskWorker(const State& state, const std::string& id,
                                      const std::string& op, int pass) {
  auto connection = ConnectPacket(state.workers_dir + "/" + id + ".sock");
  if (!connection.ok()) return connection.status();
  internal::Fd owned(*connection);
  if (absl::Status sent = SendPacket(owned.get(), op, pass); !sent.ok()) return sent;
  return ReceivePacket(owned.get(), std::chrono::seconds(5));
}

namespace {

// The worker's first answer, as an HTTP status and body.
std::pair<int, std::string> StartAnswerFor(State& state, const std::string& id,
                                           const std::string& packet, internal::Fd& control) {
  auto worker = ParseWorkerAnswer(packet);
  if (!worker.ok()) {
    return {500, ErrorJson("the session's worker gave no answer it should", Reason::kWorker)};
  }
  const StartStatus status = worker->status;
  StartAnswer answer;
  answer.answered = status == StartStatus::kStarted || status == StartStatus::kUnsandboxed;
  answer.id = status == StartStatus::kStarted ? id : "";
  answer.unsandboxed = status == StartStatus::kUnsandboxed;
  answer.terminal = worker->terminal;
  answer.error = answer.answered ? "" : worker->message;
  answer.reason = status == StartStatus::kInvalid   ? Reason::kInvalid
                  : status == StartStatus::kRefused ? Reason::kRefused
                                                    : Reason::kNone;
  answer.notices = std::move(worker->notices);
  const std::string body = StartAnswerJson(answer);
  absl::MutexLock lock(&state.mu);
  if (status == StartStatus::kStarted) {
    auto slot = state.sessions.find(id);
    if (slot != state.sessions.end()) {
      slot->second.info.state = "running";
      // The worker's tallies and its exit come on its control socket.
      slot->second.watch = control.Release();
      state.Wake();
      state.metrics.start_seconds.Observe(
          std::chrono::duration<double>(state.Now() - slot->second.started).count());
    }
    ++state.metrics.started;
    return {201, body};
  }
  if (status == StartStatus::kUnsandboxed) return {200, body};
  state.Refused(answer.reason);
  return {status == StartStatus::kInvalid ? 400 : 409, body};
}

}  // namespace

std::pair<int, std::string> StartSession(State& state, const Caller& caller,
                                         const std::string& body) {
  auto parsed = ParseStartRequest(body, true);
  if (!parsed.ok()) {
    absl::MutexLock lock(&state.mu);
    state.Refused(Reason::kInvalid);
    if (parsed.status().code() == absl::StatusCode::kResourceExhausted) {
      return {413, ErrorJson(std::string(parsed.status().message()), Reason::kTooLarge)};
    }
    return {400, ErrorJson(std::string(parsed.status().message()), Reason::kInvalid)};
  }
  WorkerStart start = *std::move(parsed);
  auto identity = IdentityFor(state, caller);
  if (!identity.ok())
    return {403, ErrorJson(std::string(identity.status().message()), Reason::kIdentity)};
  const std::string id = internal::RandomHex();
  start.request.session_id = id;
  SessionSlot slot;
  {
    absl::MutexLock lock(&state.mu);
    if (auto limit = state.Limit(caller)) {
      state.Refused(limit->first);
      return {
          limit->first == Reason::kDraining || limit->first == Reason::kCannotSandbox ? 503 : 429,
          ErrorJson(limit->second, limit->first)};
    }
    start.config_path = state.options.config_path;
    start.config_named = state.options.config_named;
    slot.info.id = id;
    slot.info.user = caller.user;
    slot.info.uid = caller.uid;
    slot.info.repo = start.request.workdir;
    slot.info.tool = start.request.tool;
    slot.info.runtime = policy::SandboxRuntime(state.config);
    slot.info.state = "starting";
    slot.info.started_at = internal::Rfc3339(std::chrono::system_clock::now());
    slot.info.terminal = start.request.terminal;
    slot.info.detached = start.options.detach;
    slot.started = state.Now();
    slot.child = true;
    state.sessions[id] = slot;  // holds its place under the limits while it starts
  }
  auto forget = [&state, &id](int code, std::string answer) {
    absl::MutexLock lock(&state.mu);
    state.sessions.erase(id);
    return std::pair{code, std::move(answer)};
  };
  auto listener = ListenUnix(state.workers_dir + "/" + id + ".sock", SOCK_SEQPACKET, 0600);
  int pair[2];
  if (!listener.ok() || ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    if (listener.ok()) ::close(*listener);
    return forget(500, ErrorJson("cannot make the session's sockets", Reason::kInternal));
  }
  const pid_t pid =
      LaunchWorker(state, *std::move(identity), "__session-worker", pair[1], *listener);
  ::close(pair[1]);
  ::close(*listener);
  internal::Fd control(pair[0]);
  if (pid < 0)
    return forget(500, ErrorJson("cannot start the session's worker", Reason::kInternal));
  const int pidfd = PidfdOpen(pid);
  WorkerEntry entry;
  entry.id = id;
  entry.uid = caller.uid;
  entry.user = caller.user;
  entry.pid = pid;
  entry.pid_start = internal::ProcStartTime(pid).value_or(0);
  entry.repo = slot.info.repo;
  entry.tool = slot.info.tool;
  entry.started_at = slot.info.started_at;
  entry.terminal = slot.info.terminal;
  entry.detached = slot.info.detached;
  internal::ReplaceAtomically(state.workers_dir + "/" + id + ".json", WorkerEntryJson(entry), 0600)
      .IgnoreError();
  {
    absl::MutexLock lock(&state.mu);
    SessionSlot& held = state.sessions[id];
    held.entry = entry;
    held.pidfd = pidfd;
  }
  state.Wake();  // the main loop waits on the new pidfd
  SendPacket(control.get(), WorkerStartJson(start)).IgnoreError();
  // Starting can take minutes (an image to check, a sandbox to build).
  auto answer = ReceivePacket(control.get(), std::chrono::minutes(5));
  if (!answer.ok()) {
    ::kill(pid, SIGKILL);
    return {500, ErrorJson("the session's worker did not say how its start went", Reason::kWorker)};
  }
  return StartAnswerFor(state, id, *answer, control);
}

}  // namespace service
}  // namespace mojoup

// The sandbox service's main loop and what it waits on: connections, its
// workers' pidfds, signals, the prober, drain; and RunService, which sets it
// all up, re-adopting the workers a killed service left.
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/time/time.h"
#include "fmt/format.h"
#include "mojoup/internal/bounded_json.h"
#include "mojoup/internal/file_checks.h"
#include "mojoup/internal/file_lock.h"
#include "mojoup/internal/host_port.h"
#include "mojoup/internal/proc_start.h"
#include "mojoup/internal/rfc3339.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/internal/session_id.h"
#include "mojoup/sandbox/agent_image.h"
#include "mojoup/sandbox/node.h"
#include "mojoup/sandbox/session.h"
#include "server/service_state.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace mojoup {
namespace service {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kKeepEnded = 100;

// Runs `program __session-reap` as `uid` (when the service is root): the
// user's own node cleans up after its sessions whose worker is gone.
void ReapAs(State& state, uid_t uid, Node* own) {
  if (uid == state.service_uid) {
    if (own == nullptr) return;
    auto reaped = own->Reap();
    if (!reaped.ok()) return;
    absl::MutexLock lock(&state.mu);
    state.metrics.reaped += reaped->sessions.size() + reaped->sandboxes.size();
    for (const std::string& id : reaped->sessions) {
      state.Log(fmt::format("session {}: its worker was gone; cleaned up", id));
    }
    return;
  }
  Caller caller;
  caller.uid = uid;
  caller.user = policy::UserName(uid);
  auto identity = IdentityFor(state, caller);
  if (!identity.ok()) return;
  const pid_t pid = LaunchWorker(state, *std::move(identity), "__session-reap");
  if (pid <= 0) return;
  {
    absl::MutexLock lock(&state.mu);
    state.helpers.insert(pid);
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  absl::MutexLock lock(&state.mu);
  state.helpers.erase(pid);
  if (WIFEXITED(status)) state.metrics.reaped += static_cast<std::uint64_t>(WEXITSTATUS(status));
}

// The doctor on `node`, its verdict and image kept; the verdict's line told
// when it is not `last_line`.
void ProbeNow(State& state, Node& node, std::string& last_line) {
  probe::Report report = node.Doctor();
  absl::StatusOr<sandbox::AgentImage> image = node.Image(&report);
  const std::string line = report.verdict.Line();
  {
    absl::MutexLock lock(&state.mu);
    state.report = std::move(report);
    state.image = std::move(image);
  }
  if (line == last_line) return;
  last_line = line;
  state.Log(line);
  if (state.options.notify) state.options.notify("STATUS=" + line);
}

// Whether the prober has work before its interval is up; mu held. The
// service's threads change these under mu, and Mutex::AwaitWithTimeout
// evaluates this again whenever mu is released.
bool ProberWanted(State* state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu) {
  return state->probe_now || state->quitting || !state->reap_for.empty();
}

// The prober's thread: the doctor at every reprobe interval and on SIGHUP
// (which rereads the config first), and the cleaning up of dead sessions.
// `node` is the service's, already probed once.
void Prober(State& state, std::optional<Node> node, std::string last_line) {
  for (;;) {
    std::set<uid_t> reap;
    bool due = false;
    {
      absl::MutexLock lock(&state.mu);
      const bool woken = state.mu.AwaitWithTimeout(absl::Condition(&ProberWanted, &state),
                                                   absl::FromChrono(state.options.reprobe));
      if (state.quitting) return;
      // Woken only to clean up: no probe for that.
      due = !woken || state.probe_now;
      if (state.reload) node.reset();
      state.reload = false;
      state.probe_now = false;
      reap.swap(state.reap_for);
    }
    if (!node) {
      NodeOptions options;
      options.config_path = state.options.config_path;
      options.config_named = state.options.config_named;
      auto opened = Node::Open(std::move(options));
      if (!opened.ok()) {
        state.Log(
            fmt::format("cannot reread the config: {}", std::string(opened.status().message())));
        continue;
      }
      node.emplace(*std::move(opened));
      absl::MutexLock lock(&state.mu);
      state.config = node->config();
    }
    if (due) ProbeNow(state, *node, last_line);
    for (uid_t uid : reap) ReapAs(state, uid, &*node);
  }
}

// Whether no count of `now` is below `was`'s (`pending` aside).
bool NoneWentDown(const WorkerTally& was, const WorkerTally& now) {
  const EgressTally &a = was.egress, &b = now.egress;
  const ApprovalTally &c = was.approvals, &d = now.approvals;
  return b.allowed >= a.allowed && b.denied >= a.denied && b.asked >= a.asked &&
         b.error >= a.error && d.approved >= c.approved && d.denied >= c.denied &&
         d.expired >= c.expired;
}

// A packet of the worker of `id`, on its own connection: so a tally is of
// that session alone. One whose counts went down is not taken (said once).
void Heard(State& state, const std::string& id, SessionSlot& slot, const std::string& packet)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.mu) {
  if (auto tally = ParseWorkerTally(packet); tally.ok()) {
    if (NoneWentDown(slot.tally, *tally)) {
      slot.tally = *tally;
      return;
    }
    if (!slot.tally_refused) {
      state.Log(
          fmt::format("session {}: its worker's counts went down; keeping the last ones", id));
    }
    slot.tally_refused = true;
  } else if (std::optional<int> exit = ParseWorkerExit(packet)) {
    slot.exit_code = exit;
  } else if (packet.find("mojoup.service.tally/v1") != std::string::npos && !slot.tally_refused) {
    state.Log(fmt::format("session {}: {}", id, std::string(tally.status().message())));
    slot.tally_refused = true;
  }
}

// What a worker sends the service, in one wake: a tally every 250 ms at
// most, its exit. A worker past that budget is not read for a while.
constexpr int kWatchBudget = 16;
constexpr auto kWatchQuiet = std::chrono::seconds(1);
// What is read of a worker that ended: its last tallies and its exit.
constexpr int kLastWords = 64;

// What was read of a worker's connection.
struct WatchRead {
  std::vector<std::string> packets;
  bool closed = false;  // the worker closed it (or it failed)
  bool full = false;    // the budget was used up
};

// Reads at most `most` packets of a worker's connection `fd` without
// waiting, outside state.mu: only the main loop closes a session's watch,
// and it is the main loop that reads.
WatchRead ReadWatch(int fd, int most) {
  WatchRead read;
  if (fd < 0) return read;
  for (int i = 0; i < most; ++i) {
    auto packet = ReceiveWorkerPacket(fd);
    if (absl::IsDeadlineExceeded(packet.status())) return read;
    if (absl::IsInvalidArgument(packet.status())) continue;  // over kMaxWorkerPacket
    if (!packet.ok()) {
      read.closed = true;
      return read;
    }
    read.packets.push_back(*std::move(packet));
  }
  read.full = true;
  return read;
}

// Takes in what was read of the watch of `id`: its packets, the watch
// closed once the worker did, quieted when it used up its budget.
void TakeWatch(State& state, const std::string& id, SessionSlot& slot, const WatchRead& read)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.mu) {
  for (const std::string& packet : read.packets) Heard(state, id, slot, packet);
  if (read.closed && slot.watch >= 0) {
    ::close(slot.watch);
    slot.watch = -1;
  }
  if (!read.full) return;
  slot.watch_quiet_until = std::chrono::steady_clock::now() + kWatchQuiet;
  if (!slot.watch_flooded) {
    state.Log(
        fmt::format("session {}: its worker sends more than {} packets at once; reading "
                    "it at most once a second",
                    id, kWatchBudget));
  }
  slot.watch_flooded = true;
}

// The watch of `id`, -1 when it has none.
int WatchOf(State& state, const std::string& id) {
  absl::MutexLock lock(&state.mu);
  auto found = state.sessions.find(id);
  return found == state.sessions.end() ? -1 : found->second.watch;
}

// The worker of `id` sent something.
void Watched(State& state, const std::string& id) {
  const int fd = WatchOf(state, id);
  const WatchRead read = ReadWatch(fd, kWatchBudget);
  absl::MutexLock lock(&state.mu);
  auto found = state.sessions.find(id);
  if (found != state.sessions.end() && found->second.watch == fd) {
    TakeWatch(state, id, found->second, read);
  }
}

// A worker ended: its exit code, the metrics, its files.
void Ended(State& state, const std::string& id) {
  // What the worker said last: its final tally, an adopted one's exit.
  const int fd = WatchOf(state, id);
  const WatchRead last = ReadWatch(fd, kLastWords);
  absl::MutexLock lock(&state.mu);
  auto found = state.sessions.find(id);
  if (found == state.sessions.end()) return;
  SessionSlot& slot = found->second;
  std::optional<int> code;
  bool lost = false;
  if (slot.child) {
    siginfo_t info{};
    if (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(slot.pidfd), &info,
                 WEXITED | WNOHANG) == 0 &&
        info.si_pid != 0) {
      if (info.si_code == CLD_EXITED) {
        code = info.si_status;
      } else {
        lost = true;  // the worker itself was killed
      }
    }
  }
  if (slot.watch == fd) TakeWatch(state, id, slot, last);
  if (!slot.child) code = slot.exit_code;
  lost = lost || !code.has_value();
  if (slot.pidfd >= 0) ::close(slot.pidfd);
  if (slot.watch >= 0) ::close(slot.watch);
  AddTally(state.metrics.ended_tally, slot.tally);
  const double seconds = std::chrono::duration<double>(state.Now() - slot.started).count();
  const bool started = slot.info.state != "starting";
  if (started) state.metrics.duration_seconds.Observe(seconds);
  const std::string outcome = lost         ? "lost"
                              : !started   ? "not_started"
                              : *code == 0 ? "success"
                                           : "failure";
  ++state.metrics.ended[outcome];
  if (lost) {
    state.reap_for.insert(slot.info.uid);  // wakes the prober
    state.Log(
        fmt::format("session {} ({}): its worker died; cleaning up after it", id, slot.info.user));
  }
  ServiceSession info = slot.info;
  info.state = "ended";
  info.exit_code = code;
  state.ended.push_back(info);
  while (state.ended.size() > kKeepEnded) state.ended.pop_front();
  ::unlink((state.workers_dir + "/" + id + ".json").c_str());
  ::unlink((state.workers_dir + "/" + id + ".sock").c_str());
  state.sessions.erase(found);
}

// Zombies that are not ours to wait for: processes orphaned below the
// service (a subreaper) are reaped here, by pid. A child a thread of ours
// waits for itself (a probe's command) is a zombie only for a moment, so
// only one seen dead for 5 s is taken.
void ReapOrphans(State& state, std::map<pid_t, std::chrono::steady_clock::time_point>& seen) {
  std::set<pid_t> ours;
  {
    absl::MutexLock lock(&state.mu);
    for (const auto& [id, slot] : state.sessions) ours.insert(slot.entry.pid);
    ours.insert(state.helpers.begin(), state.helpers.end());
  }
  std::set<pid_t> zombies;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator("/proc/self/task", ec)) {
    std::ifstream children(task.path() / "children");
    for (pid_t pid; children >> pid;) {
      if (ours.count(pid) > 0) continue;
      std::ifstream stat(fmt::format("/proc/{}/stat", pid));
      std::string line;
      std::getline(stat, line);
      const std::size_t close = line.rfind(')');
      if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') {
        zombies.insert(pid);
      }
    }
  }
  const auto now = std::chrono::steady_clock::now();
  for (auto it = seen.begin(); it != seen.end();) {
    it = zombies.count(it->first) == 0 ? seen.erase(it) : std::next(it);
  }
  for (pid_t pid : zombies) {
    auto [at, fresh] = seen.emplace(pid, now);
    if (!fresh && now - at->second > std::chrono::seconds(5)) {
      ::waitpid(pid, nullptr, WNOHANG);
      seen.erase(at);
    }
  }
}

// Drain's end game: past the deadline (or asked twice), each session is
// stopped as `stop` does it; true when the service may exit.
bool DrainStep(State& state, int& exit_code) {
  std::vector<std::string> to_stop;
  {
    absl::MutexLock lock(&state.mu);
    if (!state.draining) return false;
    if (state.sessions.empty()) return true;
    const auto now = state.Now();
    if (state.drain_deadline && now > *state.drain_deadline + std::chrono::minutes(2)) {
      state.Log(
          fmt::format("{} session(s) did not end in time; leaving them", state.sessions.size()));
      exit_code = 1;
      return true;
    }
    if (!state.stop_now && (!state.drain_deadline || now < *state.drain_deadline)) return false;
    for (auto& [id, slot] : state.sessions) {
      if (!slot.stop_sent && slot.info.state != "starting") {
        slot.stop_sent = true;
        slot.info.state = "stopping";
        to_stop.push_back(id);
      }
    }
  }
  for (const std::string& id : to_stop) {
    std::thread([&state, id] {
      AskWorker(state, id, WorkerOpJson({.op = "stop"})).IgnoreError();
    }).detach();
  }
  return false;
}

int Loop(State& state, int api, int metrics, int signals) {
  std::map<pid_t, std::chrono::steady_clock::time_point> zombies;
  int exit_code = 0;
  for (;;) {
    if (DrainStep(state, exit_code)) break;
    std::vector<pollfd> fds = {
        {api, POLLIN, 0}, {metrics, POLLIN, 0}, {signals, POLLIN, 0}, {state.wake_fd, POLLIN, 0}};
    std::vector<std::pair<std::string, bool>> ids;  // the session, and whether its watch
    {
      const auto now = std::chrono::steady_clock::now();
      absl::MutexLock lock(&state.mu);
      for (const auto& [id, slot] : state.sessions) {
        if (slot.pidfd >= 0) {
          fds.push_back({slot.pidfd, POLLIN, 0});
          ids.emplace_back(id, false);
        }
        if (slot.watch >= 0 && slot.watch_quiet_until <= now) {
          fds.push_back({slot.watch, POLLIN, 0});
          ids.emplace_back(id, true);
        }
      }
    }
    if (::poll(fds.data(), fds.size(), 500) < 0 && errno != EINTR) return 1;
    if ((fds[0].revents & POLLIN) != 0) Accept(state, api, true);
    if (metrics >= 0 && (fds[1].revents & POLLIN) != 0) Accept(state, metrics, false);
    bool child_ended = false;
    if ((fds[2].revents & POLLIN) != 0) {
      signalfd_siginfo info{};
      while (::read(signals, &info, sizeof info) == sizeof info) {
        if (info.ssi_signo == SIGCHLD) child_ended = true;
        if (info.ssi_signo == SIGTERM || info.ssi_signo == SIGINT) {
          state.Drain(info.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
        } else if (info.ssi_signo == SIGHUP) {
          absl::MutexLock lock(&state.mu);
          state.reload = state.probe_now = true;  // wakes the prober
          state.Log("SIGHUP: rereading the config and probing again");
        }
      }
    }
    if ((fds[3].revents & POLLIN) != 0) {
      std::uint64_t count = 0;
      [[maybe_unused]] ssize_t got = ::read(state.wake_fd, &count, sizeof count);
    }
    for (std::size_t i = 4; i < fds.size(); ++i) {
      const auto& [id, watch] = ids[i - 4];
      if (watch && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) Watched(state, id);
      if (!watch && (fds[i].revents & (POLLIN | POLLHUP)) != 0) Ended(state, id);
    }
    // /proc is read only when a child ended, or a zombie is waited out.
    if (child_ended || !zombies.empty()) ReapOrphans(state, zombies);
  }
  return exit_code;
}

// The workers a killed service left: the live ones are taken back, the
// rest cleaned up after.
void Adopt(State& state) {
  std::error_code ec;
  for (const auto& file : fs::directory_iterator(state.workers_dir, ec)) {
    const std::string name = file.path().filename().string();
    if (name.size() != 21 || name.substr(16) != ".json" ||
        !internal::IsRandomHex(name.substr(0, 16))) {
      continue;
    }
    const std::string id = name.substr(0, 16);
    auto read = internal::ReadRegularFile(file.path().string(), 64 << 10);
    auto entry =
        read.ok() ? ParseWorkerEntry(read->bytes) : absl::StatusOr<WorkerEntry>(read.status());
    const bool alive = entry.ok() && entry->id == id && entry->pid_start != 0 &&
                       internal::ProcStartTime(entry->pid) == entry->pid_start;
    auto info =
        alive ? AskWorker(state, id, WorkerOpJson({.op = "info"})) : absl::StatusOr<std::string>();
    const std::optional<WorkerInfo> worker =
        alive && info.ok() ? ParseWorkerInfo(*info) : std::nullopt;
    if (!worker) {
      if (entry.ok()) {
        absl::MutexLock lock(&state.mu);
        state.reap_for.insert(entry->uid);
      }
      ::unlink(file.path().c_str());
      ::unlink((state.workers_dir + "/" + id + ".sock").c_str());
      state.Log(fmt::format("session {}: its worker is gone; cleaning up after it", id));
      continue;
    }
    SessionSlot slot;
    slot.entry = *entry;
    slot.info = {id,
                 entry->user,
                 entry->uid,
                 entry->repo,
                 entry->tool,
                 worker->runtime,
                 worker->state,
                 entry->started_at,
                 entry->terminal,
                 entry->detached,
                 std::nullopt};
    slot.started = state.Now();
    slot.pidfd = PidfdOpen(entry->pid);
    if (auto watch = ConnectPacket(state.workers_dir + "/" + id + ".sock"); watch.ok()) {
      slot.watch = *watch;
      SendPacket(slot.watch, WorkerOpJson({.op = "watch"})).IgnoreError();
    }
    {
      absl::MutexLock lock(&state.mu);
      state.sessions[id] = std::move(slot);
    }
    state.Log(fmt::format("session {} ({}): taken back after a restart", id, entry->user));
  }
}

absl::StatusOr<int> ListenMetrics(const std::string& listen) {
  auto parsed = internal::SplitHostPort(listen, 0);
  if (!parsed || parsed->port == 0) {
    return absl::InvalidArgumentError(
        fmt::format("node.service.metrics_listen {}: expected a loopback HOST:PORT", listen));
  }
  const bool six = parsed->host == "::1" || parsed->host == "[::1]";
  const int fd = ::socket(six ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int bound = -1;
  if (six) {
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_port = htons(static_cast<std::uint16_t>(parsed->port));
    address.sin6_addr = in6addr_loopback;
    bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  } else {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(parsed->port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  }
  if (bound != 0 || ::listen(fd, SOMAXCONN) != 0) {
    const int error = errno;
    ::close(fd);
    return absl::FailedPreconditionError(
        fmt::format("node.service.metrics_listen {}: {}", listen, std::strerror(error)));
  }
  return fd;
}

// The service's directories: the socket's, which must be the service
// user's and not writable by anyone else, and its workers' (private).
absl::Status PrepareDirectories(State& state) {
  const std::string dir = fs::path(state.socket_path).parent_path().string();
  if (state.service_uid == 0 && dir == "/run/mojoup") ::mkdir(dir.c_str(), 0755);
  // A missing directory is made private; one that exists is only checked.
  if (state.service_uid != 0 && ::mkdir(dir.c_str(), 0700) != 0 && errno == ENOENT) {
    std::error_code ec;
    fs::create_directories(fs::path(dir).parent_path(), ec);
    ::mkdir(dir.c_str(), 0700);
  }
  struct stat info {};
  if (::lstat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) ||
      info.st_uid != state.service_uid || (info.st_mode & 022) != 0) {
    return absl::FailedPreconditionError(fmt::format(
        "{}: the service's socket directory must be a directory of {}'s that nobody else can "
        "write to",
        dir, state.service_user));
  }
  state.workers_dir = dir + "/node-workers";
  ::mkdir(state.workers_dir.c_str(), 0700);
  return internal::CheckPrivateDir(state.workers_dir, "the service's workers directory");
}

}  // namespace
}  // namespace service

int RunService(ServiceOptions options) {
  using namespace service;
  if (options.socket.empty()) options.socket = DefaultServiceSocket();
  State state(std::move(options));
  state.socket_path = state.options.socket;
  NodeOptions node_options;
  node_options.config_path = state.options.config_path;
  node_options.config_named = state.options.config_named;
  auto node = Node::Open(std::move(node_options));
  if (!node.ok()) {
    state.Log(std::string(node.status().message()));
    return absl::IsInvalidArgument(node.status()) ? 2 : 1;
  }
  std::optional<std::string> metrics_listen;
  {
    absl::MutexLock guard(&state.mu);
    state.config = node->config();
    metrics_listen = state.config.Get("node.service.metrics_listen");
  }
  if (absl::Status dirs = PrepareDirectories(state); !dirs.ok()) {
    state.Log(std::string(dirs.message()));
    return 1;
  }
  auto lock = internal::LockFile(state.workers_dir + "/service.lock", std::chrono::milliseconds(0));
  if (!lock.ok()) {
    state.Log(fmt::format("another service already serves {}", state.socket_path));
    return 1;
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  internal::Fd signal_fd(::signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK));
  internal::Fd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  state.wake_fd = wake.get();

  state.Log(fmt::format("probing this host ({})", state.service_user));
  std::string verdict_line;
  ProbeNow(state, *node, verdict_line);
  Adopt(state);
  auto api = ListenUnix(state.socket_path, SOCK_STREAM | SOCK_NONBLOCK,
                        state.service_uid == 0 ? 0666 : 0600);
  if (!api.ok()) {
    state.Log(std::string(api.status().message()));
    return 1;
  }
  internal::Fd api_fd(*api);
  internal::Fd metrics_fd;
  if (metrics_listen) {
    auto metrics = ListenMetrics(*metrics_listen);
    if (!metrics.ok()) {
      state.Log(std::string(metrics.status().message()));
      return 1;
    }
    metrics_fd = internal::Fd(*metrics);
  }
  state.Log(fmt::format(
      "serving on {}{}", state.socket_path,
      metrics_fd.ok() ? fmt::format(", health and metrics on {}", *metrics_listen) : ""));
  if (state.options.notify) {
    state.options.notify("READY=1");
    state.options.notify("STATUS=" + verdict_line);
  }
  std::thread prober([&state, &node, verdict_line] {
    Prober(state, std::optional<Node>(*std::move(node)), verdict_line);
  });
  const int code =
      Loop(state, api_fd.get(), metrics_fd.ok() ? metrics_fd.get() : -1, signal_fd.get());
  ::unlink(state.socket_path.c_str());
  {
    absl::MutexLock guard(&state.mu);
    state.quitting = true;  // wakes the prober
  }
  prober.join();
  // Connections still being answered hold a reference to the state.
  for (int i = 0; i < 50 && ConnectionsBeingHandled() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  state.Log(code == 0 ? "drained; exiting" : "exiting with sessions left");
  return code;
}

}  // namespace mojoup

#include "mojoup/internal/spawn.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string_view>

#include "absl/strings/cord.h"

extern char** environ;

namespace mojoup::internal {
namespace {

using Clock = std::chrono::steady_clock;

// Debian 12's <sys/pidfd.h> declares pidfd_open and pidfd_send_signal
// without C linkage: the calls go through syscall(2).
constexpr char kErrnoPayload[] = "mojoup.internal.spawn/errno";
// Present on the errors of an exec that failed.
constexpr char kExecPayload[] = "mojoup.internal.spawn/exec";
// A child that exits may leave its own children holding its pipes: read
// what is left for this long, then stop.
constexpr auto kDrainAfterExit = std::chrono::milliseconds(100);

// What the child reports through the report pipe when it cannot exec.
enum class Stage : int { kGroup, kCredentials, kDescriptors, kWorkdir, kExec };
struct Report {
  Stage stage;
  int error;
};

absl::Status WithErrno(absl::Status status, int error) {
  status.SetPayload(kErrnoPayload, absl::Cord(std::to_string(error)));
  return status;
}

// One descriptor the child gets: `source` (a copy above every target, so no
// dup2 clobbers another's source) at `target`.
struct Placement {
  int source;
  int target;
};

// Everything the child needs, built before fork: the child only makes
// async-signal-safe calls and never allocates.
struct Plan {
  std::vector<std::string> argv_text, env_text, candidates;
  std::vector<char*> argv, envp, sh_argv;
  std::vector<Fd> owned;  // copies and pipe ends the child uses; closed after fork
  std::vector<Placement> placements;
  std::vector<int> keep_targets;  // every fd the child keeps, 0-2 included when inherited
  int top = 2;                    // the highest target
  int report = -1;                // the child's end of the report pipe, above `top`
  const SpawnOptions* options = nullptr;
};

std::vector<char*> Pointers(std::vector<std::string>& texts) {
  std::vector<char*> pointers;
  pointers.reserve(texts.size() + 1);
  for (std::string& text : texts) pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

// The files to try, in order, as execvp would: the name itself when it
// holds a slash, else each directory of this process's PATH.
std::vector<std::string> Candidates(const std::string& name) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos) return {name};
  const char* found = std::getenv("PATH");
  std::string path = found != nullptr ? found : "/bin:/usr/bin";
  std::vector<std::string> candidates;
  std::size_t start = 0;
  for (;;) {
    const std::size_t colon = path.find(':', start);
    const std::string dir = path.substr(start, colon - start);
    candidates.push_back(dir.empty() ? name : dir + "/" + name);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return candidates;
}

// A copy of `fd` above `floor`, closed on exec (dup2 in the child clears
// that); -1 with errno set when it cannot be made.
int CopyAbove(Plan& plan, int fd, int floor) {
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, floor + 1);
  if (copy >= 0) plan.owned.emplace_back(copy);
  return copy;
}

// This process's ends of the captured streams' pipes.
struct ParentEnds {
  Fd in, out, err;
};

std::string ProgramName(const SpawnOptions& options) { return options.argv.front(); }

absl::Status SetupError(const SpawnOptions& options, std::string_view what, int error) {
  return WithErrno(absl::InternalError("cannot run " + ProgramName(options) + ": cannot " +
                                       std::string(what) + ": " + std::strerror(error)),
                   error);
}

// Places one standard stream; `parent_end` receives this process's end of a
// captured stream's pipe.
absl::Status PlaceStream(Plan& plan, const Stream& stream, int target, Fd& parent_end) {
  int source = -1;
  switch (stream.kind()) {
    case Stream::Kind::kInherit:
      plan.keep_targets.push_back(target);
      return absl::OkStatus();
    case Stream::Kind::kNull:
      source = ::open("/dev/null", (target == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
      if (source < 0) return SetupError(*plan.options, "open /dev/null", errno);
      plan.owned.emplace_back(source);
      break;
    case Stream::Kind::kFd:
      source = stream.fd();
      break;
    case Stream::Kind::kCapture: {
      int ends[2];
      if (::pipe2(ends, O_CLOEXEC) != 0) return SetupError(*plan.options, "make a pipe", errno);
      const bool input = target == 0;
      parent_end = Fd(input ? ends[1] : ends[0]);
      source = input ? ends[0] : ends[1];
      plan.owned.emplace_back(source);
      break;
    }
  }
  const int copy = CopyAbove(plan, source, plan.top);
  if (copy < 0) return SetupError(*plan.options, "copy a descriptor", errno);
  plan.placements.push_back({copy, target});
  plan.keep_targets.push_back(target);
  return absl::OkStatus();
}

absl::Status CheckOptions(const SpawnOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("no program to run: argv is empty");
  for (const std::string& entry : options.environment) {
    const std::size_t equals = entry.find('=');
    if (equals == std::string::npos || equals == 0) {
      return absl::InvalidArgumentError("cannot run " + ProgramName(options) +
                                        ": its environment entry \"" +
                                        entry.substr(0, entry.find('=')) + "\" is not NAME=VALUE");
    }
  }
  for (const auto& [fd, target] : options.keep) {
    if (fd < 0 || target <= 2) {
      return absl::InvalidArgumentError("cannot run " + ProgramName(options) +
                                        ": a kept descriptor must be valid and go above 2");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Plan> MakePlan(const SpawnOptions& options, ParentEnds& ends) {
  Plan plan;
  plan.options = &options;
  for (const auto& [fd, target] : options.keep) plan.top = std::max(plan.top, target);
  plan.argv_text = options.argv;
  plan.env_text = options.environment;
  plan.candidates = Candidates(options.program.empty() ? options.argv.front() : options.program);
  plan.argv = Pointers(plan.argv_text);
  plan.envp = Pointers(plan.env_text);
  // For a file without `#!`: /bin/sh runs it, with the same arguments.
  plan.sh_argv = {const_cast<char*>("/bin/sh"), nullptr};
  plan.sh_argv.insert(plan.sh_argv.end(), plan.argv.begin() + 1, plan.argv.end());
  const Stream* streams[3] = {&options.in, &options.out, &options.err};
  Fd* parent_ends[3] = {&ends.in, &ends.out, &ends.err};
  for (int target = 0; target < 3; ++target) {
    if (absl::Status placed = PlaceStream(plan, *streams[target], target, *parent_ends[target]);
        !placed.ok()) {
      return placed;
    }
  }
  for (const auto& [fd, target] : options.keep) {
    const int copy = CopyAbove(plan, fd, plan.top);
    if (copy < 0) return SetupError(options, "copy a kept descriptor", errno);
    plan.placements.push_back({copy, target});
    plan.keep_targets.push_back(target);
  }
  return plan;
}

// --- In the child: async-signal-safe calls only. ---

[[noreturn]] void Fail(int report, Stage stage, int error) {
  const Report sent{stage, error};
  [[maybe_unused]] ssize_t written = ::write(report, &sent, sizeof sent);
  ::_exit(127);
}

void ResetSignals(const SpawnOptions& options) {
  // This process's handlers are not the program's: a signal that arrives
  // before exec must act as it would on the program.
  for (int signal = 1; signal < NSIG; ++signal) {
    struct sigaction action {};
    if (::sigaction(signal, nullptr, &action) != 0) continue;
    if (action.sa_handler == SIG_IGN || action.sa_handler == SIG_DFL) continue;
    action.sa_handler = SIG_DFL;
    action.sa_flags = 0;
    ::sigaction(signal, &action, nullptr);
  }
  for (int signal : options.default_signals) {
    struct sigaction action {};
    action.sa_handler = SIG_DFL;
    ::sigaction(signal, &action, nullptr);
  }
}

void CloseOthers(const Plan& plan) {
  for (int fd = 3; fd <= plan.top; ++fd) {
    if (std::find(plan.keep_targets.begin(), plan.keep_targets.end(), fd) ==
        plan.keep_targets.end()) {
      ::close(fd);
    }
  }
  const unsigned first = static_cast<unsigned>(plan.top) + 1;
  const unsigned report = static_cast<unsigned>(plan.report);
  if (first < report && ::close_range(first, report - 1, 0) != 0) {
    for (unsigned fd = first; fd < report; ++fd) ::close(static_cast<int>(fd));
  }
  if (::close_range(report + 1, ~0U, 0) != 0) {
    const long most = ::sysconf(_SC_OPEN_MAX);
    const long last = most > 0 && most < (1L << 20) ? most : (1L << 16);
    for (long fd = report + 1; fd < last; ++fd) ::close(static_cast<int>(fd));
  }
}

[[noreturn]] void Exec(Plan& plan) {
  bool denied = false;
  int error = ENOENT;
  for (std::string& candidate : plan.candidates) {
    ::execve(candidate.c_str(), plan.argv.data(), plan.envp.data());
    error = errno;
    if (error == ENOEXEC) {
      plan.sh_argv[1] = candidate.data();
      ::execve("/bin/sh", plan.sh_argv.data(), plan.envp.data());
      break;
    }
    if (error == EACCES) {
      denied = true;
      continue;
    }
    if (error != ENOENT && error != ENOTDIR && error != ESTALE && error != ENODEV &&
        error != ETIMEDOUT) {
      break;
    }
  }
  if (denied && (error == ENOENT || error == ENOTDIR)) error = EACCES;
  Fail(plan.report, Stage::kExec, error);
}

[[noreturn]] void RunChild(Plan& plan) {
  const SpawnOptions& options = *plan.options;
  ResetSignals(options);
  if (options.group == SpawnOptions::Group::kSession && ::setsid() < 0) {
    Fail(plan.report, Stage::kGroup, errno);
  }
  if (options.group == SpawnOptions::Group::kGroup && ::setpgid(0, 0) != 0) {
    Fail(plan.report, Stage::kGroup, errno);
  }
  if (const auto& id = options.credentials;
      id && (::setgroups(id->groups.size(), id->groups.data()) != 0 || ::setgid(id->gid) != 0 ||
             ::setuid(id->uid) != 0)) {
    Fail(plan.report, Stage::kCredentials, errno);
  }
  for (const Placement& placed : plan.placements) {
    if (::dup2(placed.source, placed.target) < 0) Fail(plan.report, Stage::kDescriptors, errno);
  }
  CloseOthers(plan);
  if (!options.workdir.empty() && ::chdir(options.workdir.c_str()) != 0) {
    Fail(plan.report, Stage::kWorkdir, errno);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  Exec(plan);
}

// --- Back in the parent. ---

absl::Status ChildError(const SpawnOptions& options, const Report& report) {
  const std::string program = ProgramName(options);
  const std::string reason = std::strerror(report.error);
  switch (report.stage) {
    case Stage::kExec: {
      absl::Status failed =
          WithErrno(report.error == ENOENT
                        ? absl::NotFoundError("cannot run " + program + ": " + reason)
                        : absl::FailedPreconditionError("cannot run " + program + ": " + reason),
                    report.error);
      failed.SetPayload(kExecPayload, absl::Cord("1"));
      return failed;
    }
    case Stage::kWorkdir:
      return WithErrno(absl::FailedPreconditionError("cannot run " + program + ": cannot enter " +
                                                     options.workdir + ": " + reason),
                       report.error);
    case Stage::kCredentials:
      return WithErrno(
          absl::FailedPreconditionError("cannot run " + program +
                                        ": cannot take its user's identity: " + reason),
          report.error);
    default:
      return WithErrno(absl::FailedPreconditionError("cannot run " + program +
                                                     ": cannot set up its process: " + reason),
                       report.error);
  }
}

// Forks with every signal blocked, so that none reaches the child before its
// handlers are the defaults.
pid_t ForkBlocked() {
  sigset_t all, before;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &before);
  const pid_t pid = ::fork();
  if (pid == 0) return 0;
  const int error = errno;
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  errno = error;
  return pid;
}

void Reap(pid_t pid, int& status) {
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::move(other.pidfd_)),
      in_(std::move(other.in_)),
      out_(std::move(other.out_)),
      err_(std::move(other.err_)),
      group_(other.group_),
      reaped_(other.reaped_) {}

Child& Child::operator=(Child&& other) noexcept {
  if (this == &other) return *this;
  KillAndReap();
  pid_ = std::exchange(other.pid_, -1);
  pidfd_ = std::move(other.pidfd_);
  in_ = std::move(other.in_);
  out_ = std::move(other.out_);
  err_ = std::move(other.err_);
  group_ = other.group_;
  reaped_ = other.reaped_;
  return *this;
}

Child::~Child() { KillAndReap(); }

void Child::KillAndReap() {
  if (pid_ <= 0 || reaped_) return;
  Kill();
  int status = 0;
  Reap(pid_, status);
  reaped_ = true;
}

void Child::Kill() const { Signal(SIGKILL); }

void Child::Signal(int signal) const {
  if (pid_ <= 0 || reaped_) return;
  if (group_) {
    ::kill(-pid_, signal);
  } else if (!pidfd_.ok() ||
             ::syscall(SYS_pidfd_send_signal, pidfd_.get(), signal, nullptr, 0U) != 0) {
    ::kill(pid_, signal);
  }
}

pid_t Child::Release() {
  reaped_ = true;
  pidfd_.Reset();
  in_.Reset();
  out_.Reset();
  err_.Reset();
  return pid_;
}

namespace {

void Describe(int status, ChildExit& done) {
  if (WIFSIGNALED(status)) {
    done.signal = WTERMSIG(status);
  } else {
    done.exit_code = WEXITSTATUS(status);
  }
}

// One read from a captured stream into `sink`, keeping at most `cap` bytes;
// closes the stream at its end.
void ReadSome(Fd& stream, std::string& sink, bool& truncated, std::size_t cap) {
  char buffer[8192];
  const ssize_t n = ::read(stream.get(), buffer, sizeof buffer);
  if (n > 0) {
    const std::size_t room = cap - std::min(cap, sink.size());
    const std::size_t kept = std::min(room, static_cast<std::size_t>(n));
    sink.append(buffer, kept);
    truncated = truncated || kept < static_cast<std::size_t>(n);
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    stream.Reset();
  }
}

int MillisecondsUntil(Clock::time_point now, std::optional<Clock::time_point> until) {
  if (!until) return -1;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(*until - now).count();
  return static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
}

}  // namespace

ChildExit Child::Wait(std::optional<Clock::time_point> deadline, std::size_t cap) {
  ChildExit done;
  if (pid_ <= 0 || reaped_) return done;
  int status = 0;
  std::optional<Clock::time_point> ended;
  Fd* streams[2] = {&out_, &err_};
  std::string* sinks[2] = {&done.out, &done.err};
  bool* truncated[2] = {&done.out_truncated, &done.err_truncated};
  for (;;) {
    const auto now = Clock::now();
    if (ended && ((!out_.ok() && !err_.ok()) || now - *ended >= kDrainAfterExit)) break;
    if (!ended && deadline && now >= *deadline) {
      Kill();
      Reap(pid_, status);
      done.timed_out = true;
      break;
    }
    pollfd fds[3];
    int index[3];
    nfds_t count = 0;
    auto watch = [&](int fd, int i) {
      fds[count] = {fd, POLLIN, 0};
      index[count++] = i;
    };
    if (!ended && pidfd_.ok()) watch(pidfd_.get(), -1);
    for (int i = 0; i < 2; ++i) {
      if (streams[i]->ok()) watch(streams[i]->get(), i);
    }
    int wait_ms =
        MillisecondsUntil(now, ended ? std::optional(*ended + kDrainAfterExit) : deadline);
    // Without a pidfd, or with nothing to poll, look for the end every 10 ms.
    if (!ended && !pidfd_.ok()) wait_ms = wait_ms < 0 ? 10 : std::min(wait_ms, 10);
    const int ready = ::poll(fds, count, wait_ms);
    if (ready < 0 && errno != EINTR) break;
    for (nfds_t k = 0; k < count && ready > 0; ++k) {
      if (fds[k].revents == 0 || index[k] < 0) continue;
      ReadSome(*streams[index[k]], *sinks[index[k]], *truncated[index[k]], cap);
    }
    if (!ended && ::waitpid(pid_, &status, WNOHANG) == pid_) ended = Clock::now();
  }
  if (!ended && !done.timed_out) Reap(pid_, status);
  reaped_ = true;
  out_.Reset();
  err_.Reset();
  Describe(status, done);
  return done;
}

absl::StatusOr<Child> Spawn(const SpawnOptions& options) {
  if (absl::Status checked = CheckOptions(options); !checked.ok()) return checked;
  Child child;
  ParentEnds ends;
  auto plan = MakePlan(options, ends);
  if (!plan.ok()) return plan.status();
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return SetupError(options, "make a pipe", errno);
  Fd report_read(report[0]);
  {
    Fd report_write(report[1]);
    plan->report = CopyAbove(*plan, report[1], plan->top);
    if (plan->report < 0) return SetupError(options, "copy a descriptor", errno);
  }
  const pid_t pid = ForkBlocked();
  if (pid == 0) RunChild(*plan);
  const int fork_error = errno;
  plan->owned.clear();  // the child's ends, the report pipe's write end among them
  if (pid < 0) return SetupError(options, "start a process", fork_error);
  Report got{};
  ssize_t n;
  while ((n = ::read(report_read.get(), &got, sizeof got)) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof got)) {
    int status = 0;
    Reap(pid, status);
    return ChildError(options, got);
  }
  child.pid_ = pid;
  child.pidfd_ = Fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0U)));
  child.in_ = std::move(ends.in);
  child.out_ = std::move(ends.out);
  child.err_ = std::move(ends.err);
  child.group_ = options.group != SpawnOptions::Group::kSame;
  return child;
}

int SpawnErrno(const absl::Status& status) {
  auto payload = status.GetPayload(kErrnoPayload);
  if (!payload) return 0;
  return std::atoi(std::string(*payload).c_str());
}

bool SpawnExecFailed(const absl::Status& status) {
  return status.GetPayload(kExecPayload).has_value();
}

std::vector<std::string> CurrentEnvironment(const std::vector<std::string>& overrides) {
  std::vector<std::string> names;
  for (const std::string& entry : overrides) names.push_back(entry.substr(0, entry.find('=') + 1));
  std::vector<std::string> environment = overrides;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text = *entry;
    bool replaced = false;
    for (const std::string& name : names) replaced = replaced || text.starts_with(name);
    if (!replaced) environment.emplace_back(text);
  }
  return environment;
}

}  // namespace mojoup::internal

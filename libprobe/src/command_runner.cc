#include "mojoup/probe/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string>
#include <string_view>

#include "mojoup/internal/fd.h"

extern char** environ;

namespace mojoup::probe {
namespace {

using Clock = std::chrono::steady_clock;

using mojoup::internal::Fd;

// A child that exits may leave grandchildren holding its pipes; read what is
// left for this long, then stop.
constexpr auto kDrainAfterExit = std::chrono::milliseconds(100);

class SystemCommandRunner final : public CommandRunner {
 public:
  CommandResult Run(const std::vector<std::string>& argv,
                    std::chrono::milliseconds timeout) override {
    return RunWithEnvironment(argv, {}, timeout);
  }

  CommandResult RunWithEnvironment(const std::vector<std::string>& argv,
                                   const std::vector<std::string>& environment,
                                   std::chrono::milliseconds timeout) override {
    CommandResult result;
    if (argv.empty()) {
      result.spawn_error = EINVAL;
      return result;
    }
    // NAME=VALUE each: a bare NAME would match every variable below.
    std::vector<std::string> names;
    for (const std::string& entry : environment) {
      const auto equals = entry.find('=');
      if (equals == std::string::npos || equals == 0) {
        result.spawn_error = EINVAL;
        return result;
      }
      names.push_back(entry.substr(0, equals + 1));
    }
    int out_pipe[2];
    int err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0) {
      result.spawn_error = errno;
      return result;
    }
    Fd out_read(out_pipe[0]), out_write(out_pipe[1]);
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
      result.spawn_error = errno;
      return result;
    }
    Fd err_read(err_pipe[0]), err_write(err_pipe[1]);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_write.get(), STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err_write.get(), STDERR_FILENO);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // Its own process group, so a deadline kills everything it started.
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);

    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);

    // This process's environment, with `environment`'s names replaced.
    std::vector<char*> env;
    for (const std::string& entry : environment) env.push_back(const_cast<char*>(entry.c_str()));
    for (char** entry = environ; *entry != nullptr; ++entry) {
      std::string_view text = *entry;
      bool replaced = false;
      for (const std::string& name : names) replaced = replaced || text.starts_with(name);
      if (!replaced) env.push_back(*entry);
    }
    env.push_back(nullptr);

    pid_t pid = -1;
    int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), env.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
      result.spawn_error = rc;
      return result;
    }
    out_write.Reset();
    err_write.Reset();

    const auto deadline = Clock::now() + timeout;
    std::optional<Clock::time_point> exited_at;
    int status = 0;
    bool timed_out = false;
    Fd* streams[2] = {&out_read, &err_read};
    std::string* sinks[2] = {&result.out, &result.err};

    for (;;) {
      if (!exited_at) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) exited_at = Clock::now();
      }
      bool open = out_read.get() >= 0 || err_read.get() >= 0;
      auto now = Clock::now();
      if (!open && exited_at) break;
      if (exited_at && now - *exited_at > kDrainAfterExit) break;
      if (!exited_at && now >= deadline) {
        timed_out = true;
        break;
      }
      pollfd fds[2];
      int nfds = 0;
      int index[2];
      for (int i = 0; i < 2; ++i) {
        if (streams[i]->get() < 0) continue;
        fds[nfds] = {streams[i]->get(), POLLIN, 0};
        index[nfds++] = i;
      }
      auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      int wait_ms = static_cast<int>(std::clamp<long long>(wait.count(), 0, 20));
      if (nfds == 0) {
        usleep(1000);
        continue;
      }
      int ready = poll(fds, static_cast<nfds_t>(nfds), wait_ms);
      if (ready < 0 && errno != EINTR) break;
      for (int k = 0; k < nfds && ready > 0; ++k) {
        if (fds[k].revents == 0) continue;
        int i = index[k];
        char buf[8192];
        ssize_t n = read(streams[i]->get(), buf, sizeof buf);
        if (n > 0) {
          std::size_t room = kMaxCommandOutput - std::min(kMaxCommandOutput, sinks[i]->size());
          sinks[i]->append(buf, std::min(room, static_cast<std::size_t>(n)));
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          streams[i]->Reset();
        }
      }
    }

    if (timed_out) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.outcome = CommandResult::Outcome::kTimedOut;
      return result;
    }
    if (WIFEXITED(status)) {
      result.outcome = CommandResult::Outcome::kExited;
      result.exit_code = WEXITSTATUS(status);
    } else {
      result.outcome = CommandResult::Outcome::kSignaled;
      result.signal = WTERMSIG(status);
    }
    return result;
  }
};

}  // namespace

std::unique_ptr<CommandRunner> MakeSystemCommandRunner() {
  return std::make_unique<SystemCommandRunner>();
}

}  // namespace mojoup::probe

// fake-openshell-sandbox: what fake-openshell mounts at OpenShell's
// supervisor path in each sandbox (/opt/openshell/bin/openshell-sandbox,
// v0.0.92 and v0.0.111 crates/openshell-core, SUPERVISOR_CONTAINER_BINARY),
// playing the one part of the supervisor an exec meets: how its command is
// spawned and how its end is reported.
//
//   openshell-sandbox exec [--env ENV] [--landlock RULES] -- PROGRAM ARGS...
//
// ENV is fake-openshell's ChildEnvironment() with the exec's TERM; RULES
// its LandlockRules() of the sandbox's policy.
// As the supervisor's SSH server does (v0.0.111
// crates/openshell-supervisor-process/src/ssh.rs; v0.0.92 the same file):
// - the command is a child of the supervisor, which stays;
// - under a terminal (spawn_pty_shell, install_pre_exec) the child gets a
//   session of its own with the terminal as its controlling terminal, so a
//   ^C reaches the command and never the supervisor. Here the terminal is
//   Docker's exec's, whose session this program leads, so the child takes
//   a process group of its own and makes it the terminal's foreground: the
//   same reach. Without a terminal (spawn_pipe_exec,
//   install_pre_exec_no_pty) it is spawned as it is;
// - no signal is passed on to it, and none is sent when the channel closes;
// - it gets a cleared environment, the supervisor's (ENV: "set K=V" lines,
//   and "pass NAME" for a sandbox variable whose value is this process's),
//   so the image's ENV never reaches it (ssh.rs apply_child_env);
// - its end is reported as `status.code().unwrap_or(1)`: the code it exited
//   with, or 1 when a signal killed it;
// - with a policy, the child is confined by Landlock before it runs
//   (ssh.rs pre_exec: sandbox::linux::prepare, then enforce; v0.0.111
//   crates/openshell-supervisor-process/src/sandbox/linux/landlock.rs): a
//   ruleset that handles every ABI v2 access right; read_only paths get
//   the read rights (execute, read file, read directory), read_write paths
//   all of them, each masked to the file rights for a path that is not a
//   directory; the release's baseline paths are added where they exist and
//   the policy does not list them (crates/openshell-sandbox/src/lib.rs
//   enrich_proto_baseline_paths). A policy path that cannot be opened is
//   skipped under best_effort and fails the exec under hard_requirement,
//   with the real message; how the CLI reports a spawn that failed is not
//   modelled (the message, then exit 1).
// Statically linked, so that it runs in any image.

#include <fcntl.h>
#include <linux/landlock.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr std::uint64_t kAllV2 = (LANDLOCK_ACCESS_FS_REFER << 1) - 1;
constexpr std::uint64_t kRead =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
constexpr std::uint64_t kFile =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE;

struct Rules {
  bool hard = false;
  std::vector<std::string> read_only, read_write;
};

bool Has(const std::vector<std::string>& paths, const std::string& path) {
  return std::find(paths.begin(), paths.end(), path) != paths.end();
}

Rules Parse(const std::string& text) {
  Rules rules;
  std::vector<std::string> baseline_ro, baseline_rw;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    const std::string kind = line.substr(0, space);
    const std::string value = line.substr(space + 1);
    if (kind == "compatibility") rules.hard = value == "hard_requirement";
    if (kind == "ro") rules.read_only.push_back(value);
    if (kind == "rw") rules.read_write.push_back(value);
    if (kind == "baseline-ro") baseline_ro.push_back(value);
    if (kind == "baseline-rw") baseline_rw.push_back(value);
  }
  struct stat info {};
  for (const std::string& path : baseline_ro) {
    if (!Has(rules.read_only, path) && !Has(rules.read_write, path) &&
        ::stat(path.c_str(), &info) == 0) {
      rules.read_only.push_back(path);
    }
  }
  for (const std::string& path : baseline_rw) {
    if (!Has(rules.read_write, path) && !Has(rules.read_only, path) &&
        ::stat(path.c_str(), &info) == 0) {
      rules.read_write.push_back(path);
    }
  }
  return rules;
}

// landlock.rs classify_io_error.
const char* Reason(int error) {
  switch (error) {
    case ENOENT:
      return "path does not exist";
    case EACCES:
      return "permission denied";
    case ELOOP:
      return "too many symlink levels";
    case ENAMETOOLONG:
      return "path name too long";
    case ENOTDIR:
      return "path component is not a directory";
    default:
      return "unexpected error";
  }
}

// Confines this process; false (with the reason printed) when the exec must fail.
bool Confine(const Rules& rules) {
  if (rules.read_only.empty() && rules.read_write.empty()) return true;
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = kAllV2;
  const int ruleset =
      static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (ruleset < 0) {
    if (!rules.hard) return true;
    std::fprintf(stderr, "Landlock unavailable in hard_requirement mode: errno %d\n", errno);
    return false;
  }
  std::size_t applied = 0;
  auto add = [&](const std::string& path, std::uint64_t access) {
    const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) {
      if (!rules.hard) return true;
      const int error = errno;
      std::fprintf(stderr,
                   "Landlock path unavailable in hard_requirement mode: %s (%s): %s (os error "
                   "%d)\n",
                   path.c_str(), Reason(error), std::strerror(error), error);
      return false;
    }
    struct stat info {};
    if (::fstat(fd, &info) == 0 && !S_ISDIR(info.st_mode)) access &= kFile;
    landlock_path_beneath_attr beneath{};
    beneath.allowed_access = access;
    beneath.parent_fd = fd;
    const long added =
        ::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &beneath, 0);
    ::close(fd);
    if (added == 0) ++applied;
    return true;
  };
  for (const std::string& path : rules.read_only) {
    if (!add(path, kRead)) return false;
  }
  for (const std::string& path : rules.read_write) {
    if (!add(path, kAllV2)) return false;
  }
  if (applied == 0) {
    if (!rules.hard) return true;
    std::fprintf(stderr,
                 "Landlock ruleset has zero valid paths — all %zu path(s) failed to open. "
                 "Refusing to apply an empty ruleset that would block all filesystem access.\n",
                 rules.read_only.size() + rules.read_write.size());
    return false;
  }
  ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  const long restricted = ::syscall(SYS_landlock_restrict_self, ruleset, 0);
  ::close(ruleset);
  if (restricted != 0 && rules.hard) {
    std::fprintf(stderr, "Landlock restrict_self failed: %s\n", std::strerror(errno));
    return false;
  }
  return true;
}

// The child's environment from ENV's lines.
std::vector<std::string> ChildEnvironment(const std::string& text) {
  std::vector<std::string> entries;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("set ")) {
      entries.push_back(line.substr(4));
    } else if (line.starts_with("pass ")) {
      const std::string name = line.substr(5);
      if (const char* value = std::getenv(name.c_str()); value != nullptr) {
        entries.push_back(name + "=" + value);
      }
    }
  }
  return entries;
}

}  // namespace

int main(int argc, char** argv) {
  int at = 2;
  std::string landlock;
  std::optional<std::vector<std::string>> environment;
  while (argc > at + 1 && std::string_view(argv[1]) == "exec") {
    const std::string_view option = argv[at];
    if (option == "--landlock") {
      landlock = argv[at + 1];
    } else if (option == "--env") {
      environment = ChildEnvironment(argv[at + 1]);
    } else {
      break;
    }
    at += 2;
  }
  if (argc < at + 2 || std::string_view(argv[1]) != "exec" || std::string_view(argv[at]) != "--") {
    std::fputs(
        "usage: openshell-sandbox exec [--env ENV] [--landlock RULES] -- PROGRAM [ARGS...]\n",
        stderr);
    return 2;
  }
  char** command = argv + at + 1;
  const Rules rules = Parse(landlock);
  std::vector<char*> envp;
  if (environment) {
    for (std::string& entry : *environment) envp.push_back(entry.data());
    envp.push_back(nullptr);
  }
  const bool terminal = ::isatty(STDIN_FILENO) != 0;
  const pid_t child = ::fork();
  if (child < 0) {
    std::fprintf(stderr, "openshell-sandbox: fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (child == 0) {
    if (terminal && ::setpgid(0, 0) == 0) {
      // From a background group tcsetpgrp stops the caller, unless it
      // blocks SIGTTOU.
      sigset_t ttou;
      sigemptyset(&ttou);
      sigaddset(&ttou, SIGTTOU);
      ::sigprocmask(SIG_BLOCK, &ttou, nullptr);
      ::tcsetpgrp(STDIN_FILENO, ::getpid());
      ::sigprocmask(SIG_UNBLOCK, &ttou, nullptr);
    }
    if (!Confine(rules)) ::_exit(1);
    if (environment) {
      ::execve(command[0], command, envp.data());
    } else {
      ::execv(command[0], command);
    }
    std::fprintf(stderr, "openshell-sandbox: %s: %s\n", command[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return 1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

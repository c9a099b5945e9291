// fake-openshell-sandbox: what fake-openshell mounts at OpenShell's
// supervisor path in each sandbox (/opt/openshell/bin/openshell-sandbox,
// v0.0.92 and v0.0.111 crates/openshell-core, SUPERVISOR_CONTAINER_BINARY),
// playing the one part of the supervisor an exec meets: how its command is
// spawned and how its end is reported.
//
//   openshell-sandbox exec -- PROGRAM ARGS...
//
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
// - its end is reported as `status.code().unwrap_or(1)`: the code it exited
//   with, or 1 when a signal killed it.
// Statically linked, so that it runs in any image.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

int main(int argc, char** argv) {
  if (argc < 4 || std::string_view(argv[1]) != "exec" || std::string_view(argv[2]) != "--") {
    std::fputs("usage: openshell-sandbox exec -- PROGRAM [ARGS...]\n", stderr);
    return 2;
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
    ::execv(argv[3], argv + 3);
    std::fprintf(stderr, "openshell-sandbox: %s: %s\n", argv[3], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return 1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

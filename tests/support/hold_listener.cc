// hold-listener COMMAND [ARG...]
// Takes the seccomp user-notification listener slot for itself and its
// descendants, the way WSL's mirrored networking or another supervisor does:
// installs an allow-all filter with SECCOMP_FILTER_FLAG_NEW_LISTENER, keeps
// the listener fd open, runs COMMAND under the filter and exits with its code.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: hold-listener COMMAND [ARG...]\n");
    return 2;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    std::fprintf(stderr, "hold-listener: no_new_privs: %s\n", std::strerror(errno));
    return 2;
  }
  sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  sock_fprog prog{1, &allow};
  long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
  if (fd < 0) {
    std::fprintf(stderr, "hold-listener: seccomp: %s\n", std::strerror(errno));
    return 2;
  }
  pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    close(static_cast<int>(fd));  // the parent keeps the slot taken
    execvp(argv[1], argv + 1);
    std::fprintf(stderr, "hold-listener: %s: %s\n", argv[1], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  close(static_cast<int>(fd));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The supervisor's seccomp deny-list (seccomp_filter.cc) against the running
// kernel, in forked children.
#include "seccomp_filter.h"

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <filesystem>
#include <thread>

#include "../../support/test_support.h"
#include "supervisor_test_support.h"

using namespace mojoup::supervisor;
using mojoup::test::TempDir;
using namespace mojoup::supervisor::test;

TEST_CASE("supervisor: seccomp: the deny-list refuses namespaces, mounts, tracing and io_uring",
          "[supervisor][seccomp]") {
  TempDir dir;
  const int io_uring_error =
      seccomp_syscall_resolve_name("io_uring_setup") == __NR_SCMP_ERROR ? ENOSYS : EPERM;

  ChildOutcome child = InChild([&] {
    std::string report = SetNoNewPrivs();
    if (std::string error = ApplySeccompDenyList(); !error.empty()) {
      return "ApplySeccompDenyList: " + error;
    }
    report += ExpectFailure(unshare(CLONE_NEWUSER), EPERM, "unshare(CLONE_NEWUSER)");
    report += ExpectFailure(unshare(CLONE_NEWUSER | CLONE_NEWNS), EPERM,
                            "unshare(CLONE_NEWUSER|CLONE_NEWNS)");
    // An unknown filesystem type: harmless should the filter let it through.
    report += ExpectFailure(mount("none", dir.path().c_str(), "mojoup-no-such-fs", 0, nullptr),
                            EPERM, "mount");
    report += ExpectFailure(ptrace(PTRACE_TRACEME, 0, nullptr, nullptr), EPERM, "ptrace");
    report += ExpectFailure(setns(-1, 0), EPERM, "setns");
    char params[256] = {};
    report +=
        ExpectFailure(syscall(SYS_io_uring_setup, 1, params), io_uring_error, "io_uring_setup");

    long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) _exit(0);
    if (pid > 0) waitpid(static_cast<pid_t>(pid), nullptr, 0);
    report += ExpectFailure(pid, EPERM, "clone(CLONE_NEWUSER)");
    char clone_args[88] = {};
    pid = syscall(SYS_clone3, clone_args, sizeof clone_args);
    if (pid == 0) _exit(0);
    if (pid > 0) waitpid(static_cast<pid_t>(pid), nullptr, 0);
    report += ExpectFailure(pid, ENOSYS, "clone3");
    // Without the filter this is a socket, or EAFNOSUPPORT where the kernel
    // has no vsock transport: EPERM is the filter's answer.
    report +=
        ExpectFailure(socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0), EPERM, "socket(AF_VSOCK)");

    // Ordinary work goes on: other sockets,: fork, threads (glibc falls back from clone3 to
    // clone), files.
    report += Expect(getpid() > 0, "getpid");
    pid_t forked = fork();
    if (forked == 0) _exit(7);
    int status = 0;
    report += Expect(forked > 0 && waitpid(forked, &status, 0) == forked && WIFEXITED(status) &&
                         WEXITSTATUS(status) == 7,
                     "fork");
    std::atomic<bool> ran{false};
    std::thread([&ran] { ran = true; }).join();
    report += ran ? "" : "a thread did not run\n";
    int fd = open((dir / "file").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    report += Expect(fd >= 0 && write(fd, "x", 1) == 1, "open and write");
    if (fd >= 0) close(fd);
    return report;
  });
  INFO(child.report);
  CHECK(child.signal == 0);
  CHECK(child.exit_code == 0);
}

#if defined(__x86_64__)
namespace {

// getpid through the i386 system-call gate (int 0x80): its result, or the
// signal the child died of.
long I386Getpid() {
  long rc = 20;  // getpid in the i386 table
  asm volatile("int $0x80" : "+a"(rc) : : "memory", "cc", "r8", "r9", "r10", "r11");
  return rc;
}

ChildOutcome I386Call(bool filtered) {
  return InChild([filtered] {
    if (filtered) {
      if (std::string error = SetNoNewPrivs() + ApplySeccompDenyList(); !error.empty()) {
        return error;
      }
    }
    const long rc = I386Getpid();
    return rc > 0 ? std::string() : "rc=" + std::to_string(rc);
  });
}

// Whether no i386 system call ran past the filter, judged from what the
// kernel did without the filter (`plain`) and with it (`filtered`). A kernel
// with IA-32 emulation runs the call, and the filter must kill the caller
// (its default action for a foreign architecture). A kernel without it (or
// with it off at boot) faults on int 0x80, or answers ENOSYS: the call never
// runs, filter or not, and that is as safe. "" when safe, else why not.
std::string I386Verdict(const ChildOutcome& plain, const ChildOutcome& filtered) {
  const bool filtered_ran = filtered.signal == 0 && filtered.exit_code == 0;
  if (plain.signal == 0 && plain.exit_code == 0) {
    if (filtered.signal == SIGSYS) return {};
    return "the kernel runs i386 system calls and the filter did not kill the caller (" +
           (filtered_ran ? std::string("the call returned") : filtered.report) + ")";
  }
  if (plain.signal != 0 || plain.report.rfind("rc=-", 0) == 0) {
    if (!filtered_ran) return {};
    return "the kernel faulted on int 0x80 without the filter, yet it returned with it";
  }
  return "unexpected outcome of int 0x80 without the filter: " + plain.report;
}

}  // namespace

TEST_CASE("supervisor: seccomp: the i386 verdict for kernels with and without IA-32 emulation",
          "[supervisor][seccomp]") {
  // The kernel's answers as a seam: one kernel of each kind, and one that
  // would let a call through.
  ChildOutcome ran;  // the call returned a pid
  ran.exit_code = 0;
  ChildOutcome killed;
  killed.signal = SIGSYS;
  ChildOutcome faulted;
  faulted.signal = SIGSEGV;
  ChildOutcome enosys;
  enosys.exit_code = 1;
  enosys.report = "rc=-38";
  CHECK(I386Verdict(ran, killed).empty());       // IA-32 emulation on: the filter kills
  CHECK(I386Verdict(faulted, faulted).empty());  // built without it: int 0x80 faults
  CHECK(I386Verdict(enosys, enosys).empty());    // off at boot: ENOSYS, nothing runs
  CHECK_FALSE(I386Verdict(ran, ran).empty());    // a filter that let it through
  CHECK_FALSE(I386Verdict(faulted, ran).empty());
}

TEST_CASE("supervisor: seccomp: no system call through the i386 ABI runs on this kernel",
          "[supervisor][seccomp]") {
  const ChildOutcome plain = I386Call(false);
  const ChildOutcome filtered = I386Call(true);
  INFO("without the filter: signal " << plain.signal << ", exit " << plain.exit_code << " "
                                     << plain.report << "; with it: signal " << filtered.signal
                                     << ", exit " << filtered.exit_code << " " << filtered.report);
  CHECK(I386Verdict(plain, filtered).empty());
}
#endif

// The supervisor's seccomp deny-list (seccomp_filter.cc) against the running
// kernel, in forked children.
#include "seccomp_filter.h"

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

namespace {

// The file's mode bits, or -1 when it is not there.
long ModeOf(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<long>(st.st_mode & 07777) : -1;
}

// Each way to give a file a set-ID mode, by its system call (not libc's
// wrappers, which pick another call on some architectures), with `mode`.
// Returns what failed to be refused with EPERM; `dir` holds an existing
// file "f" (mode 0644) and nothing else.
std::string SetIdRefusals(const TempDir& dir, unsigned long mode, const std::string& what) {
  std::string report;
  const std::string file = dir / "f";
  auto refused = [&](long rc, const std::string& call) {
    report += ExpectFailure(rc, EPERM, call + " " + what);
  };
  int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
#ifdef SYS_chmod
  refused(syscall(SYS_chmod, file.c_str(), mode), "chmod");
#endif
  refused(syscall(SYS_fchmod, fd, mode), "fchmod");
  refused(syscall(SYS_fchmodat, AT_FDCWD, file.c_str(), mode), "fchmodat");
  // fchmodat2 (452) whether or not this kernel has it: the filter answers first.
  refused(syscall(452, AT_FDCWD, file.c_str(), mode, 0), "fchmodat2");
  if (fd >= 0) close(fd);
  report += ModeOf(file) == 0644 ? "" : what + ": the file's mode changed\n";

  // Creating a file with the mode: nothing may be left behind.
  const std::string made = dir / "made";
#ifdef SYS_open
  refused(syscall(SYS_open, made.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, mode), "open(O_CREAT)");
#endif
#ifdef SYS_creat
  refused(syscall(SYS_creat, made.c_str(), mode), "creat");
#endif
  refused(syscall(SYS_openat, AT_FDCWD, made.c_str(), O_CREAT | O_EXCL | O_WRONLY, mode),
          "openat(O_CREAT|O_EXCL)");
  // An unnamed file that linkat could name later.
  refused(syscall(SYS_openat, AT_FDCWD, dir.path().c_str(), O_TMPFILE | O_WRONLY, mode),
          "openat(O_TMPFILE)");
#ifdef SYS_mknod
  refused(syscall(SYS_mknod, made.c_str(), S_IFREG | mode, 0), "mknod(S_IFREG)");
#endif
  refused(syscall(SYS_mknodat, AT_FDCWD, made.c_str(), S_IFIFO | mode, 0), "mknodat(S_IFIFO)");
  report += Exists(made) ? what + ": a file was created\n" : "";
  return report;
}

}  // namespace

TEST_CASE("supervisor: seccomp: no set-user-ID or set-group-ID mode, changed or created",
          "[supervisor][seccomp][setid]") {
  TempDir dir;
  ChildOutcome child = InChild([&] {
    umask(022);
    std::string report = SetNoNewPrivs();
    if (std::string error = ApplySeccompDenyList(); !error.empty()) {
      return "ApplySeccompDenyList: " + error;
    }
    const std::string file = dir / "f";
    int fd = open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    report += Expect(fd >= 0, "create f");
    if (fd >= 0) close(fd);
    report += Expect(chmod(file.c_str(), 0644) == 0, "chmod 0644");
    for (auto [mode, what] : {std::pair{04755UL, "04755"},
                              {02755UL, "02755"},
                              {06755UL, "06755"},
                              {04000UL, "04000"},
                              {02000UL, "02000"},
                              // umode_t is 16 bits: what the caller puts above is ignored by
                              // the kernel, and must not hide the bit from the filter.
                              {(1UL << 32) | 04755UL, "04755 with high bits"},
                              {0xffff0000UL | 02755UL, "02755 with high bits"}}) {
      report += SetIdRefusals(dir, mode, what);
    }

    // Every other mode goes through, sticky bit included, and so does any
    // mode when nothing is created.
    for (mode_t mode : {0755, 0700, 0600, 0444, 01777, 0}) {
      report += Expect(chmod(file.c_str(), mode) == 0 && ModeOf(file) == mode,
                       "chmod " + std::to_string(mode));
      report += Expect(syscall(SYS_fchmodat, AT_FDCWD, file.c_str(), mode) == 0,
                       "fchmodat " + std::to_string(mode));
    }
    report += Expect(chmod(file.c_str(), 0644) == 0, "chmod back to 0644");
    fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, file.c_str(), O_RDONLY, 04755));
    report += Expect(fd >= 0, "openat without O_CREAT ignores the mode");
    if (fd >= 0) {
      report += Expect(fchmod(fd, 0640) == 0, "fchmod 0640");
      close(fd);
    }
    fd = open((dir / "new").c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0755);
    report += Expect(fd >= 0 && ModeOf(dir / "new") == 0755, "create 0755");
    if (fd >= 0) close(fd);
    fd = creat((dir / "creat").c_str(), 0600);
    report += Expect(fd >= 0, "creat 0600");
    if (fd >= 0) close(fd);
    report += Expect(mkfifo((dir / "fifo").c_str(), 0600) == 0, "mkfifo 0600");
    fd = open(dir.path().c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    report += Expect(fd >= 0, "O_TMPFILE 0600");
    if (fd >= 0) close(fd);
    report += Expect(mkdir((dir / "d").c_str(), 0755) == 0, "mkdir");

    // openat2 carries its mode where the filter cannot see: ENOSYS, so libc
    // and programs fall back to openat.
    struct {
      std::uint64_t flags, mode, resolve;
    } how{O_CREAT | O_WRONLY, 04755, 0};
    report +=
        ExpectFailure(syscall(SYS_openat2, AT_FDCWD, (dir / "made2").c_str(), &how, sizeof how),
                      ENOSYS, "openat2");
    report += Exists(dir / "made2") ? "openat2 created a file\n" : "";
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
    // A kernel without IA-32 emulation faults: the child must die of it, as
    // the verdict expects, not report it through a sanitizer's handler.
    struct sigaction plain_segv {};
    plain_segv.sa_handler = SIG_DFL;
    sigaction(SIGSEGV, &plain_segv, nullptr);
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

// The sandbox supervisor against the running kernel: Landlock, the seccomp
// deny-list and the proxy bridge in forked children (a restriction binds the
// process that applies it for good), and the built mojoup-sandbox-init end to
// end.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "../support/test_support.h"
#include "bridge.h"
#include "landlock.h"
#include "mojoup/probe/minimums.h"
#include "seccomp_filter.h"

using namespace mojoup::supervisor;
using Catch::Matchers::Contains;
using mojoup::test::BinDir;
using mojoup::test::RunWithEnv;
using mojoup::test::TempDir;

namespace {

// What happened to a forked child: its exit code or the signal that ended it,
// and what it reported (empty when every check in it passed).
struct ChildOutcome {
  int exit_code = -1;
  int signal = 0;
  std::string report;
};

// Runs `body` in a forked child and waits for it. `body` returns an empty
// string when all is well, else what went wrong; Catch's assertions must not
// run in the child, they would unwind into a second copy of the test run.
ChildOutcome InChild(const std::function<std::string()>& body) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(pipe_fds[0]);
    std::string report;
    try {
      report = body();
    } catch (const std::exception& e) {
      report = std::string("exception: ") + e.what();
    } catch (...) {
      report = "unknown exception";
    }
    if (!report.empty() && write(pipe_fds[1], report.data(), report.size()) < 0) _exit(3);
    _exit(report.empty() ? 0 : 1);
  }
  close(pipe_fds[1]);
  ChildOutcome outcome;
  char buf[4096];
  ssize_t n;
  while ((n = read(pipe_fds[0], buf, sizeof buf)) > 0) {
    outcome.report.append(buf, static_cast<std::size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
  return outcome;
}

// "what: strerror" when `ok` is false.
std::string Expect(bool ok, const std::string& what) {
  return ok ? std::string() : what + " (errno " + std::strerror(errno) + ")\n";
}

// The call failed with exactly `error`.
std::string ExpectFailure(long rc, int error, const std::string& what) {
  if (rc == -1 && errno == error) return {};
  return what + ": expected " + strerrorname_np(error) + ", got rc " + std::to_string(rc) +
         (rc == -1 ? std::string(" ") + strerrorname_np(errno) : std::string()) + "\n";
}

std::string SetNoNewPrivs() {
  return Expect(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "prctl(PR_SET_NO_NEW_PRIVS)");
}

std::string CreateFile(const std::string& path, int* error) {
  int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  *error = fd < 0 ? errno : 0;
  if (fd >= 0) close(fd);
  return path;
}

std::string LandlockSkipReason() {
  int abi = LandlockAbi();
  if (abi < 0) return "this kernel has no usable Landlock (errno " + std::to_string(-abi) + ")";
  if (abi < mojoup::probe::kMinLandlockAbi) {
    return "this kernel's Landlock ABI is " + std::to_string(abi) + ", the supervisor needs 3";
  }
  return {};
}

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

// On a kernel without Landlock ABI 3 the safe outcome is a refusal: writes
// cannot be confined, so ApplyLandlock names why and the command never runs.
// That is a property of the kernel to assert, not a component to skip for.
void RequireLandlockRefusal(const std::string& why) {
  INFO("this kernel: " << why);
  TempDir dir;
  ChildOutcome child = InChild([&] {
    std::string error = SetNoNewPrivs() + ApplyLandlock({dir.path()}, {});
    return error.find("refusing to run the command") != std::string::npos
               ? std::string()
               : "ApplyLandlock did not refuse: \"" + error + "\"";
  });
  INFO(child.report);
  CHECK(child.exit_code == 0);
  auto run = mojoup::test::RunWithEnv({}, {BinDir() + "/mojoup-sandbox-init", "--write", dir.path(),
                                           "--", "/bin/sh", "-c", "touch " + (dir / "ran")});
  CHECK(run.result.exit_code == 126);
  CHECK_THAT(run.result.err, Catch::Matchers::Contains("refusing to run the command"));
  CHECK_FALSE(Exists(dir / "ran"));
}

}  // namespace

TEST_CASE("supervisor: Landlock handles exactly the write rights each ABI knows",
          "[supervisor][landlock]") {
  constexpr std::uint64_t kAbi1 = (1ULL << 13) - 1 - (1ULL << 0) - (1ULL << 2) - (1ULL << 3);
  CHECK(LandlockWriteAccess(1) == kAbi1);
  CHECK(LandlockWriteAccess(2) == (kAbi1 | 1ULL << 13));
  CHECK(LandlockWriteAccess(3) == (kAbi1 | 1ULL << 13 | 1ULL << 14));
  CHECK(LandlockWriteAccess(4) == LandlockWriteAccess(3));
  CHECK(LandlockWriteAccess(7) == (kAbi1 | 1ULL << 13 | 1ULL << 14 | 1ULL << 15));
}

TEST_CASE("supervisor: Landlock: writes only beneath the allowed directories, reads anywhere",
          "[supervisor][landlock]") {
  if (std::string reason = LandlockSkipReason(); !reason.empty()) {
    RequireLandlockRefusal(reason);
    return;
  }
  TempDir allowed;
  TempDir other;
  std::string readable = other.Write("readable", "hello");
  std::string file_ok = other.Write("writable-file", "old");

  ChildOutcome child = InChild([&] {
    std::string report = SetNoNewPrivs();
    if (std::string error = ApplyLandlock({allowed.path()}, {file_ok}); !error.empty()) {
      return "ApplyLandlock: " + error;
    }
    int error = 0;
    CreateFile(allowed / "created", &error);
    report += error == 0 ? "" : "creating a file in the allowed directory failed\n";
    CreateFile(other / "created", &error);
    report += error == EACCES ? "" : "creating a file elsewhere did not fail with EACCES\n";
    report += ExpectFailure(mkdir((other / "dir").c_str(), 0755), EACCES, "mkdir elsewhere");
    report += ExpectFailure(truncate(readable.c_str(), 0), EACCES, "truncate elsewhere");
    report += ExpectFailure(unlink(readable.c_str()), EACCES, "unlink elsewhere");
    report += Expect(mkdir((allowed / "dir").c_str(), 0755) == 0, "mkdir in the allowed dir");

    std::ifstream in(readable);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    report += text == "hello" ? "" : "reading a file elsewhere gave \"" + text + "\"\n";

    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    report += Expect(null >= 0 && write(null, "x", 1) == 1, "writing /dev/null");
    if (null >= 0) close(null);

    // A --write-file: its contents may change, its directory may not.
    int file = open(file_ok.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    report += Expect(file >= 0 && write(file, "new", 3) == 3, "writing the allowed file");
    if (file >= 0) close(file);
    return report;
  });
  INFO(child.report);
  CHECK(child.exit_code == 0);
  CHECK(Exists(allowed / "created"));
  CHECK_FALSE(Exists(other / "created"));
  CHECK(Exists(readable));
}

TEST_CASE("supervisor: Landlock: on a kernel without it, a refusal and the command never runs",
          "[supervisor][landlock]") {
  TempDir dir;
  const std::string init = BinDir() + "/mojoup-sandbox-init";
  ChildOutcome child = InChild([&] {
    // The kernel's answer as a seam: landlock_create_ruleset gives ENOSYS, as
    // on a kernel built without Landlock (FACTS.md). Children inherit it.
    std::string report = SetNoNewPrivs();
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == nullptr || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), 444, 0) != 0 ||
        seccomp_load(ctx) != 0) {
      return std::string("cannot install the ENOSYS filter");
    }
    seccomp_release(ctx);
    const std::string error = ApplyLandlock({dir.path()}, {});
    if (error.find("Landlock is unavailable") == std::string::npos ||
        error.find("refusing to run the command") == std::string::npos) {
      report += "ApplyLandlock: \"" + error + "\"\n";
    }
    pid_t pid = fork();
    if (pid == 0) {
      const std::string touch = "touch " + (dir / "ran");
      execl(init.c_str(), init.c_str(), "--write", dir.path().c_str(), "--", "/bin/sh", "-c",
            touch.c_str(), nullptr);
      _exit(99);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 126) {
      report += "mojoup-sandbox-init did not exit 126\n";
    }
    return report;
  });
  INFO(child.report);
  CHECK(child.exit_code == 0);
  CHECK_FALSE(Exists(dir / "ran"));
}

TEST_CASE(
    "supervisor: Landlock: a write directory that does not exist is an error, enforcing nothing",
    "[supervisor][landlock]") {
  if (std::string reason = LandlockSkipReason(); !reason.empty()) {
    RequireLandlockRefusal(reason);
    return;
  }
  TempDir dir;
  std::string missing = dir / "no-such-dir";
  std::string a_file = dir.Write("a-file", "");

  ChildOutcome child = InChild([&] {
    std::string report = SetNoNewPrivs();
    std::string error = ApplyLandlock({dir.path(), missing}, {});
    if (error.find(missing) == std::string::npos ||
        error.find("No such file") == std::string::npos) {
      report += "missing dir: \"" + error + "\"\n";
    }
    error = ApplyLandlock({a_file}, {});
    if (error.find(a_file) == std::string::npos ||
        error.find("Not a directory") == std::string::npos) {
      report += "file as dir: \"" + error + "\"\n";
    }
    error = ApplyLandlock({}, {missing});
    if (error.find(missing) == std::string::npos) report += "missing file: \"" + error + "\"\n";
    // Nothing was enforced: writing elsewhere still works.
    int created = 0;
    CreateFile(dir / "still-writable", &created);
    if (created != 0) report += "a failed ApplyLandlock still restricted writes\n";
    return report;
  });
  INFO(child.report);
  CHECK(child.exit_code == 0);
}

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

namespace {

// A unix socket server that echoes every byte back, one connection at a time,
// and closes its side after the client's end of input.
class UnixEchoServer {
 public:
  explicit UnixEchoServer(std::string path) : path_(std::move(path)) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path_.c_str());
    if (bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        listen(fd_, 16) != 0) {
      throw std::runtime_error("cannot listen on " + path_);
    }
    thread_ = std::thread([this] { Loop(); });
  }
  ~UnixEchoServer() {
    // A connection of our own wakes the blocked accept.
    stopping_ = true;
    int wake = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path_.c_str());
    connect(wake, reinterpret_cast<sockaddr*>(&address), sizeof address);
    thread_.join();
    close(wake);
    close(fd_);
  }
  UnixEchoServer(const UnixEchoServer&) = delete;
  UnixEchoServer& operator=(const UnixEchoServer&) = delete;

  int connections() const { return connections_; }

 private:
  void Loop() {
    for (;;) {
      int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;
      }
      if (stopping_) {
        close(client);
        return;
      }
      ++connections_;
      char buf[16384];
      ssize_t n;
      while ((n = read(client, buf, sizeof buf)) > 0) {
        if (send(client, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) break;
      }
      close(client);
    }
  }

  std::string path_;
  int fd_ = -1;
  std::atomic<int> connections_{0};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

int DialTcp(std::uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    return -1;
  }
  timeval limit{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  return fd;
}

// Sends `text` (from a second thread, so a large one cannot deadlock against
// the echo), half-closes, and returns everything received until end of input.
std::string RoundTrip(int fd, const std::string& text) {
  std::thread writer([fd, &text] {
    std::size_t sent = 0;
    while (sent < text.size()) {
      ssize_t n = send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    shutdown(fd, SHUT_WR);
  });
  std::string received;
  char buf[65536];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) received.append(buf, static_cast<std::size_t>(n));
  writer.join();
  close(fd);
  return received;
}

// Gone, or a zombie nobody has reaped yet.
bool Ended(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  std::size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

}  // namespace

TEST_CASE("supervisor: bridge: TCP connections reach the unix socket and back",
          "[supervisor][bridge]") {
  TempDir dir;
  std::string socket_path = dir / "proxy.sock";
  UnixEchoServer echo(socket_path);

  pid_t child = -1;
  std::uint16_t port = 0;
  std::string error = StartBridge("127.0.0.1:0", socket_path, &child, &port);
  REQUIRE(error.empty());
  REQUIRE(child > 0);
  REQUIRE(port != 0);

  int fd = DialTcp(port);
  CHECK(fd >= 0);
  if (fd >= 0) CHECK(RoundTrip(fd, "hello through the bridge") == "hello through the bridge");

  // More than a few of the bridge's 64 KiB buffers, both ways at once.
  std::string big(3 * 1024 * 1024 + 17, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 % 251);
  fd = DialTcp(port);
  CHECK(fd >= 0);
  if (fd >= 0) CHECK(RoundTrip(fd, big) == big);
  CHECK(echo.connections() == 2);

  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

TEST_CASE("supervisor: bridge: a proxy that is not there closes the TCP connection",
          "[supervisor][bridge]") {
  TempDir dir;
  pid_t child = -1;
  std::uint16_t port = 0;
  REQUIRE(StartBridge("127.0.0.1:0", dir / "absent.sock", &child, &port).empty());
  int fd = DialTcp(port);
  CHECK(fd >= 0);
  if (fd >= 0) CHECK(RoundTrip(fd, "anyone?").empty());
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

TEST_CASE("supervisor: bridge: bad addresses and taken ports are reported before any fork",
          "[supervisor][bridge]") {
  pid_t child = -1;
  CHECK_THAT(StartBridge("localhost:3128", "/tmp/x.sock", &child), Contains("numeric IP"));
  CHECK_THAT(StartBridge("127.0.0.1", "/tmp/x.sock", &child), Contains("ADDRESS:PORT"));
  CHECK_THAT(StartBridge("127.0.0.1:65536", "/tmp/x.sock", &child), Contains("port"));
  CHECK_THAT(StartBridge("127.0.0.1:31x", "/tmp/x.sock", &child), Contains("port"));
  CHECK_THAT(StartBridge("127.0.0.1:0", std::string(200, 'a'), &child), Contains("proxy socket"));

  int taken = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  REQUIRE(bind(taken, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(listen(taken, 1) == 0);
  socklen_t length = sizeof address;
  getsockname(taken, reinterpret_cast<sockaddr*>(&address), &length);
  std::string listen_at = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  CHECK_THAT(StartBridge(listen_at, "/tmp/x.sock", &child), Contains("cannot listen on"));
  CHECK(child == -1);
  close(taken);
}

TEST_CASE("supervisor: bridge: the bridge ends when the process that started it ends",
          "[supervisor][bridge]") {
  TempDir dir;
  int pipe_fds[2];
  REQUIRE(pipe2(pipe_fds, O_CLOEXEC) == 0);
  pid_t starter = fork();
  REQUIRE(starter >= 0);
  if (starter == 0) {
    pid_t bridge = -1;
    if (!StartBridge("127.0.0.1:0", dir / "proxy.sock", &bridge).empty()) _exit(1);
    if (write(pipe_fds[1], &bridge, sizeof bridge) != sizeof bridge) _exit(2);
    _exit(0);
  }
  close(pipe_fds[1]);
  pid_t bridge = -1;
  CHECK(read(pipe_fds[0], &bridge, sizeof bridge) == sizeof bridge);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(starter, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  REQUIRE(bridge > 0);
  bool ended = false;
  for (int i = 0; i < 200 && !ended; ++i) {
    ended = Ended(bridge);
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(ended);
}

TEST_CASE("supervisor: mojoup-sandbox-init end to end", "[supervisor][e2e]") {
  if (std::string reason = LandlockSkipReason(); !reason.empty()) {
    RequireLandlockRefusal(reason);
    return;
  }
  const std::string init = BinDir() + "/mojoup-sandbox-init";
  REQUIRE(Exists(init));
  TempDir allowed;
  TempDir other;

  SECTION("the command runs confined and its exit status comes back") {
    auto run = RunWithEnv({}, {init, "--write", allowed.path(), "--", "/bin/sh", "-c",
                               "touch " + (allowed / "ok") + " && ! touch " + (other / "no") +
                                   " && echo quiet > /dev/null"});
    INFO(run.result.err);
    CHECK(run.result.outcome == mojoup::probe::CommandResult::Outcome::kExited);
    CHECK(run.result.exit_code == 0);
    CHECK(Exists(allowed / "ok"));
    CHECK_FALSE(Exists(other / "no"));

    run = RunWithEnv({}, {init, "--write=" + allowed.path(), "/bin/sh", "-c", "exit 7"});
    CHECK(run.result.exit_code == 7);
  }
  SECTION("a --write directory that does not exist refuses to run the command") {
    auto run = RunWithEnv({}, {init, "--write", allowed / "missing", "--", "/bin/sh", "-c",
                               "touch " + (allowed / "ran")});
    CHECK(run.result.exit_code == 126);
    CHECK_THAT(run.result.err, Contains("mojoup-sandbox-init: "));
    CHECK_THAT(run.result.err, Contains(allowed / "missing"));
    CHECK_FALSE(Exists(allowed / "ran"));
  }
  SECTION("a command that is not there exits 127, one that cannot run 126") {
    auto run = RunWithEnv({}, {init, "--write", allowed.path(), "--", "mojoup-no-such-command"});
    CHECK(run.result.exit_code == 127);
    CHECK_THAT(run.result.err, Contains("mojoup-sandbox-init: cannot run mojoup-no-such-command: "
                                        "No such file or directory"));
    run = RunWithEnv({}, {init, "--", allowed.path()});
    CHECK(run.result.exit_code == 126);
    CHECK_THAT(run.result.err, Contains("cannot run " + allowed.path()));
  }
  SECTION("usage mistakes refuse to run the command") {
    auto run = RunWithEnv({}, {init, "--write", allowed.path()});
    CHECK(run.result.exit_code == 126);
    CHECK_THAT(run.result.err, Contains("no command"));
    run = RunWithEnv({}, {init, "--no-such-option", "--", "/bin/true"});
    CHECK(run.result.exit_code == 126);
    CHECK_THAT(run.result.err, Contains("unknown option --no-such-option"));
    run = RunWithEnv({}, {init, "--listen", "127.0.0.1:1", "--", "/bin/true"});
    CHECK(run.result.exit_code == 126);
    run = RunWithEnv({}, {init, "--help"});
    CHECK(run.result.exit_code == 0);
    CHECK_THAT(run.result.out, Contains("Usage: mojoup-sandbox-init"));
  }
  SECTION("the command reaches the unix socket through the TCP bridge") {
    if (!Exists("/bin/bash")) MOJOUP_SKIP("no /bin/bash for its /dev/tcp");
    UnixEchoServer echo(allowed / "proxy.sock");
    // A free port, found by letting the kernel pick one and giving it back.
    int probe = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    REQUIRE(bind(probe, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    socklen_t length = sizeof address;
    getsockname(probe, reinterpret_cast<sockaddr*>(&address), &length);
    std::string port = std::to_string(ntohs(address.sin_port));
    close(probe);

    auto run = RunWithEnv(
        {}, {init, "--proxy-socket", allowed / "proxy.sock", "--listen", "127.0.0.1:" + port,
             "--write", allowed.path(), "--", "/bin/bash", "-c",
             "exec 3<>/dev/tcp/127.0.0.1/" + port + " && echo ping >&3 && head -n1 <&3"});
    INFO(run.result.err);
    CHECK(run.result.exit_code == 0);
    CHECK(run.result.out == "ping\n");
  }
}

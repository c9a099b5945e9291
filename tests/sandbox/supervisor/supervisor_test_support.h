// Helpers the supervisor's tests share: forked children (a restriction binds
// the process that applies it for good), errno expectations, what a kernel
// without Landlock ABI 3 must do instead, and a stand-in for the proxy socket.
#pragma once

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "../../support/test_support.h"
#include "landlock.h"
#include "mojoup/probe/minimums.h"

namespace mojoup::supervisor::test {

using mojoup::test::BinDir;
using mojoup::test::TempDir;

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
inline ChildOutcome InChild(const std::function<std::string()>& body) {
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
inline std::string Expect(bool ok, const std::string& what) {
  return ok ? std::string() : what + " (errno " + std::strerror(errno) + ")\n";
}

// The call failed with exactly `error`.
inline std::string ExpectFailure(long rc, int error, const std::string& what) {
  if (rc == -1 && errno == error) return {};
  return what + ": expected " + strerrorname_np(error) + ", got rc " + std::to_string(rc) +
         (rc == -1 ? std::string(" ") + strerrorname_np(errno) : std::string()) + "\n";
}

inline std::string SetNoNewPrivs() {
  return Expect(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "prctl(PR_SET_NO_NEW_PRIVS)");
}

inline std::string CreateFile(const std::string& path, int* error) {
  int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  *error = fd < 0 ? errno : 0;
  if (fd >= 0) close(fd);
  return path;
}

inline std::string LandlockSkipReason() {
  int abi = LandlockAbi();
  if (abi < 0) return "this kernel has no usable Landlock (errno " + std::to_string(-abi) + ")";
  if (abi < mojoup::probe::kMinLandlockAbi) {
    return "this kernel's Landlock ABI is " + std::to_string(abi) + ", the supervisor needs 3";
  }
  return {};
}

inline bool Exists(const std::string& path) { return std::filesystem::exists(path); }

// On a kernel without Landlock ABI 3 the safe outcome is a refusal: writes
// cannot be confined, so ApplyLandlock names why and the command never runs.
// That is a property of the kernel to assert, not a component to skip for.
inline void RequireLandlockRefusal(const std::string& why) {
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

}  // namespace mojoup::supervisor::test

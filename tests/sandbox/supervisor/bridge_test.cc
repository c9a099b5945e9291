// The supervisor's proxy bridge (bridge.cc): TCP in the sandbox to the
// proxy's unix socket.
#include "bridge.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <fstream>
#include <thread>

#include "../../support/test_support.h"
#include "supervisor_test_support.h"

using namespace mojoup::supervisor;
using Catch::Matchers::Contains;
using mojoup::test::TempDir;
using namespace mojoup::supervisor::test;

namespace {

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

// Escape suite: the system service (root) against local users who would
// take it down or starve each other: an allowed user holding idle
// connections, a user the service does not serve flooding its socket,
// idle connections on the health listener, and bodies built to exhaust a
// parser. The victim must still be answered, and so must /healthz.
#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "../support/real_user.h"
#include "../support/system_service.h"
#include "../support/test_support.h"
#include "fmt/format.h"

namespace {

using Catch::Matchers::Contains;
using mojoup::test::Described;
using mojoup::test::RealUser;
using mojoup::test::Run;
using mojoup::test::RunWithEnv;
using mojoup::test::UserNode;
using Clock = std::chrono::steady_clock;

int Connect(const char* socket_path, int port) {
  if (port == 0) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    ::strncpy(address.sun_path, socket_path, sizeof address.sun_path - 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A child that, as `user` (nullptr: root), opens `count` connections to the
// API socket (`port` 0) or the health listener and trickles a request
// head one byte a second on each, never finishing it, until the service
// answers or closes each. It writes one line per connection to a pipe: the
// answer's status code, or "closed".
struct Trickler {
  pid_t pid = -1;
  int report = -1;

  Trickler(const RealUser* user, const std::string& socket_path, int port, int count) {
    int pipe_fds[2];
    REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
    // The child allocates nothing: another thread may hold malloc's lock.
    std::vector<pollfd> open;
    open.reserve(static_cast<std::size_t>(count));
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(pipe_fds[0]);
      if (user != nullptr &&
          (::setgroups(0, nullptr) != 0 || ::setgid(user->gid) != 0 || ::setuid(user->uid) != 0)) {
        ::_exit(3);
      }
      Trickle(socket_path.c_str(), port, count, pipe_fds[1], open);
      ::_exit(0);
    }
    ::close(pipe_fds[1]);
    report = pipe_fds[0];
  }

  static void Trickle(const char* socket_path, int port, int count, int out,
                      std::vector<pollfd>& open) {
    constexpr std::string_view head = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    for (int i = 0; i < count; ++i) {
      const int fd = Connect(socket_path, port);
      if (fd < 0) {
        [[maybe_unused]] ssize_t w = ::write(out, "refused\n", 8);
        continue;
      }
      open.push_back({fd, POLLIN, 0});
    }
    std::size_t sent = 0;
    const auto until = Clock::now() + std::chrono::seconds(40);
    while (!open.empty() && Clock::now() < until) {
      for (pollfd& p : open) {
        const char byte = head[std::min(sent, head.size() - 1)];
        ::send(p.fd, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      }
      ++sent;
      const auto second = Clock::now() + std::chrono::seconds(1);
      while (!open.empty() && Clock::now() < second) {
        if (::poll(open.data(), open.size(), 200) <= 0) continue;
        for (auto it = open.begin(); it != open.end();) {
          if (it->revents == 0) {
            ++it;
            continue;
          }
          char answer[512];
          const ssize_t got = ::recv(it->fd, answer, sizeof answer - 1, MSG_DONTWAIT);
          char line[8] = "closed\n";
          std::size_t length = 7;
          if (got > 12 && std::string_view(answer, 9) == "HTTP/1.1 ") {
            line[0] = answer[9];
            line[1] = answer[10];
            line[2] = answer[11];
            line[3] = '\n';
            length = 4;
          }
          [[maybe_unused]] ssize_t w = ::write(out, line, length);
          ::close(it->fd);
          it = open.erase(it);
        }
      }
    }
  }

  // How many connections ended each way, once the child is done.
  std::map<std::string, int> Outcomes() {
    std::map<std::string, int> outcomes;
    std::string text;
    char buffer[4096];
    ssize_t got;
    while ((got = ::read(report, buffer, sizeof buffer)) > 0) text.append(buffer, got);
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) ++outcomes[line];
    return outcomes;
  }

  ~Trickler() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (report >= 0) ::close(report);
  }
};

long RssKiB(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// Seconds `run` took, and it.
template <class Fn>
double Timed(Fn&& fn) {
  const auto start = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST_CASE("escape: no local user starves the service or takes it down", "[escape][service]") {
  MOJOUP_REQUIRE_SYSTEM_SERVICE_USERS(alice, bob, outsider);
  const int port = 20000 + static_cast<int>((::getpid() * 7) % 20000);
  const std::string listen = "127.0.0.1:" + std::to_string(port);
  mojoup::test::SystemService system(*alice, alice->name + "," + bob->name,
                                     "\"node.service.metrics_listen\": \"" + listen + "\", ");
  UserNode alice_node(*alice);
  auto curl = [&](const std::string& path) {
    return RunWithEnv({}, {"curl", "-sS", "--max-time", "5", "http://" + listen + path});
  };
  Run ready = alice_node.Cli({"service", "node"}, system.env);
  INFO(Described(ready) << system.process->Stderr());
  REQUIRE(ready.result.exit_code == 0);
  const long rss_before = RssKiB(system.process->pid());

  // Bob holds idle connections, the outsider floods the socket, and idle
  // probes crowd the health listener: each trickles its request for ever.
  Trickler bob_idle(bob, system.socket, 0, 64);
  Trickler outsider_flood(outsider, system.socket, 0, 300);
  Trickler health_idle(nullptr, "", port, 100);

  // Alice sends a million-deep JSON and a 64 MiB body.
  auto post = [&](std::size_t bytes, char fill) {
    return alice->As(
        {"sh", "-c",
         fmt::format("head -c {} /dev/zero | tr '\\0' '{}' | curl -sS --max-time 60 --unix-socket "
                     "{} -H 'Content-Type: application/json' --data-binary @- -w '%{{http_code}}' "
                     "-o /dev/null http://mojoup-node/v1/sessions",
                     bytes, fill, system.socket)});
  };
  Run deep = post(1000000, '[');
  INFO(Described(deep));
  CHECK(deep.result.out == "400");
  Run large = post(64 << 20, 'x');
  INFO(Described(large));
  CHECK(large.result.out == "413");

  // Alice's requests and /healthz are answered, at once.
  double slowest_api = 0, slowest_health = 0;
  for (int i = 0; i < 3; ++i) {
    Run node;
    slowest_api = std::max(slowest_api, Timed([&] {
                             node = alice_node.Cli({"service", "node"}, system.env);
                           }));
    INFO(Described(node));
    CHECK(node.result.exit_code == 0);
    Run health;
    slowest_health = std::max(slowest_health, Timed([&] { health = curl("/healthz"); }));
    INFO(Described(health));
    CHECK(health.result.exit_code == 0);
  }
  // Bob's own next request is told to come back: his share is held.
  Run bob_more = bob->As({"curl", "-sS", "--max-time", "5", "--unix-socket", system.socket, "-D",
                          "-", "-o", "/dev/null", "http://mojoup-node/v1/node"});
  CHECK_THAT(bob_more.result.out, Contains("HTTP/1.1 503"));
  CHECK_THAT(bob_more.result.out, Contains("Retry-After: 1"));
  const long rss_flooded = RssKiB(system.process->pid());

  // Every trickled request ends: refused at accept, given way, or cut off
  // at the request deadline.
  const auto bob_ends = bob_idle.Outcomes();
  const auto outsider_ends = outsider_flood.Outcomes();
  const auto health_ends = health_idle.Outcomes();
  Run metrics = curl("/metrics");
  const std::string figures = fmt::format(
      "slowest alice request {:.3f} s, slowest /healthz {:.3f} s; service RSS {} KiB before, "
      "{} KiB flooded; bob {}x408 {}x503; outsider {}x403; health {}x408 {}xclosed",
      slowest_api, slowest_health, rss_before, rss_flooded,
      bob_ends.count("408") ? bob_ends.at("408") : 0,
      bob_ends.count("503") ? bob_ends.at("503") : 0,
      outsider_ends.count("403") ? outsider_ends.at("403") : 0,
      health_ends.count("408") ? health_ends.at("408") : 0,
      health_ends.count("closed") ? health_ends.at("closed") : 0);
  WARN(figures);
  INFO(metrics.result.out << system.process->Stderr());
  CHECK(outsider_ends == std::map<std::string, int>{{"403", 300}});
  CHECK(bob_ends == std::map<std::string, int>{{"408", 32}, {"503", 32}});
  CHECK(health_ends.count("refused") == 0);
  CHECK(slowest_api < 5);
  CHECK(slowest_health < 5);
  CHECK(rss_flooded - rss_before < 256 * 1024);
  CHECK_THAT(metrics.result.out,
             Contains("mojoup_connection_refusals_total{listener=\"api\",reason=\"not_allowed\"} "
                      "300"));
  CHECK_THAT(metrics.result.out,
             Contains("mojoup_connection_refusals_total{listener=\"api\",reason=\"busy_user\"}"));
  CHECK_THAT(metrics.result.out,
             Contains("mojoup_connection_refusals_total{listener=\"health\",reason=\"evicted\"}"));
  CHECK_THAT(metrics.result.out,
             Contains("mojoup_connection_refusals_total{listener=\"api\",reason=\"deadline\"} 32"));
  CHECK(system.process->Stop(std::chrono::seconds(30)) == 0);
}

}  // namespace

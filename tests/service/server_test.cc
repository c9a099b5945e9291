// The service in this process, through its seams: who calls (peer
// credentials), the clock its drain reads and how it starts its workers,
// without a real second user, a real wait or a real worker.
#include "mojoup/service/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "../support/test_support.h"
#include "mojoup/internal/fd.h"
#include "mojoup/service/client.h"
#include "protocol/messages.h"
#include "protocol/protocol.h"

using mojoup::test::TempDir;

namespace {

// A service on a socket of its own; its exit code once drained. A test
// that failed before draining it drains it on the way out.
struct InProcessService {
  explicit InProcessService(mojoup::ServiceOptions options) : socket(options.socket) {
    std::promise<int> exited;
    done = exited.get_future();
    thread = std::thread([options = std::move(options), exited = std::move(exited)]() mutable {
      exited.set_value(mojoup::RunService(std::move(options)));
    });
  }
  ~InProcessService() {
    if (done.valid() && done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      if (auto client = mojoup::ServiceClient::Connect(socket); client.ok()) {
        client->Drain().IgnoreError();
      }
    }
    if (thread.joinable()) thread.join();
  }
  std::string socket;
  std::thread thread;
  std::future<int> done;
};

// What a test service needs beside its seams: a private directory with an
// empty config, its log, and READY=1 as systemd would be told it.
struct ServiceHarness {
  TempDir dir;
  mojoup::ServiceOptions options;
  std::shared_ptr<std::string> log = std::make_shared<std::string>();
  std::shared_ptr<std::mutex> log_mu = std::make_shared<std::mutex>();
  std::future<void> answering;

  ServiceHarness() {
    ::chmod(dir.path().c_str(), 0700);
    const std::string config = dir / "node.json";
    // The native runtime: the one this host may sandbox with.
    std::ofstream(config) << R"({"node.sandbox.runtime": "native"})";
    options.config_path = config;
    options.config_named = true;
    options.socket = dir / "node.sock";
    auto ready = std::make_shared<std::promise<void>>();
    auto told = std::make_shared<std::once_flag>();
    answering = ready->get_future();
    options.notify = [ready, told](std::string_view state) {
      if (state.find("READY=1") != std::string_view::npos) {
        std::call_once(*told, [&ready] { ready->set_value(); });
      }
    };
    options.log = [log = log, log_mu = log_mu](std::string_view line) {
      std::lock_guard<std::mutex> lock(*log_mu);
      log->append(line).append("\n");
    };
  }

  std::string Said() const {
    std::lock_guard<std::mutex> lock(*log_mu);
    return *log;
  }

  // The service, once it answers, and a client of it.
  std::unique_ptr<InProcessService> Start() {
    auto service = std::make_unique<InProcessService>(std::move(options));
    const bool up = answering.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
    INFO(Said());
    REQUIRE(up);
    return service;
  }

  mojoup::ServiceClient Client() const {
    auto client = mojoup::ServiceClient::Connect(dir / "node.sock");
    REQUIRE(client.ok());
    return *std::move(client);
  }
};

void DrainAndWait(mojoup::ServiceClient& client, InProcessService& service) {
  REQUIRE(client.Drain().ok());
  REQUIRE(service.done.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  CHECK(service.done.get() == 0);
}

// The worker launches a test saw, in order.
struct Launches {
  std::mutex mu;
  std::vector<mojoup::WorkerLaunch> seen;

  std::size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return seen.size();
  }
  mojoup::WorkerLaunch at(std::size_t i) {
    std::lock_guard<std::mutex> lock(mu);
    return seen.at(i);
  }
};

// A launcher that starts nothing: it records the launch and refuses it.
std::function<absl::StatusOr<pid_t>(const mojoup::WorkerLaunch&)> Refusing(
    std::shared_ptr<Launches> launches) {
  return [launches](const mojoup::WorkerLaunch& launch) -> absl::StatusOr<pid_t> {
    std::lock_guard<std::mutex> lock(launches->mu);
    launches->seen.push_back(launch);
    return absl::ResourceExhaustedError("no worker today");
  };
}

}  // namespace

TEST_CASE("the service asks its seams who calls and what time it is", "[service]") {
  ServiceHarness harness;
  std::atomic<uid_t> caller{::geteuid()};
  std::atomic<int> clock_reads{0};
  std::atomic<int> minutes_on{0};
  const auto start = std::chrono::steady_clock::now();
  harness.options.peer_credentials = [&caller](int) -> absl::StatusOr<mojoup::PeerCredentials> {
    return mojoup::PeerCredentials{::getpid(), caller.load(), ::getegid()};
  };
  harness.options.clock = [&clock_reads, &minutes_on, start] {
    ++clock_reads;
    return start + std::chrono::minutes(minutes_on.load());
  };
  auto service = harness.Start();
  mojoup::ServiceClient client = harness.Client();
  REQUIRE(client.Sessions().ok());

  // Another user, as the seam says, is refused in the service's own words.
  caller = ::geteuid() == 0 ? 4242 : ::geteuid() + 1;
  auto refused = client.Sessions();
  REQUIRE_FALSE(refused.ok());
  CHECK(client.reason() == mojoup::Reason::kNotAllowed);
  CHECK(client.last_reason() == "not_allowed");

  // The service's own user drains it; with no session it ends at once, and
  // its drain's deadline came from the seam's clock.
  caller = ::geteuid();
  const int reads_before = clock_reads.load();
  DrainAndWait(client, *service);
  CHECK(clock_reads.load() > reads_before);
}

TEST_CASE("the service starts a clean-up after a lost worker through its launcher", "[service]") {
  ServiceHarness harness;
  // A worker a killed service left, long gone, of another user: the one
  // with an account when the service is root and becomes its users.
  const uid_t other = ::geteuid() == 0 ? 65534 : ::geteuid() + 1;
  mojoup::service::WorkerEntry entry;
  entry.id = "0123456789abcdef";
  entry.uid = other;
  entry.user = "someone";
  entry.pid = 2;  // never a worker; no start time either
  entry.repo = "/src/app";
  entry.started_at = "2026-01-02T03:04:05Z";
  REQUIRE(::mkdir((harness.dir / "node-workers").c_str(), 0700) == 0);
  std::ofstream(harness.dir / ("node-workers/" + entry.id + ".json"))
      << mojoup::service::WorkerEntryJson(entry);
  auto launches = std::make_shared<Launches>();
  harness.options.launch_worker = Refusing(launches);
  auto service = harness.Start();

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (launches->size() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  INFO(harness.Said());
  REQUIRE(launches->size() == 1);
  const mojoup::WorkerLaunch launch = launches->at(0);
  CHECK(launch.command == "__session-reap");
  CHECK(launch.identity.uid == other);
  CHECK(launch.identity.change == (::geteuid() == 0));
  CHECK(launch.control == -1);
  CHECK(launch.listener == -1);
  mojoup::ServiceClient client = harness.Client();
  DrainAndWait(client, *service);
  CHECK_THAT(harness.Said(),
             Catch::Matchers::Contains("cannot start a worker (__session-reap): no worker today"));
}

TEST_CASE("a worker the launcher cannot start is the client's refusal", "[service]") {
  ServiceHarness harness;
  auto launches = std::make_shared<Launches>();
  harness.options.launch_worker = Refusing(launches);
  auto service = harness.Start();
  mojoup::ServiceClient client = harness.Client();

  mojoup::RunRequest request;
  request.workdir = harness.dir.path();
  request.command = {"true"};
  auto started = client.Start(request, {});
  REQUIRE_FALSE(started.ok());
  if (client.reason() == mojoup::Reason::kCannotSandbox) {
    DrainAndWait(client, *service);
    MOJOUP_SKIP("this host cannot sandbox, so no session gets as far as its worker: "
                << started.status().message());
  }
  CHECK(started.status().message() == "cannot start the session's worker");
  CHECK(client.reason() == mojoup::Reason::kInternal);
  REQUIRE(launches->size() == 1);
  const mojoup::WorkerLaunch launch = launches->at(0);
  CHECK(launch.command == "__session-worker");
  CHECK(launch.identity.uid == ::geteuid());
  CHECK_FALSE(launch.identity.change);
  CHECK(launch.control >= 0);
  CHECK(launch.listener >= 0);
  // Nothing is left of the session that did not start.
  auto sessions = client.Sessions();
  REQUIRE(sessions.ok());
  CHECK(sessions->empty());
  DrainAndWait(client, *service);
}

namespace {

// GET `path` on 127.0.0.1:`port` (HTTP/1.0): the whole answer, "" when none
// came within 10 s.
std::string HttpGet(int port, const std::string& path) {
  mojoup::internal::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) return "";
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: metrics\r\n\r\n";
  if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) < 0) return "";
  std::string answer;
  char buffer[4096];
  for (;;) {
    pollfd wait{fd.get(), POLLIN, 0};
    if (::poll(&wait, 1, 10000) <= 0) return "";
    const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got <= 0) return answer;
    answer.append(buffer, static_cast<std::size_t>(got));
  }
}

// Session workers a test speaks for: the service gets a `cat` as the
// worker's process (it ends, with 0, when the test closes its input) and
// the test holds the worker's end of the control socket.
struct FakeWorkers {
  std::mutex mu;
  std::vector<int> controls;
  std::vector<int> inputs;  // each cat's stdin

  static std::function<absl::StatusOr<pid_t>(const mojoup::WorkerLaunch&)> Launcher(
      std::shared_ptr<FakeWorkers> fakes) {
    return [fakes](const mojoup::WorkerLaunch& launch) -> absl::StatusOr<pid_t> {
      int pipe[2];
      if (::pipe2(pipe, O_CLOEXEC) != 0) return absl::InternalError("pipe");
      posix_spawn_file_actions_t actions;
      posix_spawn_file_actions_init(&actions);
      posix_spawn_file_actions_adddup2(&actions, pipe[0], 0);
      pid_t pid = -1;
      char cat[] = "cat";
      char* argv[] = {cat, nullptr};
      const int spawned = ::posix_spawnp(&pid, "cat", &actions, nullptr, argv, environ);
      posix_spawn_file_actions_destroy(&actions);
      ::close(pipe[0]);
      if (spawned != 0) return absl::InternalError("cannot spawn cat");
      std::lock_guard<std::mutex> lock(fakes->mu);
      fakes->controls.push_back(::fcntl(launch.control, F_DUPFD_CLOEXEC, 0));
      fakes->inputs.push_back(pipe[1]);
      return pid;
    };
  }
  // The control socket of the `n`th worker, once launched.
  int Control(std::size_t n) {
    for (int i = 0; i < 3000; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (controls.size() > n) return controls[n];
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
};

// A session started through `client`, its worker answering as started.
absl::Status StartFake(mojoup::ServiceClient& client, FakeWorkers& fakes, std::size_t n,
                       const std::string& workdir) {
  mojoup::RunRequest request;
  request.workdir = workdir;
  request.command = {"true"};
  std::thread worker([&fakes, n] {
    const int control = fakes.Control(n);
    if (control < 0 || !mojoup::service::ReceivePacket(control, std::chrono::seconds(30)).ok()) {
      return;
    }
    mojoup::service::WorkerAnswer answer;
    answer.status = mojoup::service::StartStatus::kStarted;
    mojoup::service::SendPacket(control, WorkerAnswerJson(answer)).IgnoreError();
  });
  auto started = client.Start(request, {.detach = true});
  worker.join();
  return started.status();
}

// A port nothing listens on now.
int FreePort() {
  mojoup::internal::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), size) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    return -1;
  }
  return ntohs(address.sin_port);
}

std::string Tally(std::uint64_t allowed, std::uint64_t pending) {
  mojoup::service::WorkerTally tally;
  tally.egress.allowed = allowed;
  tally.approvals.pending = pending;
  return mojoup::service::WorkerTallyJson(tally);
}

}  // namespace

// A worker runs as its session's user: the service takes what it says of
// its own session only, never a count that goes down, nothing malformed.
TEST_CASE("the service takes each worker's tally for its own session, never backwards",
          "[service]") {
  ServiceHarness harness;
  const int port = FreePort();
  REQUIRE(port > 0);
  std::ofstream(harness.options.config_path)
      << R"({"node.sandbox.runtime": "native", "node.service.metrics_listen": "127.0.0.1:)" << port
      << "\"}";
  auto fakes = std::make_shared<FakeWorkers>();
  harness.options.launch_worker = FakeWorkers::Launcher(fakes);
  auto service = harness.Start();
  mojoup::ServiceClient client = harness.Client();
  absl::Status first = StartFake(client, *fakes, 0, harness.dir.path());
  if (client.reason() == mojoup::Reason::kCannotSandbox) {
    DrainAndWait(client, *service);
    MOJOUP_SKIP("this host cannot sandbox, so no session gets as far as its worker");
  }
  REQUIRE(first.ok());
  REQUIRE(StartFake(client, *fakes, 1, harness.dir.path()).ok());
  std::string text;
  auto shows = [&](const std::vector<std::string>& lines) {
    return mojoup::test::WaitFor(
        [&] {
          text = HttpGet(port, "/metrics");
          for (const std::string& line : lines) {
            if (text.find(line + "\n") == std::string::npos) return false;
          }
          return true;
        },
        std::chrono::seconds(30));
  };
  const int a = fakes->Control(0), b = fakes->Control(1);
  using mojoup::service::SendPacket;
  REQUIRE(SendPacket(a, Tally(5, 2)).ok());
  REQUIRE(SendPacket(b, Tally(3, 1)).ok());
  INFO(harness.Said());
  CHECK(shows(
      {R"(mojoup_egress_decisions_total{outcome="allowed"} 8)", "mojoup_approvals_pending 3"}));
  // Out of bounds or malformed: not taken, so the tally after it, lower
  // than the bad one, still is.
  for (const std::string& bad :
       {Tally(9, 65), std::string(R"({"schema":"mojoup.service.tally/v1"})"),
        std::string("not json"), Tally(7, 0) + "x", Tally(3, 0)}) {
    REQUIRE(SendPacket(b, bad).ok());
  }
  // Backwards: not taken, and said once.
  REQUIRE(SendPacket(a, Tally(2, 0)).ok());
  CHECK(mojoup::test::WaitFor(
      [&] { return harness.Said().find("its worker's counts went down") != std::string::npos; },
      std::chrono::seconds(30)));
  CHECK(shows(
      {R"(mojoup_egress_decisions_total{outcome="allowed"} 8)", "mojoup_approvals_pending 2"}));
  CHECK_THAT(harness.Said(), Catch::Matchers::Contains("must be at most 64"));
  // The first session ends: what it counted stays, what it had pending goes.
  REQUIRE(SendPacket(a, Tally(6, 4)).ok());
  CHECK(shows(
      {R"(mojoup_egress_decisions_total{outcome="allowed"} 9)", "mojoup_approvals_pending 4"}));
  ::close(fakes->inputs[0]);
  CHECK(shows({R"(mojoup_sessions_ended_total{outcome="success"} 1)",
               R"(mojoup_egress_decisions_total{outcome="allowed"} 9)",
               "mojoup_approvals_pending 0"}));
  ::close(fakes->inputs[1]);
  CHECK(shows({R"(mojoup_sessions_ended_total{outcome="success"} 2)",
               R"(mojoup_egress_decisions_total{outcome="allowed"} 9)",
               "mojoup_approvals_pending 0"}));
  for (int control : fakes->controls) ::close(control);
  DrainAndWait(client, *service);
}

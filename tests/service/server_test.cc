// The service in this process, through its seams: who calls (peer
// credentials), the clock its drain reads and how it starts its workers,
// without a real second user, a real wait or a real worker.
#include "mojoup/service/server.h"

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
#include "mojoup/service/client.h"
#include "protocol/messages.h"

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

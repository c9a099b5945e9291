// The service in this process, through its seams: who calls (peer
// credentials) and the clock its drain reads, without a real second user or
// a real wait.
#include "mojoup/service/server.h"

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

using mojoup::test::TempDir;

namespace {

// A service on a socket of its own; its exit code once drained.
struct InProcessService {
  explicit InProcessService(mojoup::ServiceOptions options) {
    std::promise<int> exited;
    done = exited.get_future();
    thread = std::thread([options = std::move(options), exited = std::move(exited)]() mutable {
      exited.set_value(mojoup::RunService(std::move(options)));
    });
  }
  ~InProcessService() {
    if (thread.joinable()) thread.join();
  }
  std::thread thread;
  std::future<int> done;
};

}  // namespace

TEST_CASE("the service asks its seams who calls and what time it is", "[service]") {
  TempDir dir;
  ::chmod(dir.path().c_str(), 0700);
  const std::string config = dir / "node.json";
  std::ofstream(config) << "{}";
  std::atomic<uid_t> caller{::geteuid()};
  std::atomic<int> clock_reads{0};
  std::atomic<int> minutes_on{0};
  const auto start = std::chrono::steady_clock::now();

  mojoup::ServiceOptions options;
  options.config_path = config;
  options.config_named = true;
  options.socket = dir / "node.sock";
  options.peer_credentials = [&caller](int) -> absl::StatusOr<mojoup::PeerCredentials> {
    return mojoup::PeerCredentials{::getpid(), caller.load(), ::getegid()};
  };
  options.clock = [&clock_reads, &minutes_on, start] {
    ++clock_reads;
    return start + std::chrono::minutes(minutes_on.load());
  };
  // READY=1, as systemd would be told, once the service answers.
  auto ready = std::make_shared<std::promise<void>>();
  auto told = std::make_shared<std::once_flag>();
  std::future<void> answering = ready->get_future();
  options.notify = [ready, told](std::string_view state) {
    if (state.find("READY=1") != std::string_view::npos) {
      std::call_once(*told, [&ready] { ready->set_value(); });
    }
  };
  auto log = std::make_shared<std::string>();
  auto log_mu = std::make_shared<std::mutex>();
  options.log = [log, log_mu](std::string_view line) {
    std::lock_guard<std::mutex> lock(*log_mu);
    log->append(line).append("\n");
  };
  InProcessService service(std::move(options));
  auto said = [log, log_mu] {
    std::lock_guard<std::mutex> lock(*log_mu);
    return *log;
  };

  const bool up = answering.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  INFO(said());
  REQUIRE(up);
  auto client = mojoup::ServiceClient::Connect(dir / "node.sock");
  REQUIRE(client.ok());
  REQUIRE(client->Sessions().ok());

  // Another user, as the seam says, is refused in the service's own words.
  caller = ::geteuid() == 0 ? 4242 : ::geteuid() + 1;
  auto refused = client->Sessions();
  REQUIRE_FALSE(refused.ok());
  CHECK(client->reason() == mojoup::Reason::kNotAllowed);
  CHECK(client->last_reason() == "not_allowed");

  // The service's own user drains it; with no session it ends at once, and
  // its drain's deadline came from the seam's clock.
  caller = ::geteuid();
  const int reads_before = clock_reads.load();
  REQUIRE(client->Drain().ok());
  REQUIRE(service.done.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  CHECK(service.done.get() == 0);
  CHECK(clock_reads.load() > reads_before);
}

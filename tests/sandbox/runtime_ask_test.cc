// The runtime's ask as a session runs it: refusals read from a runtime
// whose proxy refuses by itself, names resolved through a seam, and a stop
// that does not wait for a whole read's worth of slow names.
#include "session/runtime_ask.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

using mojoup::sandbox::EgressRefusal;
using mojoup::sandbox::EgressRefusals;
using mojoup::sandbox::RuntimeAsk;
using mojoup::sandbox::RuntimeAskOptions;
namespace credproxy = mojoup::credproxy;

namespace {

using Clock = std::chrono::steady_clock;

// A runtime whose proxy refused `batch` once, then nothing more.
class RefusingBackend : public mojoup::sandbox::Backend {
 public:
  explicit RefusingBackend(std::vector<EgressRefusal> batch) : batch_(std::move(batch)) {}
  std::string_view name() const override { return "refusing"; }
  bool RefusesEgressItself() const override { return true; }
  absl::StatusOr<EgressRefusals> NewRefusals(const std::string&) override {
    std::lock_guard lock(mu_);
    ++reads_;
    read_.notify_all();
    EgressRefusals refusals;
    refusals.refusals.swap(batch_);
    return refusals;
  }
  // Waits (up to 10 s) until the runtime was read `count` times.
  bool WaitForReads(int count) {
    std::unique_lock lock(mu_);
    return read_.wait_for(lock, std::chrono::seconds(10), [&] { return reads_ >= count; });
  }
  absl::StatusOr<std::string> Create(const mojoup::sandbox::SandboxSpec&) override {
    return absl::UnimplementedError("not here");
  }
  absl::StatusOr<int> Run(const std::string&, const mojoup::sandbox::Stdio&) override {
    return absl::UnimplementedError("not here");
  }
  absl::Status Signal(const std::string&, int) override {
    return absl::UnimplementedError("not here");
  }
  absl::Status Resize(const std::string&, unsigned short, unsigned short) override {
    return absl::UnimplementedError("not here");
  }
  absl::Status Remove(const std::string&) override { return absl::OkStatus(); }
  absl::StatusOr<std::vector<mojoup::sandbox::SandboxInfo>> List(
      const std::map<std::string, std::string>&) override {
    return std::vector<mojoup::sandbox::SandboxInfo>{};
  }

 private:
  std::mutex mu_;
  std::condition_variable read_;
  int reads_ = 0;
  std::vector<EgressRefusal> batch_;
};

EgressRefusal Unlisted(const std::string& host) {
  EgressRefusal refusal;
  refusal.method = "CONNECT";
  refusal.host = host;
  refusal.port = 443;
  refusal.by = "openshell";
  refusal.code = "policy_denied";
  refusal.unlisted = true;
  return refusal;
}

// A resolver that counts the names it was asked and answers each with a
// public address, or (slow) is still resolving at every deadline.
struct CountingResolver {
  std::mutex mu;
  std::condition_variable asked;
  std::vector<std::string> names;
  bool slow = false;
  mojoup::sandbox::Resolver Seam() {
    return [this](const std::string& host,
                  std::chrono::milliseconds deadline) -> absl::StatusOr<std::vector<std::string>> {
      std::unique_lock lock(mu);
      names.push_back(host);
      asked.notify_all();
      if (!slow) return std::vector<std::string>{"93.184.216.34"};
      // Nothing answers: the wait ends at the deadline, as a lost DNS reply.
      asked.wait_for(lock, deadline, [] { return false; });
      return absl::DeadlineExceededError(host + " did not resolve in time");
    };
  }
};

}  // namespace

TEST_CASE("runtime ask: stopping does not wait for a read's worth of slow names", "[openshell]") {
  std::vector<EgressRefusal> batch;
  for (int i = 0; i < 200; ++i) batch.push_back(Unlisted("slow" + std::to_string(i) + ".example"));
  RefusingBackend backend(batch);
  CountingResolver resolver;
  resolver.slow = true;
  auto approvals = std::make_shared<credproxy::Approvals>(
      credproxy::ApprovalsOptions{.session = "s", .max_pending = 1000});
  RuntimeAskOptions options;
  options.backend = &backend;
  options.interval = std::chrono::milliseconds(10);
  options.resolve_deadline = std::chrono::milliseconds(300);
  options.resolve = resolver.Seam();
  RuntimeAsk ask(options);
  ask.Start("sandbox", approvals);
  {
    std::unique_lock lock(resolver.mu);
    REQUIRE(resolver.asked.wait_for(lock, std::chrono::seconds(10),
                                    [&] { return !resolver.names.empty(); }));
  }
  // 200 names at 300 ms each would be a minute; one name under way is 300 ms.
  const Clock::time_point stopping = Clock::now();
  ask.Stop();
  CHECK(Clock::now() - stopping < std::chrono::seconds(2));
  std::lock_guard lock(resolver.mu);
  CHECK(resolver.names.size() == 1);
  CHECK(approvals->Count().pending == 0);
}

TEST_CASE("runtime ask: a host and port already asked about, or a full list, is not resolved",
          "[openshell]") {
  auto approvals = std::make_shared<credproxy::Approvals>(
      credproxy::ApprovalsOptions{.session = "s", .max_pending = 2});
  const credproxy::Approvals::Asked denied = approvals->Ask("denied.example", 443, "CONNECT");
  REQUIRE(approvals->Decide(denied.approval.id, {.approve = false, .by = "alice", .reason = "no"})
              .ok());
  std::vector<EgressRefusal> batch(20, Unlisted("again.example"));
  batch.push_back(Unlisted("denied.example"));
  for (int i = 0; i < 10; ++i) batch.push_back(Unlisted("h" + std::to_string(i) + ".example"));
  RefusingBackend backend(batch);
  CountingResolver resolver;
  RuntimeAskOptions options;
  options.backend = &backend;
  options.interval = std::chrono::milliseconds(10);
  options.resolve = resolver.Seam();
  RuntimeAsk ask(options);
  ask.Start("sandbox", approvals);
  // The second read starts once the first one's refusals are all handled.
  REQUIRE(backend.WaitForReads(2));
  ask.Stop();
  // again.example once (then pending), denied.example never, h0 (the
  // second pending), and nothing after the list was full.
  std::lock_guard lock(resolver.mu);
  CHECK(resolver.names == std::vector<std::string>{"again.example", "h0.example"});
  const credproxy::Approvals::Counts counts = approvals->Count();
  CHECK(counts.pending == 2);
  CHECK(counts.denied == 1);
}

// Ask: a request to a destination no rule decided, held for the operator's
// answer (Approvals), where the session's policy and node allow it.
// g++ 12 mistakes an Asio coroutine frame's sized delete for a mismatch
// (GCC bug 109224, fixed in 13): see forward.cc.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include <algorithm>

#include "server.h"

namespace mojoup::credproxy {
namespace {

// However the node is configured, no request is held longer.
constexpr std::chrono::milliseconds kMaxHold = std::chrono::seconds(300);

}  // namespace

// Cancels a registered wake when the waiting coroutine ends, however it ends
// (outside the anonymous namespace: a coroutine's frame holds it).
struct AskWakeRegistration {
  Approvals& approvals;
  std::uint64_t id;
  ~AskWakeRegistration() { approvals.CancelWake(id); }
};

std::function<void()> Proxy::Impl::Waker(const std::shared_ptr<asio::steady_timer>& timer) {
  // From the deciding thread: the timer is the serving thread's, so the
  // cancel is posted there, and only while the proxy still serves.
  return [gate = wake_gate, weak = std::weak_ptr<asio::steady_timer>(timer)] {
    std::lock_guard lock(gate->mu);
    if (gate->io == nullptr) return;
    asio::post(*gate->io, [weak] {
      if (auto alive = weak.lock()) alive->cancel();
    });
  };
}

awaitable<void> Proxy::Impl::AwaitApprovals(std::uint64_t seen, Clock::time_point until) {
  Approvals& approvals = *options.approvals;
  auto timer = std::make_shared<asio::steady_timer>(io, until);
  AskWakeRegistration registration{approvals, approvals.OnNextChange(Waker(timer))};
  // A change between the caller's look and the registration is not missed.
  if (approvals.version() != seen) co_return;
  beast::error_code ec;
  co_await timer->async_wait(asio::redirect_error(use_awaitable, ec));
}

std::chrono::milliseconds Proxy::Impl::Hold() const {
  return std::min(options.approvals->options().hold, kMaxHold);
}

awaitable<Proxy::Impl::AskAnswer> Proxy::Impl::AskOperator(const std::string& method,
                                                           const std::string& host,
                                                           std::uint16_t port) {
  AskAnswer answer;
  // What would be refused once approved is never asked: a name that
  // resolves only to blocked addresses, say.
  Resolved resolved = co_await Resolve(host, port);
  if (resolved.refusal || !resolved.error.empty()) {
    answer.refusal = std::move(resolved.refusal);
    answer.error = std::move(resolved.error);
    co_return answer;
  }
  Approvals& approvals = *options.approvals;
  const auto hold = Hold();
  const auto until = Clock::now() + hold;
  for (;;) {
    const std::uint64_t seen = approvals.version();
    Approvals::Asked asked = approvals.Ask(host, port, method);
    const Approval& approval = asked.approval;
    switch (asked.outcome) {
      case Approvals::Asked::Outcome::kGranted:
        answer.granted = approval;
        co_return answer;
      case Approvals::Asked::Outcome::kDenied:
        answer.refusal =
            Refusal::ApprovalDenied(host, port, approval.id, approval.by, approval.reason);
        answer.approval = approval.id;
        co_return answer;
      case Approvals::Asked::Outcome::kFull:
        answer.refusal = Refusal::ApprovalLimit(host, port, approvals.options().max_pending);
        co_return answer;
      case Approvals::Asked::Outcome::kPending:
        break;
    }
    if (Clock::now() >= until) {
      answer.refusal = Refusal::ApprovalPending(
          host, port, approval.id, std::chrono::duration_cast<std::chrono::seconds>(hold));
      answer.approval = approval.id;
      co_return answer;
    }
    co_await AwaitApprovals(seen, until);
  }
}

std::string Proxy::Impl::GrantRule(const Approval& approval) {
  return fmt::format("approved {}:{} (approval {} by {}, scope {})", approval.host, approval.port,
                     approval.id, approval.by, ApprovalScopeName(approval.scope));
}

}  // namespace mojoup::credproxy

#include "session/runtime_ask.h"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "mojoup/credproxy/proxy.h"

namespace mojoup::sandbox {
namespace {

// The addresses `host` resolves to on this node (none when it does not), or
// DeadlineExceeded when it is still resolving at `deadline`. getaddrinfo has
// no deadline of its own: it runs on a thread that owns what it shares, left
// to finish when the caller gives up.
absl::StatusOr<std::vector<std::string>> ResolveWithin(const std::string& host,
                                                       std::chrono::milliseconds deadline) {
  struct Shared {
    std::mutex mu;
    std::condition_variable done;
    bool finished = false;
    std::vector<std::string> addresses;
  };
  auto shared = std::make_shared<Shared>();
  std::thread([shared, host] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    std::vector<std::string> addresses;
    if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) == 0) {
      for (addrinfo* at = found; at != nullptr; at = at->ai_next) {
        char text[NI_MAXHOST] = {};
        if (::getnameinfo(at->ai_addr, at->ai_addrlen, text, sizeof text, nullptr, 0,
                          NI_NUMERICHOST) == 0) {
          addresses.emplace_back(text);
        }
      }
      ::freeaddrinfo(found);
    }
    std::lock_guard lock(shared->mu);
    shared->addresses = std::move(addresses);
    shared->finished = true;
    shared->done.notify_all();
  }).detach();
  std::unique_lock lock(shared->mu);
  if (!shared->done.wait_for(lock, deadline, [&] { return shared->finished; })) {
    return absl::DeadlineExceededError(
        fmt::format("{} did not resolve within {} ms", host, deadline.count()));
  }
  return shared->addresses;
}

std::string Full(std::size_t max_pending) {
  return fmt::format("{} approvals are pending already", max_pending);
}

std::string NotApplied(const credproxy::Approval& approval) {
  return fmt::format("approval {} for {}:{} was not applied: the session ended", approval.id,
                     approval.host, approval.port);
}

}  // namespace

std::string NotAskable(const policy::NetworkRules& rules, const std::string& host,
                       std::uint16_t port, const std::map<std::string, std::string>& pins,
                       std::chrono::milliseconds resolve_deadline, const Resolver& resolve) {
  const policy::NetworkRules::Ruling ruling = rules.RuleOn(host, port);
  if (ruling.rule != nullptr) {
    return ruling.allowed ? fmt::format(
                                "the session's rules allow it ({}), so the runtime refused "
                                "it for reasons of its own",
                                ruling.Describe())
                          : fmt::format("a rule denies it ({})", ruling.Describe());
  }
  if (const policy::NetworkRules::Rule* denying = rules.DenyingHost(host); denying != nullptr) {
    return fmt::format("a rule denies the host ({})", denying->Describe());
  }
  // An IPv6 literal is checked as it is; a name (or a number such as
  // "127.1") by what it resolves to.
  if (host.size() > 2 && host.front() == '[') {
    return credproxy::IsBlockedAddress(host.substr(1, host.size() - 2))
               ? fmt::format("{} is an address the session never reaches", host)
               : "";
  }
  if (pins.count(fmt::format("{}:{}", host, port)) != 0) return "";
  if (resolve_deadline <= std::chrono::milliseconds::zero()) {
    return fmt::format("no time was left to resolve {}, so its addresses could not be checked",
                       host);
  }
  const auto resolved =
      resolve ? resolve(host, resolve_deadline) : ResolveWithin(host, resolve_deadline);
  if (!resolved.ok()) {
    return fmt::format("{}, so its addresses could not be checked",
                       std::string(resolved.status().message()));
  }
  if (resolved->empty()) {
    return fmt::format("{} does not resolve on this node, so its addresses could not be checked",
                       host);
  }
  for (const std::string& each : *resolved) {
    if (credproxy::IsBlockedAddress(each)) {
      return fmt::format("{} resolves to {}, an address the session never reaches", host, each);
    }
  }
  return "";
}

void RuntimeAsk::Start(const std::string& sandbox,
                       std::shared_ptr<credproxy::Approvals> approvals) {
  sandbox_ = sandbox;
  approvals_ = std::move(approvals);
  thread_ = std::thread([this] { Loop(); });
}

void RuntimeAsk::Approved(const credproxy::Approval& approval) {
  if (approval.state != credproxy::ApprovalState::kApproved) return;
  absl::MutexLock lock(&mu_);
  if (!stop_) grants_.push_back(approval);
}

void RuntimeAsk::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

bool RuntimeAsk::Stopping() {
  absl::MutexLock lock(&mu_);
  return stop_;
}

void RuntimeAsk::Loop() {
  for (;;) {
    std::deque<credproxy::Approval> grants;
    bool ending = false;
    {
      absl::MutexLock lock(&mu_);
      auto woken = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || !grants_.empty(); };
      mu_.AwaitWithTimeout(absl::Condition(&woken), absl::FromChrono(options_.interval));
      ending = stop_;
      grants.swap(grants_);
    }
    if (ending) {
      // The last refusals go to the audit before the sandbox does; what was
      // approved but not yet applied is said, not applied.
      for (const credproxy::Approval& approval : grants) {
        Note("grant", NotApplied(approval), &approval);
      }
      if (auto last = options_.backend->NewRefusals(sandbox_); last.ok()) {
        for (const EgressRefusal& refusal : last->refusals) Refused(refusal, false);
      }
      return;
    }
    while (!grants.empty() && !Stopping()) {
      Grant(grants.front());
      grants.pop_front();
    }
    if (!grants.empty()) {
      // Stopped: the next turn says what was left.
      absl::MutexLock lock(&mu_);
      grants_.insert(grants_.begin(), grants.begin(), grants.end());
      continue;
    }
    absl::StatusOr<EgressRefusals> read = options_.backend->NewRefusals(sandbox_);
    if (!read.ok()) {
      // Said once while it lasts, not once a second.
      const std::string problem(read.status().message());
      if (problem != last_problem_) {
        Note("runtime", fmt::format("the runtime's refusals could not be read: {}", problem));
      }
      last_problem_ = problem;
      continue;
    }
    last_problem_.clear();
    if (!read->missed.empty()) Note("runtime", read->missed);
    const auto deadline = std::chrono::steady_clock::now() + options_.read_deadline;
    for (const EgressRefusal& refusal : read->refusals) Refused(refusal, !Stopping(), deadline);
  }
}

std::string RuntimeAsk::WhyNotAsk(const EgressRefusal& refusal,
                                  std::chrono::steady_clock::time_point deadline) {
  if (!refusal.unlisted) return "the runtime refused it for its address, not its list";
  // Asked before: Ask finds that approval, and asks nothing new.
  if (approvals_->Find(refusal.host, refusal.port)) return "";
  if (const std::size_t max = approvals_->options().max_pending;
      approvals_->Count().pending >= max) {
    return Full(max);
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return NotAskable(options_.rules, refusal.host, refusal.port, options_.pins,
                    std::min(options_.resolve_deadline, left), options_.resolve);
}

void RuntimeAsk::Refused(const EgressRefusal& refusal, bool may_ask,
                         std::chrono::steady_clock::time_point deadline) {
  credproxy::AuditEvent event;
  event.event = "egress";
  event.decision = "deny";
  event.method = refusal.method;
  event.host = refusal.host;
  event.port = refusal.port;
  event.path = refusal.path;
  event.source = refusal.by;
  event.reason = refusal.code;
  event.detail = fmt::format("{}'s proxy refused it{}{}", refusal.by,
                             refusal.reason.empty() ? "" : ": " + refusal.reason,
                             refusal.program.empty() ? "" : " (" + refusal.program + ")");
  std::string why = may_ask ? WhyNotAsk(refusal, deadline) : "the session ended";
  if (why.empty()) {
    const credproxy::Approvals::Asked asked =
        approvals_->Ask(refusal.host, refusal.port, refusal.method);
    using Outcome = credproxy::Approvals::Asked::Outcome;
    event.approval = asked.approval.id;
    if (!event.approval.empty()) event.source += ", approval " + event.approval;
    if (asked.outcome == Outcome::kFull) {
      why = Full(approvals_->options().max_pending);
    }
  }
  if (!why.empty()) event.detail += "; not asked: " + why;
  if (options_.audit) options_.audit->Write(std::move(event));
}

void RuntimeAsk::Grant(const credproxy::Approval& approval) {
  const std::string where = fmt::format("{}:{}", approval.host, approval.port);
  // The rules again: a grant applies only what may be asked.
  std::string message;
  if (std::string why = NotAskable(options_.rules, approval.host, approval.port, options_.pins,
                                   options_.resolve_deadline, options_.resolve);
      !why.empty()) {
    message = fmt::format("approval {} for {} by {} was not applied: {}", approval.id, where,
                          approval.by, why);
  } else if (Stopping()) {
    message = NotApplied(approval);
  } else if (auto done = options_.backend->AllowEgress(sandbox_, approval.host, approval.port);
             done.ok()) {
    message = fmt::format("approval {} by {} applied: {}", approval.id, approval.by, *done);
  } else {
    message = fmt::format("approval {} for {} by {} could not be applied: {}", approval.id, where,
                          approval.by, std::string(done.status().message()));
  }
  if (options_.tell) options_.tell(message);
  Note("grant", message, &approval);
}

void RuntimeAsk::Note(const std::string& kind, const std::string& message,
                      const credproxy::Approval* about) {
  if (!options_.audit) return;
  credproxy::AuditEvent event;
  event.event = "notice";
  event.kind = kind;
  event.message = message;
  if (about != nullptr) {
    event.approval = about->id;
    event.host = about->host;
    event.port = about->port;
  }
  options_.audit->Write(std::move(event));
}

}  // namespace mojoup::sandbox

#include "mojoup/credproxy/approvals.h"

#include <algorithm>

#include "fmt/format.h"
#include "mojoup/internal/json_codec.h"
#include "mojoup/internal/rfc3339.h"

namespace mojoup::credproxy {
namespace {

namespace json = mojoup::internal::json;
using SystemClock = std::chrono::system_clock;

constexpr std::size_t kMaxApprovalsJson = 1 << 20;

constexpr auto kApprovalInfo = json::Message<ApprovalInfo>(
    json::Field("session", &ApprovalInfo::session), json::Field("id", &ApprovalInfo::id),
    json::Field("host", &ApprovalInfo::host), json::Field("port", &ApprovalInfo::port),
    json::Field("method", &ApprovalInfo::method), json::Field("state", &ApprovalInfo::state),
    json::Optional("scope", &ApprovalInfo::scope).OmitDefault(),
    json::Optional("by", &ApprovalInfo::by).OmitDefault(),
    json::Optional("reason", &ApprovalInfo::reason).OmitDefault(),
    json::Field("requested", &ApprovalInfo::requested),
    json::Field("expires", &ApprovalInfo::expires),
    json::Optional("decided", &ApprovalInfo::decided).OmitDefault(),
    json::Optional("used", &ApprovalInfo::used).OmitDefault());

// ApprovalDecision on the wire, its decision and scope as words.
struct DecisionWire {
  std::string decision;
  std::string scope = "once";
  std::string reason;
  std::string on_behalf_of;
};

constexpr std::size_t kMaxDecisionJson = 4096;
constexpr std::size_t kMaxReason = 500;

constexpr auto kDecisionWire =
    json::Message<DecisionWire>(
        json::Field("decision", &DecisionWire::decision),
        json::Optional("scope", &DecisionWire::scope),
        json::Optional("reason", &DecisionWire::reason).OmitDefault(),
        json::Optional("on_behalf_of", &DecisionWire::on_behalf_of).OmitDefault())
        .RefuseUnknown();

constexpr auto kApprovalList = json::Message<ApprovalList>(
    json::Const("schema", "mojoup.approvals/v1"), json::Field("version", &ApprovalList::version),
    json::Field("approvals", &ApprovalList::approvals, kApprovalInfo));

std::string Endpoint(const Approval& approval) {
  return fmt::format("{}:{}", approval.host, approval.port);
}

}  // namespace

std::string_view ApprovalStateName(ApprovalState state) {
  switch (state) {
    case ApprovalState::kPending:
      return "pending";
    case ApprovalState::kApproved:
      return "approved";
    case ApprovalState::kDenied:
      return "denied";
    case ApprovalState::kExpired:
      return "expired";
  }
  return "pending";
}

std::string_view ApprovalScopeName(ApprovalScope scope) {
  return scope == ApprovalScope::kSession ? "session" : "once";
}

std::optional<ApprovalScope> ApprovalScopeNamed(std::string_view name) {
  if (name == "once") return ApprovalScope::kOnce;
  if (name == "session") return ApprovalScope::kSession;
  return std::nullopt;
}

Approvals::Approvals(ApprovalsOptions options) : options_(std::move(options)) {}

SystemClock::time_point Approvals::Now() const {
  return options_.now ? options_.now() : SystemClock::now();
}

void Approvals::ExpireLocked(std::vector<Approval>& changed) {
  const auto now = Now();
  for (Approval& approval : approvals_) {
    if (approval.state == ApprovalState::kPending && now >= approval.expires) {
      approval.state = ApprovalState::kExpired;
      approval.by = "timeout";
      approval.decided = now;
      changed.push_back(approval);
    }
  }
}

void Approvals::Changed(std::vector<Approval> changed) {
  if (changed.empty()) return;
  std::map<std::uint64_t, std::function<void()>> wakes;
  {
    absl::MutexLock lock(&mu_);
    ++version_;
    wakes.swap(wakes_);
  }
  if (options_.on_change) {
    for (const Approval& approval : changed) options_.on_change(approval);
  }
  for (auto& [id, wake] : wakes) wake();
}

Approval* Approvals::FindLocked(const std::string& host, std::uint16_t port) {
  Approval* found = nullptr;
  for (Approval& approval : approvals_) {
    if (approval.host != host || approval.port != port) continue;
    const bool live_grant = approval.state == ApprovalState::kApproved &&
                            (approval.scope == ApprovalScope::kSession || !approval.used);
    if (live_grant || approval.state == ApprovalState::kDenied ||
        approval.state == ApprovalState::kPending) {
      found = &approval;
    }
  }
  return found;
}

std::optional<Approval> Approvals::Find(const std::string& host, std::uint16_t port) {
  std::vector<Approval> changed;
  std::optional<Approval> found;
  {
    absl::MutexLock lock(&mu_);
    ExpireLocked(changed);
    if (const Approval* approval = FindLocked(host, port); approval != nullptr) found = *approval;
  }
  Changed(std::move(changed));
  return found;
}

Approvals::Asked Approvals::Ask(const std::string& host, std::uint16_t port,
                                const std::string& method) {
  Asked asked;
  std::vector<Approval> changed;
  {
    absl::MutexLock lock(&mu_);
    ExpireLocked(changed);
    const std::size_t pending = static_cast<std::size_t>(std::count_if(
        approvals_.begin(), approvals_.end(),
        [](const Approval& approval) { return approval.state == ApprovalState::kPending; }));
    Approval* found = FindLocked(host, port);
    if (found != nullptr && found->state == ApprovalState::kApproved) {
      if (found->scope == ApprovalScope::kOnce) found->used = true;
      asked = {Asked::Outcome::kGranted, *found};
    } else if (found != nullptr) {
      const bool denied = found->state == ApprovalState::kDenied;
      asked = {denied ? Asked::Outcome::kDenied : Asked::Outcome::kPending, *found};
    } else if (pending >= options_.max_pending) {
      asked.outcome = Asked::Outcome::kFull;
    } else {
      Approval approval;
      approval.session = options_.session;
      approval.id = std::to_string(approvals_.size() + 1);
      approval.host = host;
      approval.port = port;
      approval.method = method;
      approval.requested = Now();
      approval.expires = approval.requested + options_.expiry;
      approvals_.push_back(approval);
      changed.push_back(approval);
      asked = {Asked::Outcome::kPending, approval};
    }
  }
  Changed(std::move(changed));
  return asked;
}

std::uint64_t Approvals::OnNextChange(std::function<void()> wake) {
  absl::MutexLock lock(&mu_);
  const std::uint64_t id = ++next_wake_;
  wakes_.emplace(id, std::move(wake));
  return id;
}

void Approvals::CancelWake(std::uint64_t id) {
  absl::MutexLock lock(&mu_);
  wakes_.erase(id);
}

std::uint64_t Approvals::version() const {
  absl::MutexLock lock(&mu_);
  return version_;
}

absl::StatusOr<Approval> Approvals::Decide(const std::string& id, const Decision& decision) {
  std::vector<Approval> changed;
  absl::StatusOr<Approval> result;
  {
    absl::MutexLock lock(&mu_);
    ExpireLocked(changed);
    auto it = std::find_if(approvals_.begin(), approvals_.end(),
                           [&](const Approval& approval) { return approval.id == id; });
    if (it == approvals_.end()) {
      result =
          absl::NotFoundError(fmt::format("session {} has no approval {}", options_.session, id));
    } else if (it->state == ApprovalState::kExpired) {
      result = absl::FailedPreconditionError(fmt::format(
          "approval {} for {} expired at {} ({}); the agent's next request to it asks again", id,
          Endpoint(*it), internal::Rfc3339(it->decided), it->by));
    } else if (it->state != ApprovalState::kPending) {
      result = absl::FailedPreconditionError(fmt::format("approval {} for {} was already {} by {}",
                                                         id, Endpoint(*it),
                                                         ApprovalStateName(it->state), it->by));
    } else if (decision.approve && decision.scope == ApprovalScope::kOnce &&
               !options_.once_refused.empty()) {
      result = absl::InvalidArgumentError(fmt::format("approval {} for {} is still pending: {}", id,
                                                      Endpoint(*it), options_.once_refused));
    } else {
      it->state = decision.approve ? ApprovalState::kApproved : ApprovalState::kDenied;
      it->scope = decision.scope;
      it->by = decision.by;
      it->reason = decision.approve ? "" : decision.reason;
      it->decided = Now();
      changed.push_back(*it);
      result = *it;
    }
  }
  Changed(std::move(changed));
  return result;
}

std::vector<Approval> Approvals::List() {
  std::vector<Approval> changed;
  std::vector<Approval> all;
  {
    absl::MutexLock lock(&mu_);
    ExpireLocked(changed);
    all = approvals_;
  }
  Changed(std::move(changed));
  return all;
}

Approvals::Counts Approvals::Count() {
  std::vector<Approval> changed;
  Counts counts;
  {
    absl::MutexLock lock(&mu_);
    ExpireLocked(changed);
    for (const Approval& approval : approvals_) {
      const ApprovalState state = approval.state;
      ++(state == ApprovalState::kPending    ? counts.pending
         : state == ApprovalState::kApproved ? counts.approved
         : state == ApprovalState::kDenied   ? counts.denied
                                             : counts.expired);
    }
  }
  Changed(std::move(changed));
  return counts;
}

void Approvals::EndSession() {
  std::vector<Approval> changed;
  {
    absl::MutexLock lock(&mu_);
    const auto now = Now();
    for (Approval& approval : approvals_) {
      if (approval.state != ApprovalState::kPending) continue;
      approval.state = ApprovalState::kExpired;
      approval.by = "session end";
      approval.decided = now;
      changed.push_back(approval);
    }
  }
  Changed(std::move(changed));
}

std::vector<std::string> Approvals::Grants() {
  std::vector<std::string> grants;
  for (const Approval& approval : List()) {
    if (approval.state != ApprovalState::kApproved) continue;
    if (approval.scope == ApprovalScope::kOnce && approval.used) continue;
    grants.push_back(fmt::format("allow {} (approval {} by {}, scope {})", Endpoint(approval),
                                 approval.id, approval.by, ApprovalScopeName(approval.scope)));
  }
  return grants;
}

ApprovalInfo InfoOf(const Approval& approval) {
  ApprovalInfo info;
  info.session = approval.session;
  info.id = approval.id;
  info.host = approval.host;
  info.port = approval.port;
  info.method = approval.method;
  info.state = std::string(ApprovalStateName(approval.state));
  if (approval.state == ApprovalState::kApproved) {
    info.scope = std::string(ApprovalScopeName(approval.scope));
  }
  info.by = approval.by;
  info.reason = approval.reason;
  info.requested = internal::Rfc3339(approval.requested);
  info.expires = internal::Rfc3339(approval.expires);
  if (approval.state != ApprovalState::kPending) info.decided = internal::Rfc3339(approval.decided);
  info.used = approval.used;
  return info;
}

namespace {

struct ProposedRule {
  std::string host;
  std::vector<std::uint16_t> ports;
};
struct ProposedNetwork {
  std::vector<ProposedRule> allow;
};
struct ProposedAgents {
  ProposedNetwork network;
};
struct Proposed {
  ProposedAgents agents;
};

constexpr auto kProposedRule = json::Message<ProposedRule>(
    json::Field("host", &ProposedRule::host), json::Field("ports", &ProposedRule::ports));
constexpr auto kProposedNetwork =
    json::Message<ProposedNetwork>(json::Field("allow", &ProposedNetwork::allow, kProposedRule));
constexpr auto kProposedAgents = json::Message<ProposedAgents>(
    json::Field("network", &ProposedAgents::network, kProposedNetwork));
constexpr auto kProposed =
    json::Message<Proposed>(json::Field("agents", &Proposed::agents, kProposedAgents));

}  // namespace

std::string ProposedPolicy(const std::vector<ApprovalInfo>& approvals) {
  Proposed proposed;
  std::vector<ProposedRule>& allow = proposed.agents.network.allow;
  for (const ApprovalInfo& approval : approvals) {
    if (approval.state != ApprovalStateName(ApprovalState::kApproved)) continue;
    auto rule = std::find_if(allow.begin(), allow.end(),
                             [&](const ProposedRule& r) { return r.host == approval.host; });
    if (rule == allow.end()) rule = allow.insert(allow.end(), {approval.host, {}});
    if (std::find(rule->ports.begin(), rule->ports.end(), approval.port) == rule->ports.end()) {
      rule->ports.push_back(approval.port);
    }
  }
  return json::ToPrettyJson(proposed, kProposed);
}

std::string ApprovalJson(const ApprovalInfo& approval) {
  return json::ToJson(approval, kApprovalInfo);
}

std::string ApprovalsJson(const ApprovalList& list) { return json::ToJson(list, kApprovalList); }

absl::StatusOr<ApprovalList> ParseApprovalsJson(std::string_view text) {
  return json::Parse<ApprovalList>(text, kApprovalList, "the approvals",
                                   {.max_bytes = kMaxApprovalsJson});
}

absl::StatusOr<ApprovalInfo> ParseApprovalJson(std::string_view text) {
  return json::Parse<ApprovalInfo>(text, kApprovalInfo, "the approval",
                                   {.max_bytes = kMaxApprovalsJson});
}

absl::StatusOr<ApprovalDecision> ParseApprovalDecision(std::string_view text) {
  auto wire = json::Parse<DecisionWire>(text, kDecisionWire, "the decision",
                                        {.max_bytes = kMaxDecisionJson});
  if (!wire.ok()) return wire.status();
  if (wire->decision != "approve" && wire->decision != "deny") {
    return absl::InvalidArgumentError(
        fmt::format("the decision must be approve or deny, not \"{}\"", wire->decision));
  }
  std::optional<ApprovalScope> scope = ApprovalScopeNamed(wire->scope);
  if (!scope) {
    return absl::InvalidArgumentError(
        fmt::format("the scope must be once or session, not \"{}\"", wire->scope));
  }
  if (wire->reason.size() > kMaxReason) {
    return absl::InvalidArgumentError(
        fmt::format("the reason is longer than {} bytes", kMaxReason));
  }
  return ApprovalDecision{wire->decision == "approve", *scope, std::move(wire->reason),
                          std::move(wire->on_behalf_of)};
}

std::string ApprovalDecisionJson(const ApprovalDecision& decision) {
  const DecisionWire wire{decision.approve ? "approve" : "deny",
                          std::string(ApprovalScopeName(decision.scope)), decision.reason,
                          decision.on_behalf_of};
  return json::ToJson(wire, kDecisionWire);
}

}  // namespace mojoup::credproxy

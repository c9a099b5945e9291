// Explain: the effective policy with the provenance of every value, and the
// decision this node would take now (`mojoup-node policy explain`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mojoup/policy/decision.h"
#include "mojoup/policy/effective_policy.h"
#include "mojoup/policy/network_rules.h"

namespace mojoup::policy {

// The answer to "may a session reach this host?" (`explain --host`).
struct HostCheck {
  std::string host;
  std::uint16_t port = 443;
  std::string tool;  // whose service hosts count; may be empty
  bool allowed = false;
  std::string rule;  // the deciding rule, or "no rule allows it"
  // When denied: a lower level's allow rule for it that a hub's
  // "extend": false left out, in words; else empty.
  std::string closed_by;
  // The id of the session's approval that decided it (`explain --session`),
  // when no rule of the policy did; else empty.
  std::string approval{};
};

// What the operator answered a live session that asks (`explain --session`):
// each grant and denial lives in that session only, never in a policy file.
struct SessionRule {
  std::string approval;  // the approval's id, "3"
  std::string host;
  std::uint16_t port = 443;
  std::string scope;    // a grant's: "session", or "once" not used yet
  std::string by;       // who decided
  std::string decided;  // when, RFC 3339
  std::string reason;   // a denial's
  // Where it comes from, in words (SessionRules::Add fills it): "session
  // grant: approval 3, approved by alice at T, scope session".
  std::string source{};
};

struct SessionRules {
  std::string session;
  std::vector<SessionRule> grants;   // in the order asked
  std::vector<SessionRule> denials;  // each stands for the rest of the session
  // Adds `rule` to grants (allow) or denials, its source worded.
  void Add(SessionRule rule, bool allow);
};

// CheckHost, then, where no rule of the policy decided, the session's
// answers: a grant for host:port allows it, a denial denies it.
HostCheck CheckHost(const EffectivePolicy& policy, std::string_view tool, std::string_view host,
                    std::uint16_t port, const SessionRules& session);

// Checks `host:port` against the policy's rules for `tool`.
HostCheck CheckHost(const EffectivePolicy& policy, std::string_view tool, std::string_view host,
                    std::uint16_t port);

// One object, schema "mojoup.policy/v1" (what `mojoup-node policy explain
// --json` prints; its fields are a stable interface), plus "host_check"
// when `check` is given.
std::string ExplainJson(const EffectivePolicy& policy, const SandboxDecision& decision,
                        const std::optional<HostCheck>& check = std::nullopt);
// The same, plus "session": {"id", "grants": [...], "denials": [...]}, each
// {"approval", "host", "port", "scope", "by", "decided", "reason", "source"}
// (scope of a grant, reason of a denial, else null).
std::string ExplainJson(const EffectivePolicy& policy, const SandboxDecision& decision,
                        const std::optional<HostCheck>& check, const SessionRules& session);

// The same for a person: the decision first, then each value and its source,
// and with `ask` what this node makes of the policy's ask.
std::string ExplainText(const EffectivePolicy& policy, const SandboxDecision& decision,
                        const std::optional<HostCheck>& check = std::nullopt,
                        const std::optional<AskDecision>& ask = std::nullopt);
// The same, then the session's grants and denials, each with its source.
std::string ExplainText(const EffectivePolicy& policy, const SandboxDecision& decision,
                        const std::optional<HostCheck>& check,
                        const std::optional<AskDecision>& ask, const SessionRules& session);

}  // namespace mojoup::policy

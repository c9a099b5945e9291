// Explain: the effective policy with the provenance of every value, and the
// decision this node would take now (`mojoup-node policy explain`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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
};

// Checks `host:port` against the policy's rules for `tool`.
HostCheck CheckHost(const EffectivePolicy& policy, std::string_view tool, std::string_view host,
                    std::uint16_t port);

// One object, schema "mojoup.policy/v1" (what `mojoup-node policy explain
// --json` prints; its fields are a stable interface), plus "host_check"
// when `check` is given.
std::string ExplainJson(const EffectivePolicy& policy, const SandboxDecision& decision,
                        const std::optional<HostCheck>& check = std::nullopt);

// The same for a person: the decision first, then each value and its source,
// and with `ask` what this node makes of the policy's ask.
std::string ExplainText(const EffectivePolicy& policy, const SandboxDecision& decision,
                        const std::optional<HostCheck>& check = std::nullopt,
                        const std::optional<AskDecision>& ask = std::nullopt);

}  // namespace mojoup::policy

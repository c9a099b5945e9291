// Explain: the effective policy with the provenance of every value, and the
// decision this node would take now (`mojoup-node policy explain`).
#pragma once

#include <string>

#include "mojoup/policy/decision.h"
#include "mojoup/policy/effective_policy.h"

namespace mojoup::policy {

// One object, schema "mojoup.policy/v1" (CONTRACT.md).
std::string ExplainJson(const EffectivePolicy& policy, const Decision& decision);

// The same for a person: the decision first, then each value and its source.
std::string ExplainText(const EffectivePolicy& policy, const Decision& decision);

}  // namespace mojoup::policy

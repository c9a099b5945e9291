// libFuzzer target: host pattern normalisation and matcher lookups of
// arbitrary hosts. A pattern that normalises must normalise to itself again,
// and an exact rule must match its own host.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "mojoup/policy/network_rules.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto normal = mojoup::policy::NormalizeHostPattern(text);
  if (!normal.ok()) return 0;
  auto again = mojoup::policy::NormalizeHostPattern(*normal);
  if (!again.ok() || *again != *normal) __builtin_trap();
  mojoup::policy::NetworkRules::Rule rule;
  rule.host.host = *normal;
  auto rules = mojoup::policy::NetworkRules::FromRules({rule});
  if (!rule.host.wildcard() && !rules.RuleOn(*normal, 443).allowed) __builtin_trap();
  rules.RuleOn(text, 443);
  return 0;
}

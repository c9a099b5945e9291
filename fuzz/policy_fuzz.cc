// libFuzzer target: the policy parser, then layering and the matcher on what
// it accepted. Whatever the bytes, parsing must end in a policy or an error
// that names the file; never a crash, a hang or a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "mojoup/policy/network_rules.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto file = mojoup::policy::ParsePolicy(text, "fuzz.json", mojoup::policy::Level::kRepo);
  if (!file.ok()) {
    if (std::string(file.status().message()).rfind("fuzz.json:", 0) != 0) __builtin_trap();
    return 0;
  }
  auto policy = mojoup::policy::Layer({*file});
  auto rules = mojoup::policy::NetworkRules::Build(policy, "claude-code");
  for (const auto& rule : policy.allow) {
    std::string host = rule.rule.host;
    if (rule.rule.wildcard()) host = "x" + host.substr(1);
    auto ruling = rules.RuleOn(host, rule.rule.ports.front());
    // An allowed host is allowed unless a deny names it too.
    if (!ruling.allowed && (ruling.rule == nullptr || !ruling.rule->deny)) __builtin_trap();
  }
  return 0;
}

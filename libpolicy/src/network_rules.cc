#include "mojoup/policy/network_rules.h"

#include <algorithm>

#include "fmt/format.h"
#include "mojoup/policy/tool_profiles.h"

namespace mojoup::policy {
namespace {

// Hosts longer than this cannot be names (253) or bracketed IPv6 literals.
constexpr std::size_t kMaxHost = 255;

bool HasPort(const HostRule& rule, std::uint16_t port) {
  return std::find(rule.ports.begin(), rule.ports.end(), port) != rule.ports.end();
}

}  // namespace

std::string NetworkRules::Rule::Describe() const {
  std::string origin = !tool.empty() ? fmt::format("{}'s own service host", tool)
                       : source.file.empty()
                           ? std::string(LevelName(source.level))
                           : fmt::format("{}: {}", LevelName(source.level), source.file);
  return fmt::format("{} {}:{} ({})", deny ? "deny" : "allow", host.host, host.PortList(), origin);
}

std::string NetworkRules::Decision::Describe() const {
  if (rule == nullptr) return "no rule allows it";
  return rule->Describe();
}

void NetworkRules::Add(Rule rule) {
  const auto index = static_cast<std::uint32_t>(rules_.size());
  Index& exact = rule.deny ? deny_exact_ : allow_exact_;
  Index& suffix = rule.deny ? deny_suffix_ : allow_suffix_;
  if (rule.host.wildcard()) {
    suffix[rule.host.host.substr(2)].push_back(index);
  } else {
    exact[rule.host.host].push_back(index);
  }
  rules_.push_back(std::move(rule));
}

NetworkRules NetworkRules::FromRules(std::vector<Rule> rules) {
  NetworkRules result;
  result.rules_.reserve(rules.size());
  for (Rule& rule : rules) result.Add(std::move(rule));
  return result;
}

NetworkRules NetworkRules::Build(const EffectivePolicy& policy, std::string_view tool) {
  NetworkRules result;
  for (const SourcedRule& rule : policy.deny) result.Add({true, rule.rule, rule.source, {}});
  for (const SourcedRule& rule : policy.allow) result.Add({false, rule.rule, rule.source, {}});
  if (policy.tool_services.value) {
    if (const ToolProfile* profile = FindToolProfile(tool)) {
      for (std::string_view host : profile->service_hosts) {
        result.Add({false, HostRule{std::string(host), kDefaultPorts}, Source{Level::kDefault, {}},
                    std::string(profile->name)});
      }
    }
  }
  return result;
}

const NetworkRules::Rule* NetworkRules::Match(const Index& exact, const Index& suffix,
                                              std::string_view host, std::uint16_t port) const {
  auto first_with_port = [&](const std::vector<std::uint32_t>& indexes) -> const Rule* {
    for (std::uint32_t i : indexes) {
      if (HasPort(rules_[i].host, port)) return &rules_[i];
    }
    return nullptr;
  };
  if (auto it = exact.find(host); it != exact.end()) {
    if (const Rule* rule = first_with_port(it->second)) return rule;
  }
  if (suffix.empty() || host.front() == '[') return nullptr;
  // "*.example.com" matches every name below example.com, not example.com itself.
  for (std::size_t dot = host.find('.'); dot != std::string_view::npos;
       dot = host.find('.', dot + 1)) {
    if (auto it = suffix.find(host.substr(dot + 1)); it != suffix.end()) {
      if (const Rule* rule = first_with_port(it->second)) return rule;
    }
  }
  return nullptr;
}

NetworkRules::Decision NetworkRules::Check(std::string_view host, std::uint16_t port) const {
  char lowered[kMaxHost];
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  if (host.empty() || host.size() > kMaxHost) return {false, nullptr};
  for (std::size_t i = 0; i < host.size(); ++i) {
    char c = host[i];
    lowered[i] = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  }
  std::string_view name(lowered, host.size());
  if (const Rule* rule = Match(deny_exact_, deny_suffix_, name, port)) return {false, rule};
  if (const Rule* rule = Match(allow_exact_, allow_suffix_, name, port)) return {true, rule};
  return {false, nullptr};
}

}  // namespace mojoup::policy

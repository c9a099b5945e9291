#include "mojoup/policy/network_rules.h"

#include <arpa/inet.h>

#include <algorithm>

#include "fmt/format.h"
#include "host_syntax.h"
#include "mojoup/policy/tool_profiles.h"

namespace mojoup::policy {
namespace {

// The longest host name (RFC 1035 section 2.3.4, without the trailing dot).
constexpr std::size_t kMaxName = 253;
// The longest IPv6 literal, in brackets, that inet_pton can read.
constexpr std::size_t kMaxBracketed = INET6_ADDRSTRLEN + 2;

bool HasPort(const HostRule& rule, std::uint16_t port) {
  return std::find(rule.ports.begin(), rule.ports.end(), port) != rule.ports.end();
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// An IPv4 address in any spelling the resolver reads as one ("127.0.0.1",
// "127.1", "0x7f000001") or an IPv6 literal in brackets. `host` is canonical.
bool IsAddressLike(std::string_view host) {
  return (!host.empty() && host.front() == '[') || internal::AllLabelsNumeric(host);
}

// An address as the proxy writes the one it resolved: "10.0.0.7", "[fd00::7]".
bool IsAddress(const std::string& host) {
  in_addr v4{};
  return (!host.empty() && host.front() == '[') || inet_pton(AF_INET, host.c_str(), &v4) == 1;
}

}  // namespace

std::optional<std::string> CanonicalHost(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    if (host.size() < 3 || host.size() > kMaxBracketed || host.back() != ']') return std::nullopt;
    const std::string inner(host.substr(1, host.size() - 2));
    in6_addr address{};
    if (inet_pton(AF_INET6, inner.c_str(), &address) != 1) return std::nullopt;
    char text[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, &address, text, sizeof text);
    return "[" + std::string(text) + "]";
  }
  // Exactly one trailing dot: "a.example.com." is the same name, "a.example.com.." none.
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  if (host.empty() || host.size() > kMaxName) return std::nullopt;
  std::string name(host);
  bool label_empty = true;
  for (char& c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
    if (c == '.') {
      if (label_empty) return std::nullopt;
      label_empty = true;
    } else if (IsNameChar(c)) {
      label_empty = false;
    } else {
      return std::nullopt;
    }
  }
  if (label_empty) return std::nullopt;
  return name;
}

std::string NetworkRules::Rule::Describe() const {
  return fmt::format("{} {}:{} ({})", deny ? "deny" : "allow", host.host, host.PortList(),
                     DescribeSource());
}

std::string NetworkRules::Rule::DescribeSource() const {
  if (!tool.empty()) return fmt::format("{}'s own service host", tool);
  if (source.file.empty()) return std::string(LevelName(source.level));
  return fmt::format("{}: {}", LevelName(source.level), source.file);
}

std::string NetworkRules::Ruling::Describe() const {
  if (rule == nullptr) return "no rule allows it";
  return rule->Describe();
}

bool NetworkRules::Ruling::NamesAddress() const {
  return allowed && rule != nullptr && !rule->deny && !rule->host.wildcard() &&
         IsAddress(rule->host.host);
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
                                              std::string_view host, bool literal,
                                              std::optional<std::uint16_t> port) const {
  auto first_with_port = [&](const std::vector<std::uint32_t>& indexes) -> const Rule* {
    for (std::uint32_t i : indexes) {
      if (!port || HasPort(rules_[i].host, *port)) return &rules_[i];
    }
    return nullptr;
  };
  if (auto it = exact.find(host); it != exact.end()) {
    if (const Rule* rule = first_with_port(it->second)) return rule;
  }
  // "*.0.0.1" must not reach 127.0.0.1: an address matches only a rule naming it.
  if (suffix.empty() || literal) return nullptr;
  // "*.example.com" matches every name below example.com, not example.com itself.
  for (std::size_t dot = host.find('.'); dot != std::string_view::npos;
       dot = host.find('.', dot + 1)) {
    if (auto it = suffix.find(host.substr(dot + 1)); it != suffix.end()) {
      if (const Rule* rule = first_with_port(it->second)) return rule;
    }
  }
  return nullptr;
}

NetworkRules::Ruling NetworkRules::RuleOn(std::string_view host, std::uint16_t port) const {
  const std::optional<std::string> name = CanonicalHost(host);
  if (!name) return {false, nullptr};
  const bool literal = IsAddressLike(*name);
  if (const Rule* rule = Match(deny_exact_, deny_suffix_, *name, literal, port)) {
    return {false, rule};
  }
  if (const Rule* rule = Match(allow_exact_, allow_suffix_, *name, literal, port)) {
    return {true, rule};
  }
  return {false, nullptr};
}

const NetworkRules::Rule* NetworkRules::DenyingHost(std::string_view host) const {
  const std::optional<std::string> name = CanonicalHost(host);
  if (!name) return nullptr;
  return Match(deny_exact_, deny_suffix_, *name, IsAddressLike(*name), std::nullopt);
}

}  // namespace mojoup::policy

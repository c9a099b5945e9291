// NetworkRules: the matcher that decides whether a session may reach a host
// and port, and which rule decided. Deny wins over allow; what no rule allows
// is denied. The credential proxy asks it for every connection.
//
//   NetworkRules rules = NetworkRules::Build(policy, "claude-code");
//   NetworkRules::Ruling d = rules.RuleOn("api.anthropic.com", 443);
//   if (!d.allowed) refuse(d.rule);   // "deny gist.github.com:443,80 (org: /etc/mojoup/org.json)"
//
// Lookups cost a hash probe per label of the host, whatever the number of rules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mojoup/policy/effective_policy.h"

namespace mojoup::policy {

// The one spelling of a requested host that rules, `--resolve` pins and
// credential bindings are looked up by, so that no spelling of a name can
// pass one check and miss another: ASCII lowercase, exactly one trailing dot
// dropped ("API.Example.com." -> "api.example.com"), an IPv6 literal in
// brackets in its canonical form ("[FD00:0::7]" -> "[fd00::7]"). nullopt
// when it is not a host: empty, an empty label ("a..b", ".a", "a.."), a
// character other than letters, digits, '-', '_' and '.', over 253
// characters, or brackets around something that is not an IPv6 address.
// The proxy applies it once, where it parses the requested host.
std::optional<std::string> CanonicalHost(std::string_view host);

class NetworkRules {
 public:
  struct Rule {
    bool deny = false;
    HostRule host;
    Source source;
    std::string tool;  // set for a tool's own service host
    // "allow api.github.com:443 (repo: /src/app/.mojoup/policy.json)"
    std::string Describe() const;
    // Where it came from, as Describe() says it in parentheses:
    // "repo: /src/app/.mojoup/policy.json", "default",
    // "claude-code's own service host".
    std::string DescribeSource() const;
  };

  struct Ruling {
    bool allowed = false;
    // The rule that decided, or nullptr when no rule matched (denied).
    const Rule* rule = nullptr;
    std::string Describe() const;
    // True when an allow rule naming this very IP address decided. Only such
    // a rule exempts a loopback, private or link-local address from the
    // proxy's blocked-address check: a *.domain rule never matches an
    // address, and a name is not an address.
    bool NamesAddress() const;
  };

  // The policy's rules, plus the tool's own service hosts when the policy's
  // tool_services is on (an unknown or empty tool adds none).
  static NetworkRules Build(const EffectivePolicy& policy, std::string_view tool);
  // Rules given directly (tests, benchmarks).
  static NetworkRules FromRules(std::vector<Rule> rules);

  // `host` is brought to CanonicalHost's spelling first (so it may be
  // mixed-case and end with a dot); one that has none is denied. IP literals
  // (IPv4, IPv6 in brackets, and names of numbers only such as "127.1")
  // match only exact rules that name them, never a *.domain rule.
  Ruling RuleOn(std::string_view host, std::uint16_t port) const;

  // A deny rule that covers `host` on any of its ports, or nullptr: a host
  // some rule denies is never asked about ("ask"), on any port.
  const Rule* DenyingHost(std::string_view host) const;

  const std::vector<Rule>& rules() const { return rules_; }

 private:
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const {
      return std::hash<std::string_view>{}(text);
    }
  };
  using Index =
      std::unordered_map<std::string, std::vector<std::uint32_t>, StringHash, std::equal_to<>>;

  void Add(Rule rule);
  const Rule* Match(const Index& exact, const Index& suffix, std::string_view host, bool literal,
                    std::optional<std::uint16_t> port) const;  // nullopt: any port

  std::vector<Rule> rules_;
  // Exact hosts, and "*.domain" patterns keyed by "domain"; per deny and allow.
  Index deny_exact_, deny_suffix_, allow_exact_, allow_suffix_;
};

}  // namespace mojoup::policy

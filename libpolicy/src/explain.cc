#include "mojoup/policy/explain.h"

#include "fmt/format.h"
#include "mojoup/internal/json_codec.h"

namespace mojoup::policy {
namespace {

namespace json = internal::json;

// What `policy explain --json` prints, in one place.
struct Explained {
  EffectivePolicy policy;
  SandboxDecision decision;
  std::optional<HostCheck> check;
  std::optional<SessionRules> session;
};

constexpr auto kLevel = json::Named<Level>(&LevelName);

constexpr auto kSource = json::Message<Source>(json::Field("level", &Source::level, kLevel),
                                               json::Field("file", &Source::file));

constexpr auto kRule = json::Message<SourcedRule>(
    json::Field("host", json::Member(&SourcedRule::rule, &HostRule::host)),
    json::Field("ports", json::Member(&SourcedRule::rule, &HostRule::ports)),
    json::Field("source", json::Member(&SourcedRule::source, &Source::level), kLevel));

// An addition to the contract: what a hub's "extend": false left out.
constexpr auto kDropped = json::Message<DroppedRule>(
    json::Field("host", json::Member(&DroppedRule::rule, &SourcedRule::rule, &HostRule::host)),
    json::Field("ports", json::Member(&DroppedRule::rule, &SourcedRule::rule, &HostRule::ports)),
    json::Field("source", json::Member(&DroppedRule::rule, &SourcedRule::source, &Source::level),
                kLevel),
    json::Field("closed_by", json::Member(&DroppedRule::closed_by, &Source::level), kLevel));

// kNone, nobody asked, is null.
constexpr auto kAsked = json::Message<Sourced<SandboxAsk>>(
    json::Field("value", &Sourced<SandboxAsk>::value, json::Named<SandboxAsk>(&SandboxAskName))
        .EmptyAsNull(),
    json::Field("source", json::Member(&Sourced<SandboxAsk>::source, &Source::level), kLevel));

constexpr auto kSourcedBool = json::Message<Sourced<bool>>(
    json::Field("value", &Sourced<bool>::value),
    json::Field("source", json::Member(&Sourced<bool>::source, &Source::level), kLevel));

constexpr auto kNetwork = json::Message<EffectivePolicy>(
    json::Field("allow", &EffectivePolicy::allow, kRule),
    json::Field("deny", &EffectivePolicy::deny, kRule),
    json::Field("dropped", &EffectivePolicy::dropped, kDropped),
    json::Field("tool_services", &EffectivePolicy::tool_services, kSourcedBool),
    json::Field("ask", &EffectivePolicy::ask, kSourcedBool));

constexpr auto kDecision =
    json::Message<SandboxDecision>(json::Field("result", &SandboxDecision::result,
                                               json::Named<SandboxDecision::Result>(&ResultName)),
                                   json::Field("reason", &SandboxDecision::reason));

constexpr auto kHostCheck = json::Message<HostCheck>(
    json::Field("host", &HostCheck::host), json::Field("port", &HostCheck::port),
    json::Field("tool", &HostCheck::tool).EmptyAsNull(),
    json::Field("allowed", &HostCheck::allowed), json::Field("rule", &HostCheck::rule),
    json::Field("closed_by", &HostCheck::closed_by).EmptyAsNull(),
    json::Optional("approval", &HostCheck::approval).OmitDefault());

constexpr auto kSessionRule = json::Message<SessionRule>(
    json::Field("approval", &SessionRule::approval), json::Field("host", &SessionRule::host),
    json::Field("port", &SessionRule::port),
    json::Field("scope", &SessionRule::scope).EmptyAsNull(), json::Field("by", &SessionRule::by),
    json::Field("decided", &SessionRule::decided),
    json::Field("reason", &SessionRule::reason).EmptyAsNull(),
    json::Field("source", &SessionRule::source));

constexpr auto kSessionRules =
    json::Message<SessionRules>(json::Field("id", &SessionRules::session),
                                json::Field("grants", &SessionRules::grants, kSessionRule),
                                json::Field("denials", &SessionRules::denials, kSessionRule));

constexpr auto kExplained = json::Message<Explained>(
    json::Const("schema", "mojoup.policy/v1"),
    json::Field("sources", json::Member(&Explained::policy, &EffectivePolicy::sources), kSource),
    json::Field("sandbox", json::Member(&Explained::decision, &SandboxDecision::asked), kAsked),
    json::Field("network", &Explained::policy, kNetwork),
    json::Field("decision", &Explained::decision, kDecision),
    json::Optional("host_check", &Explained::check, kHostCheck),
    json::Optional("session", &Explained::session, kSessionRules));

// "allow H:P (repo: FILE) is left out: the org hub policy (FILE) closed the
// list with \"extend\": false"
std::string ClosedSentence(const DroppedRule& dropped) {
  return fmt::format(
      "allow {}:{} ({}: {}) is left out: the {} hub policy ({}) closed the list with "
      "\"extend\": false",
      dropped.rule.rule.host, dropped.rule.rule.PortList(), LevelName(dropped.rule.source.level),
      dropped.rule.source.file, LevelName(dropped.closed_by.level), dropped.closed_by.file);
}

// "gist.github.com:443: denied, by deny gist.github.com:443,80 (org: FILE)"
std::string HostLines(const HostCheck& check) {
  std::string out = fmt::format("{}:{}: {}, by {}\n", check.host, check.port,
                                check.allowed ? "allowed" : "denied", check.rule);
  if (!check.closed_by.empty()) out += fmt::format("  ({})\n", check.closed_by);
  return out;
}

}  // namespace

HostCheck CheckHost(const EffectivePolicy& policy, std::string_view tool, std::string_view host,
                    std::uint16_t port) {
  NetworkRules rules = NetworkRules::Build(policy, tool);
  NetworkRules::Ruling ruling = rules.RuleOn(host, port);
  HostCheck check{std::string(host), port, std::string(tool), ruling.allowed,
                  ruling.Describe(), {}};
  if (ruling.rule == nullptr) {
    // No rule decided: would one the hub dropped have allowed it? (A deny
    // that decided would have won over it anyway.)
    for (const DroppedRule& dropped : policy.dropped) {
      EffectivePolicy alone;
      alone.allow = {dropped.rule};
      alone.tool_services = {false, {}};
      if (NetworkRules::Build(alone, "").RuleOn(host, port).allowed) {
        check.closed_by = ClosedSentence(dropped);
        break;
      }
    }
  }
  return check;
}

void SessionRules::Add(SessionRule rule, bool allow) {
  if (allow) {
    rule.source = fmt::format("session grant: approval {}, approved by {} at {}, scope {}",
                              rule.approval, rule.by, rule.decided, rule.scope);
    grants.push_back(std::move(rule));
    return;
  }
  rule.source = fmt::format("session denial: approval {}, denied by {} at {}", rule.approval,
                            rule.by, rule.decided);
  if (!rule.reason.empty()) rule.source += ": " + rule.reason;
  denials.push_back(std::move(rule));
}

HostCheck CheckHost(const EffectivePolicy& policy, std::string_view tool, std::string_view host,
                    std::uint16_t port, const SessionRules& session) {
  HostCheck check = CheckHost(policy, tool, host, port);
  // A rule of the policy decided, or asking was never open to this host: the
  // session's answers do not count (deny always wins; a closed list admits
  // nothing asked).
  if (NetworkRules::Build(policy, tool).RuleOn(host, port).rule != nullptr ||
      !check.closed_by.empty()) {
    return check;
  }
  auto decided = [&](const std::vector<SessionRule>& rules) -> const SessionRule* {
    for (const SessionRule& rule : rules) {
      if (rule.host == host && rule.port == port) return &rule;
    }
    return nullptr;
  };
  if (const SessionRule* denial = decided(session.denials)) {
    check.rule = denial->source;
    check.approval = denial->approval;
  } else if (const SessionRule* grant = decided(session.grants)) {
    check.allowed = true;
    check.rule = grant->source;
    check.approval = grant->approval;
  }
  return check;
}

std::string ExplainJson(const EffectivePolicy& policy, const SandboxDecision& decision,
                        const std::optional<HostCheck>& check) {
  return json::ToPrettyJson(Explained{policy, decision, check, std::nullopt}, kExplained) + "\n";
}

std::string ExplainJson(const EffectivePolicy& policy, const SandboxDecision& decision,
                        const std::optional<HostCheck>& check, const SessionRules& session) {
  return json::ToPrettyJson(Explained{policy, decision, check, session}, kExplained) + "\n";
}

std::string ExplainText(const EffectivePolicy& policy, const SandboxDecision& decision,
                        const std::optional<HostCheck>& check,
                        const std::optional<AskDecision>& ask) {
  std::string out = fmt::format("{}: {}\n", ResultName(decision.result), decision.reason);
  out += "sources:\n";
  if (policy.sources.empty()) out += "  (no policy files)\n";
  for (const Source& source : policy.sources) {
    out += fmt::format("  {:<5} {}\n", LevelName(source.level), source.file);
  }
  out += fmt::format("sandbox:        {} (from {})\n",
                     decision.asked.value == SandboxAsk::kNone
                         ? std::string("not asked")
                         : std::string(SandboxAskName(decision.asked.value)),
                     LevelName(decision.asked.source.level));
  out += fmt::format("tool_services:  {} (from {})\n", policy.tool_services.value ? "on" : "off",
                     LevelName(policy.tool_services.source.level));
  out += fmt::format("ask:            {} (from {})\n", policy.ask.value ? "on" : "off",
                     LevelName(policy.ask.source.level));
  if (ask) out += fmt::format("  on this node: {}\n", ask->why);
  for (const auto& [name, rules] : {std::pair{"allow", &policy.allow}, {"deny", &policy.deny}}) {
    out += fmt::format("{}:\n", name);
    if (rules->empty()) out += "  (none)\n";
    for (const SourcedRule& rule : *rules) {
      out += fmt::format("  {}:{}  (from {})\n", rule.rule.host, rule.rule.PortList(),
                         LevelName(rule.source.level));
    }
  }
  for (const DroppedRule& dropped : policy.dropped) {
    out += fmt::format("left out: {}\n", ClosedSentence(dropped));
  }
  if (check) out += HostLines(*check);
  return out;
}

std::string ExplainText(const EffectivePolicy& policy, const SandboxDecision& decision,
                        const std::optional<HostCheck>& check,
                        const std::optional<AskDecision>& ask, const SessionRules& session) {
  std::string out = ExplainText(policy, decision, std::nullopt, ask);
  out += fmt::format("session {} (its grants live in the session only):\n", session.session);
  if (session.grants.empty() && session.denials.empty()) out += "  (no grants or denials)\n";
  for (const auto& [word, rules] :
       {std::pair{"allow", &session.grants}, {"deny ", &session.denials}}) {
    for (const SessionRule& rule : *rules) {
      out += fmt::format("  {} {}:{}  ({})\n", word, rule.host, rule.port, rule.source);
    }
  }
  // The host's line last, as without a session.
  if (check) out += HostLines(*check);
  return out;
}

}  // namespace mojoup::policy

#include "mojoup/policy/explain.h"

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include "fmt/format.h"

namespace mojoup::policy {
namespace {

using Writer = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

void String(Writer& w, std::string_view text) {
  w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
}

void Rules(Writer& w, const std::vector<SourcedRule>& rules) {
  w.StartArray();
  for (const SourcedRule& rule : rules) {
    w.StartObject();
    w.Key("host");
    String(w, rule.rule.host);
    w.Key("ports");
    w.StartArray();
    for (std::uint16_t port : rule.rule.ports) w.Uint(port);
    w.EndArray();
    w.Key("source");
    String(w, LevelName(rule.source.level));
    w.EndObject();
  }
  w.EndArray();
}

// "allow H:P (repo: FILE) is left out: the org hub policy (FILE) closed the
// list with \"extend\": false"
std::string ClosedSentence(const DroppedRule& dropped) {
  return fmt::format(
      "allow {}:{} ({}: {}) is left out: the {} hub policy ({}) closed the list with "
      "\"extend\": false",
      dropped.rule.rule.host, dropped.rule.rule.PortList(), LevelName(dropped.rule.source.level),
      dropped.rule.source.file, LevelName(dropped.closed_by.level), dropped.closed_by.file);
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

std::string ExplainJson(const EffectivePolicy& policy, const SandboxDecision& decision,
                        const std::optional<HostCheck>& check) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.SetIndent(' ', 2);
  w.StartObject();
  w.Key("schema");
  String(w, "mojoup.policy/v1");
  w.Key("sources");
  w.StartArray();
  for (const Source& source : policy.sources) {
    w.StartObject();
    w.Key("level");
    String(w, LevelName(source.level));
    w.Key("file");
    String(w, source.file);
    w.EndObject();
  }
  w.EndArray();
  w.Key("sandbox");
  w.StartObject();
  w.Key("value");
  if (decision.asked.value == SandboxAsk::kNone) {
    w.Null();
  } else {
    String(w, SandboxAskName(decision.asked.value));
  }
  w.Key("source");
  String(w, LevelName(decision.asked.source.level));
  w.EndObject();
  w.Key("network");
  w.StartObject();
  w.Key("allow");
  Rules(w, policy.allow);
  w.Key("deny");
  Rules(w, policy.deny);
  // An addition to the contract: what a hub's "extend": false left out.
  w.Key("dropped");
  w.StartArray();
  for (const DroppedRule& dropped : policy.dropped) {
    w.StartObject();
    w.Key("host");
    String(w, dropped.rule.rule.host);
    w.Key("ports");
    w.StartArray();
    for (std::uint16_t port : dropped.rule.rule.ports) w.Uint(port);
    w.EndArray();
    w.Key("source");
    String(w, LevelName(dropped.rule.source.level));
    w.Key("closed_by");
    String(w, LevelName(dropped.closed_by.level));
    w.EndObject();
  }
  w.EndArray();
  w.Key("tool_services");
  w.StartObject();
  w.Key("value");
  w.Bool(policy.tool_services.value);
  w.Key("source");
  String(w, LevelName(policy.tool_services.source.level));
  w.EndObject();
  w.EndObject();
  w.Key("decision");
  w.StartObject();
  w.Key("result");
  String(w, ResultName(decision.result));
  w.Key("reason");
  String(w, decision.reason);
  w.EndObject();
  if (check) {
    w.Key("host_check");
    w.StartObject();
    w.Key("host");
    String(w, check->host);
    w.Key("port");
    w.Uint(check->port);
    w.Key("tool");
    if (check->tool.empty()) {
      w.Null();
    } else {
      String(w, check->tool);
    }
    w.Key("allowed");
    w.Bool(check->allowed);
    w.Key("rule");
    String(w, check->rule);
    w.Key("closed_by");
    if (check->closed_by.empty()) {
      w.Null();
    } else {
      String(w, check->closed_by);
    }
    w.EndObject();
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

std::string ExplainText(const EffectivePolicy& policy, const SandboxDecision& decision,
                        const std::optional<HostCheck>& check) {
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
  if (check) {
    out += fmt::format("{}:{}: {}, by {}\n", check->host, check->port,
                       check->allowed ? "allowed" : "denied", check->rule);
    if (!check->closed_by.empty()) out += fmt::format("  ({})\n", check->closed_by);
  }
  return out;
}

}  // namespace mojoup::policy

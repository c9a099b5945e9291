#include "mojoup/policy/decision.h"

#include <pwd.h>
#include <unistd.h>

#include "fmt/format.h"

namespace mojoup::policy {
namespace {

std::string Asker(const Sourced<SandboxAsk>& asked) {
  if (asked.source.level == Level::kNode) {
    return "this node runs agents in sandboxes (node.sandbox.role)";
  }
  return fmt::format("the {} policy ({}) {} a sandbox", LevelName(asked.source.level),
                     asked.source.file,
                     asked.value == SandboxAsk::kRequired ? "requires" : "prefers");
}

}  // namespace

std::string_view ResultName(SandboxDecision::Result result) {
  switch (result) {
    case SandboxDecision::Result::kSandboxed:
      return "sandboxed";
    case SandboxDecision::Result::kUnsandboxed:
      return "unsandboxed";
    case SandboxDecision::Result::kRefused:
      return "refused";
  }
  return "unsandboxed";
}

std::string NodeOwnerName(const NodeConfig& config) {
  return config.owner() ? UserName(*config.owner()) : CurrentUserName();
}

bool UserAllowed(const NodeConfig& config, std::string_view user) {
  auto allowed = config.Get("node.sandbox.allowed_users");
  // A node is first of all its operator's.
  if (!allowed) return user == NodeOwnerName(config);
  if (*allowed == "*") return true;
  for (const std::string& name : SplitConfigList(*allowed)) {
    if (name == user) return true;
  }
  return false;
}

Sourced<SandboxAsk> SandboxAskFor(const NodeConfig& config, const EffectivePolicy& policy) {
  if (policy.sandbox.value != SandboxAsk::kNone) return policy.sandbox;
  if (config.Get("node.sandbox.engine") && config.Get("node.sandbox.role") == "true") {
    return {SandboxAsk::kPreferred, Source{Level::kNode, config.path()}};
  }
  return {SandboxAsk::kNone, Source{}};
}

SandboxDecision Decide(const Capability& capability, const NodeConfig& config,
                       const EffectivePolicy& policy, std::string_view user) {
  SandboxDecision decision;
  decision.asked = SandboxAskFor(config, policy);
  if (decision.asked.value == SandboxAsk::kNone) {
    decision.result = SandboxDecision::Result::kUnsandboxed;
    decision.reason =
        "Nobody asks for a sandbox: no policy sets agents.sandbox, and the node's sandbox role "
        "is off.";
    return decision;
  }
  std::string cannot;  // why this user cannot have a sandbox here, if so
  if (!capability.can_sandbox) {
    cannot = "this machine cannot sandbox agents: " + capability.reason;
  } else if (!UserAllowed(config, user)) {
    auto allowed = config.Get("node.sandbox.allowed_users");
    const std::string list = allowed ? *allowed : NodeOwnerName(config);
    cannot = fmt::format(
        "you may not run agents in this node's sandboxes (user {} is not in "
        "node.sandbox.allowed_users{}); the node's operator grants access with `mojoup-node config "
        "set node.sandbox.allowed_users {},{}`.",
        user, allowed ? "" : fmt::format(", which is unset: the node is {}'s", list), list, user);
  }
  if (cannot.empty()) {
    decision.result = SandboxDecision::Result::kSandboxed;
    decision.reason = fmt::format("Sandboxed: {}.", Asker(decision.asked));
  } else if (decision.asked.value == SandboxAsk::kRequired) {
    decision.result = SandboxDecision::Result::kRefused;
    decision.reason = fmt::format("This repository requires a sandbox, but {}", cannot);
  } else {
    decision.result = SandboxDecision::Result::kUnsandboxed;
    decision.reason = fmt::format("Warning: running without a sandbox, though {}, because {}",
                                  Asker(decision.asked), cannot);
  }
  return decision;
}

AskDecision DecideAsk(const NodeConfig& config, const EffectivePolicy& policy) {
  const Source& source = policy.ask.source;
  const bool node_on = ProxyAskOn(config);
  if (policy.ask.value && node_on) {
    return {true, fmt::format("ask is on ({}: {}; node.proxy.ask on)", LevelName(source.level),
                              source.file)};
  }
  if (policy.closed && source.level == policy.closed->level && source.file == policy.closed->file) {
    return {false, fmt::format("ask is off: {} policy {} closed the list with \"extend\": false",
                               LevelName(source.level), source.file)};
  }
  if (!policy.ask.value && source.level != Level::kDefault) {
    return {false, fmt::format("ask is off: {} policy {} says \"ask\": false",
                               LevelName(source.level), source.file)};
  }
  if (policy.ask.value) {
    return {false, fmt::format("ask is off: node.proxy.ask is off, though the {} policy {} turns "
                               "it on",
                               LevelName(source.level), source.file)};
  }
  return {false, node_on ? "ask is off: no policy says \"ask\": true"
                         : "ask is off: no policy says \"ask\": true, and node.proxy.ask is off"};
}

std::string CurrentUserName() { return UserName(getuid()); }

std::string UserName(uid_t uid) {
  passwd pw{};
  passwd* found = nullptr;
  char buf[4096];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) != 0 || found == nullptr) {
    return std::to_string(uid);
  }
  return found->pw_name;
}

}  // namespace mojoup::policy

// Decide: does this session run in a sandbox? (docs/policy.md, "Policies and
// `mojoup-node policy explain`")
//
//   asked by                               can sandbox  result
//   policy required                        yes          sandboxed
//   policy required                        no           refused
//   policy preferred, or node engine+role  yes          sandboxed
//   policy preferred, or node engine+role  no           unsandboxed, with a warning
//   nobody                                 either       unsandboxed
//
// A user not in node.sandbox.allowed_users is treated as if the node could not
// sandbox, with the reason "you may not run agents in this node's sandboxes".
// Every result carries one sentence saying why.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "mojoup/policy/effective_policy.h"
#include "mojoup/policy/node_config.h"

namespace mojoup::policy {

// Whether this machine can run agents in sandboxes, in the decision's terms.
// libpolicy does not know the host probe: whoever has a probe verdict fills
// this in from it (mojoup::Node does).
struct Capability {
  bool can_sandbox = false;
  std::string reason;  // why not, one sentence; empty when it can
};

struct SandboxDecision {
  enum class Result { kSandboxed, kUnsandboxed, kRefused };
  Result result = Result::kUnsandboxed;
  std::string reason;  // one sentence
  // What asked for a sandbox: the policy level, kNode, or kDefault for nobody.
  Sourced<SandboxAsk> asked;
};

// "sandboxed", "unsandboxed", "refused"
std::string_view ResultName(SandboxDecision::Result result);

// True when node.sandbox.allowed_users lets `user` run agents in sandboxes.
// Unset means nobody: the operator names who may (`mojoup-node setup`).
bool UserAllowed(const NodeConfig& config, std::string_view user);

// Whose node it is when node.sandbox.allowed_users is unset: the owner of the
// node config file, or the invoking user when there is no file.
std::string NodeOwnerName(const NodeConfig& config);

// What asks for a sandbox: the policy's strictest ask, else the node's own
// config (node.sandbox.engine set and node.sandbox.role on) as "preferred".
Sourced<SandboxAsk> SandboxAskFor(const NodeConfig& config, const EffectivePolicy& policy);

SandboxDecision Decide(const Capability& capability, const NodeConfig& config,
                       const EffectivePolicy& policy, std::string_view user);

// Whether a session's credential proxy may hold a request to a destination no
// rule decides for the operator's answer ("ask"): only when the effective
// policy turns it on (EffectivePolicy::ask) and the node allows it
// (node.proxy.ask). `why` is one sentence:
//   ask is on (repo: /src/app/.mojoup/policy.json; node.proxy.ask on)
//   ask is off: node.proxy.ask is off
//   ask is off: org policy /etc/mojoup/org.json closed the list with "extend": false
struct AskDecision {
  bool on = false;
  std::string why;
};

AskDecision DecideAsk(const NodeConfig& config, const EffectivePolicy& policy);

// The invoking user's name (SUDO_USER is not trusted: the real uid decides).
std::string CurrentUserName();

// The name of `uid` (its number when it has none).
std::string UserName(uid_t uid);

}  // namespace mojoup::policy

// The effective policy as an OpenShell sandbox policy (YAML, `version: 1`).
//
// OpenShell's own proxy owns egress inside its sandboxes and cannot chain to
// ours, so the allow-list goes into its `network_policies`: one entry per
// allowed host and port, for any program (`binaries: /**`), plus the tool's
// own service hosts when tool_services is on. OpenShell has no deny, so an
// allowed entry that a deny rule touches at all is dropped (fail closed) and
// reported. One more entry lets the sandbox reach our credential proxy, as a
// plain-HTTP base URL at host.openshell.internal:<port>.
//
// Hosts: our "*.example.com" (any depth below example.com) is OpenShell's
// "**.example.com"; OpenShell's "*" is a single label.
//
// Filesystem: reads anywhere, writes under the repository, /tmp, the home
// directory and the devices the native runtime also grants (/dev/null,
// /dev/tty, /dev/pts, /dev/shm, ...), with Landlock as a hard requirement;
// the process runs as the user's uid and gid.
//
//   OpenShellPolicyOptions options{.repo = "/src/app", .home = "/home/ada",
//                                  .uid = 1617, .gid = 1617, .proxy_port = 40123};
//   OpenShellPolicy out =
//       TranslateToOpenShell(NetworkRules::Build(effective, "claude-code"), options);
//   WriteFile(dir + "/policy.yaml", out.yaml);
//   if (!out.refused.empty()) return Fail(out.refused);
//   for (const std::string& why : out.dropped) Warn(why);
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mojoup/policy/network_rules.h"

namespace mojoup::sandbox {

inline constexpr std::string_view kOpenShellHostAlias = "host.openshell.internal";

struct OpenShellPolicyOptions {
  std::string repo;
  std::string home;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<std::string> writable;  // more places to write (a worktree's main git directory)
  std::uint16_t proxy_port = 0;       // our credential proxy; 0: no entry for it
  // Before OpenShell v0.0.53 the proxy entry also needs the bridge's gateway
  // address as an allowed IP ("172.18.0.1"); empty: not needed.
  std::string proxy_allowed_ip;
};

struct OpenShellPolicy {
  std::string yaml;
  // One sentence per allowed host and port left out because a deny rule
  // touches it.
  std::vector<std::string> dropped;
  // Non-empty when OpenShell would refuse the policy (a rule admitting every
  // name under a top-level domain): why, in one sentence naming the rule.
  // The yaml is then not to be used.
  std::string refused;
};

// `rules` as NetworkRules::Build gives them: the policy's, plus the tool's
// own service hosts when tool_services is on.
OpenShellPolicy TranslateToOpenShell(const policy::NetworkRules& rules,
                                     const OpenShellPolicyOptions& options);

}  // namespace mojoup::sandbox

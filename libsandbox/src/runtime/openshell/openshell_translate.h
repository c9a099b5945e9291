// A session's spec in OpenShell's terms, beside its rules as OpenShell's
// policy YAML (mojoup/sandbox/openshell_policy.h): what the policy is built
// from, whether OpenShell may run the user, which credentials a provider may
// carry, and the environment of the command's exec.
//
//   if (absl::Status user = CheckOpenShellUser(spec.uid, spec.gid, version); !user.ok()) ...
//   OpenShellPolicyOptions policy = OpenShellPolicyOptionsFor(spec, options);
//   std::map<std::string, std::string> environment =
//       OpenShellCommandEnvironment(spec, provided, policy.proxy_port);
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "mojoup/policy/network_rules.h"
#include "mojoup/probe/semver.h"
#include "mojoup/sandbox/backend.h"
#include "mojoup/sandbox/openshell_backend.h"
#include "mojoup/sandbox/openshell_policy.h"
#include "runtime/openshell/openshell_cli.h"

namespace mojoup::sandbox {

// Whether OpenShell `version` runs a sandbox as uid and primary gid: one
// sentence saying why not.
absl::Status CheckOpenShellUser(uid_t uid, gid_t gid, const probe::SemVer& version);

// What the session's policy file is built from.
OpenShellPolicyOptions OpenShellPolicyOptionsFor(const SandboxSpec& spec,
                                                 const OpenShellBackendOptions& options);

// Whether the session's proxy carries `variable` for `tool`; what it does
// not carry is for OpenShell's providers.
bool OpenShellProxyCarries(std::string_view tool, std::string_view variable);

// The profile that may carry `credential`, nullptr when none may.
const OpenShellProviderProfile* OpenShellProfileFor(
    const std::vector<OpenShellProviderProfile>& profiles, const SandboxCredential& credential,
    const policy::NetworkRules& rules);

// What the command's exec gets: the session's environment, with OpenShell's
// placeholders for what its providers carry (`provided`) and base URLs that
// reach our proxy (at proxy_port of host.openshell.internal; 0: none).
std::map<std::string, std::string> OpenShellCommandEnvironment(
    const SandboxSpec& spec, const std::vector<std::string>& provided, std::uint16_t proxy_port);

// Our proxy as the sandbox reaches it: "http://host.openshell.internal:PORT".
std::string OpenShellProxyUrl(std::uint16_t proxy_port);

}  // namespace mojoup::sandbox

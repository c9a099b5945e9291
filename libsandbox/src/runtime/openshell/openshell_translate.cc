#include "runtime/openshell/openshell_translate.h"

#include <algorithm>

#include "fmt/format.h"
#include "mojoup/internal/host_port.h"
#include "mojoup/policy/tool_profiles.h"

namespace mojoup::sandbox {

// The policy runs the command as the user's uid and primary gid, and a
// release refuses a numeric id below its MIN_SANDBOX_UID for either
// (run_as_user and run_as_group alike: crates/openshell-policy/src/lib.rs,
// 1000 at v0.0.92 to v0.0.109, 1 from v0.0.110).
absl::Status CheckOpenShellUser(uid_t uid, gid_t gid, const probe::SemVer& version) {
  if (uid == 0) {
    return absl::FailedPreconditionError(
        "OpenShell does not run sandboxes as root (uid 0); run mojoup-node as the user whose "
        "agent it is");
  }
  const probe::SemVer needed = uid >= 1000 ? kOpenShellNumericUser : kOpenShellAnyUser;
  if (version < needed) {
    return absl::FailedPreconditionError(
        fmt::format("OpenShell {} cannot run a sandbox as uid {}; that needs {} or later",
                    version.ToString(), uid, needed.ToString()));
  }
  if (gid == 0) {
    return absl::FailedPreconditionError(
        "OpenShell does not run sandboxes with primary group gid 0 (root); run mojoup-node "
        "under a primary group of its own");
  }
  if (gid < 1000 && version < kOpenShellAnyUser) {
    return absl::FailedPreconditionError(fmt::format(
        "OpenShell {} cannot run a sandbox with primary group gid {} (below 1000); that needs "
        "{} or later, or a primary group of 1000 or above",
        version.ToString(), gid, kOpenShellAnyUser.ToString()));
  }
  return absl::OkStatus();
}

OpenShellPolicyOptions OpenShellPolicyOptionsFor(const SandboxSpec& spec,
                                                 const OpenShellBackendOptions& options) {
  OpenShellPolicyOptions policy;
  policy.repo = spec.repo;
  policy.home = spec.home;
  // The policy grants the repository, the home and /tmp itself.
  for (const std::string& dir : spec.writable) {
    if (dir != spec.repo && dir != spec.home && dir != "/tmp") policy.writable.push_back(dir);
  }
  policy.uid = spec.uid;
  policy.gid = spec.gid;
  if (auto proxy = internal::SplitHostPort(spec.proxy_address, 0)) {
    policy.proxy_port = proxy->port;
  }
  if (options.version < kOpenShellHostAliasAllowed) {
    policy.proxy_allowed_ip = options.bridge_gateway;
  }
  return policy;
}

// A plain command reaches any bound host through MOJOUP_PROXY_URL; a tool
// with a base-URL setting gets a base URL for every variable some tool's
// base URL serves (OpenShellBaseUrls); Copilot and OpenCode have none, and
// their keys go to providers.
bool OpenShellProxyCarries(std::string_view tool, std::string_view variable) {
  if (tool.empty()) return true;
  const policy::ToolProfile* own = policy::FindToolProfile(tool);
  if (own == nullptr || own->base_url_variable.empty()) return false;
  for (const policy::ToolProfile& profile : policy::ToolProfiles()) {
    if (profile.base_url_variable.empty()) continue;
    for (const policy::ApiKeyVariable& key : profile.api_key_variables) {
      if (key.name == variable) return true;
    }
  }
  return false;
}

// The profile names the variable, has endpoints, and every endpoint is a
// host the credential is bound to and one the policy allows, so OpenShell
// never places the key anywhere our policy would not send it. A gateway with
// providers_v2_enabled also opens a profile's endpoints to the sandbox
// (compose_effective_policy, v0.0.92 and v0.0.111
// crates/openshell-server/src/grpc/policy.rs): they are never more than the
// policy allows.
const OpenShellProviderProfile* OpenShellProfileFor(
    const std::vector<OpenShellProviderProfile>& profiles, const SandboxCredential& credential,
    const policy::NetworkRules& rules) {
  for (const OpenShellProviderProfile& profile : profiles) {
    if (profile.hosts.empty() || std::find(profile.variables.begin(), profile.variables.end(),
                                           credential.name) == profile.variables.end()) {
      continue;
    }
    bool inside = true;
    for (std::size_t i = 0; i < profile.hosts.size(); ++i) {
      const std::string& host = profile.hosts[i];
      inside = inside &&
               std::find(credential.hosts.begin(), credential.hosts.end(), host) !=
                   credential.hosts.end() &&
               rules.RuleOn(host, profile.ports[i]).allowed;
    }
    if (inside) return &profile;
  }
  return nullptr;
}

std::string OpenShellProxyUrl(std::uint16_t proxy_port) {
  return fmt::format("http://{}:{}", kOpenShellHostAlias, proxy_port);
}

std::map<std::string, std::string> OpenShellCommandEnvironment(
    const SandboxSpec& spec, const std::vector<std::string>& provided, std::uint16_t proxy_port) {
  std::map<std::string, std::string> environment = spec.environment;
  // A provider's credential is OpenShell's placeholder in the sandbox; our
  // stand-in would hide it.
  for (const std::string& variable : provided) environment.erase(variable);
  // OpenShell's proxy terminates TLS, and its supervisor points the child
  // at its own CA bundle through SSL_CERT_FILE, REQUESTS_CA_BUNDLE,
  // CURL_CA_BUNDLE, GIT_SSL_CAINFO, NODE_EXTRA_CA_CERTS and DENO_CERT
  // (crates/openshell-supervisor-process/src/child_env.rs, v0.0.111). Exec
  // puts `--env` pairs before the command as K=V, so ours would win
  // (build_remote_exec_command, crates/openshell-server/src/grpc/sandbox.rs)
  // and every HTTPS host would fail its certificate check. Our proxy's CA
  // is of no use here: the sandbox reaches it only by plain-http base URLs.
  for (std::string_view name : policy::kCommonCaVariables) environment.erase(std::string(name));
  for (std::string_view name : policy::kExtraCaVariables) environment.erase(std::string(name));
  for (const policy::ToolProfile& profile : policy::ToolProfiles()) {
    for (std::string_view name : profile.ca_variables) environment.erase(std::string(name));
  }
  if (proxy_port == 0) return environment;
  const std::string proxy = OpenShellProxyUrl(proxy_port);
  // Not for a provider's credential: its placeholder resolves only on its
  // profile's endpoints, never at our proxy.
  const auto urls = OpenShellBaseUrls(proxy, spec.tool, environment);
  for (const auto& [variable, url] : urls) environment[variable] = url;
  // For anything else: $MOJOUP_PROXY_URL/<host>/<path> reaches https://<host>/<path>.
  environment["MOJOUP_PROXY_URL"] = proxy;
  return environment;
}

std::map<std::string, std::string> OpenShellBaseUrls(
    const std::string& proxy, const std::string& tool,
    const std::map<std::string, std::string>& environment) {
  std::map<std::string, std::string> urls;
  for (const policy::ToolProfile& profile : policy::ToolProfiles()) {
    if (profile.base_url_variable.empty()) continue;
    bool wanted = profile.name == tool;
    for (const policy::ApiKeyVariable& key : profile.api_key_variables) {
      wanted = wanted || environment.count(std::string(key.name)) > 0;
    }
    if (wanted) {
      urls[std::string(profile.base_url_variable)] =
          fmt::format("{}/{}", proxy, profile.base_url_upstream);
    }
  }
  return urls;
}

}  // namespace mojoup::sandbox

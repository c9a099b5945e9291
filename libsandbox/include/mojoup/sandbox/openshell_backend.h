// The openshell runtime: one OpenShell sandbox per session, driven through
// the `openshell` CLI (FACTS.md, "OpenShell", "Driving it for one session").
//
//   create  openshell sandbox create --name mojoup-<id> --from IMAGE
//             --policy <session>/openshell-policy.yaml --label mojoup.session=<id>
//             --driver-config-json '{"docker":{"mounts":[...same-path binds...]}}'
//             then `-- true` (<= v0.0.110) or `--detach -- sleep infinity` (>= v0.0.111)
//   run     openshell sandbox exec -n NAME --no-tty --workdir REPO --env K=V... -- CMD
//   remove  openshell sandbox delete NAME   ("not found" counts as gone)
//   list    openshell sandbox list --selector k=v,... -o json
//
// OpenShell's proxy owns egress in its sandboxes and overrides the proxy
// variables, so the session's rules become its network_policies and our
// credential proxy is reached as a base URL at host.openshell.internal (the
// gateway of the `openshell` Docker bridge, where the proxy must listen).
// exec does not stream stdin: it reads it whole (up to 4 MiB) first.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "mojoup/probe/minimums.h"
#include "mojoup/probe/openshell_cli.h"
#include "mojoup/sandbox/backend.h"

namespace mojoup::sandbox {

// Sessions read `status -o json` and `sandbox get -o json` (and mount the
// repository at its own path): this CLI and gateway version, the probe's minimum.
inline constexpr probe::SemVer kMinOpenShellForSessions = probe::kMinOpenShell;

struct OpenShellBackendOptions {
  std::string path = "openshell";  // the CLI
  probe::SemVer version;           // what `openshell --version` said, read once per run
  // The `openshell` Docker bridge's gateway address ("172.18.0.1"), where the
  // sandboxes find host.openshell.internal and so our proxy.
  std::string bridge_gateway;
  std::chrono::milliseconds create_timeout{120000};
  std::chrono::milliseconds call_timeout{30000};
};

// Fails when the version cannot run sessions (below v0.0.92), with one
// sentence saying so.
absl::StatusOr<std::unique_ptr<Backend>> MakeOpenShellBackend(OpenShellBackendOptions options);

// A label value as OpenShell (Kubernetes rules) accepts it: values that are
// not already <= 63 of [A-Za-z0-9-_.] become "h" + 16 hex digits of their
// SHA-256.
std::string OpenShellLabelValue(const std::string& value);

// The base-URL variables that send a tool's or a credential's API traffic
// through our proxy at `proxy` ("http://host.openshell.internal:40123"):
// ANTHROPIC_BASE_URL, OPENAI_BASE_URL, KILO_API_URL.
std::map<std::string, std::string> OpenShellBaseUrls(
    const std::string& proxy, const std::string& tool,
    const std::map<std::string, std::string>& environment);

}  // namespace mojoup::sandbox

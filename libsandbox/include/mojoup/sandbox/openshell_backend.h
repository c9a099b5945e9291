// The openshell runtime: one OpenShell sandbox per session, driven through
// the `openshell` CLI (FACTS.md, "OpenShell", "Driving it for one session";
// what each release does is in libsandbox/testing/FAKE_OPENSHELL.md).
//
//   create  openshell sandbox create --name mojoup-<12 of the id> --from REGISTRY/IMAGE:TAG
//             --policy <session>/openshell-policy.yaml --label mojoup.session=<id>
//             --driver-config-json '{"docker":{"mounts":[...same-path binds...]}}'
//             --detach -- sleep infinity   (<= v0.0.110: -- true)
//   run     openshell sandbox exec -n NAME --no-tty|--tty [--no-login-shell]
//             --workdir REPO --env K=V... -- /bin/sh -c 'echo $$ >PIDFILE; exec "$@"' sh CMD
//   signal  (from `stop`) openshell sandbox exec -n NAME -- /bin/sh -c 'kill -SIG PID'
//   remove  openshell sandbox delete NAME   ("not found" counts as gone)
//   list    openshell sandbox list --selector k=v,... -o json
//
// OpenShell's proxy owns egress in its sandboxes and overrides the proxy
// variables, so the session's rules become its network_policies and our
// credential proxy is reached as a base URL at host.openshell.internal (the
// address the Docker driver maps it to, where the proxy must listen).
// With a terminal (`--tty` and a terminal on stdin) exec streams input and
// window changes (its interactive exec, v0.0.50 and later); without one it
// reads stdin whole (up to 4 MiB) first, and never reads a terminal
// (v0.0.111 crates/openshell-cli/src/run.rs sandbox_exec_grpc).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "mojoup/probe/command_runner.h"
#include "mojoup/probe/minimums.h"
#include "mojoup/probe/openshell_cli.h"
#include "mojoup/sandbox/backend.h"

namespace mojoup::sandbox {

// Sessions read `status -o json` and `sandbox get -o json` (and mount the
// repository at its own path): this CLI and gateway version, the probe's minimum.
inline constexpr probe::SemVer kMinOpenShellForSessions = probe::kMinOpenShell;

// `process.run_as_user` takes a numeric uid from this release, if it is
// 1000 or more (MIN_SANDBOX_UID, crates/openshell-policy/src/lib.rs);
// before it only `sandbox`.
inline constexpr probe::SemVer kOpenShellNumericUser{0, 0, 76};

// `process.run_as_user` takes any uid from 1 from this release
// (crates/openshell-server/src/grpc/validation.rs at v0.0.110).
inline constexpr probe::SemVer kOpenShellAnyUser{0, 0, 110};

// From this release the proxy's network_policies entry reaches
// host.openshell.internal by its host alone; before it the entry also needs
// the bridge's gateway as an allowed IP (FACTS.md, "Driving it").
inline constexpr probe::SemVer kOpenShellHostAliasAllowed{0, 0, 53};

// From this release a command after `sandbox create ... --` is the
// sandbox's main process, whose exit (even 0) puts the sandbox in phase
// Error; before it the command ran once over SSH after Ready
// (v0.0.110 run.rs sandbox_create).
inline constexpr probe::SemVer kOpenShellCreateCommandIsMain{0, 0, 111};

// `sandbox exec --no-login-shell` (NVIDIA/OpenShell#2852; v0.1.0 release
// notes). Before it exec runs the command with `/bin/bash -lc`.
inline constexpr probe::SemVer kOpenShellNoLoginShell{0, 1, 0};

// Providers (`--provider`) carry credentials from this release: from it a
// static placeholder resolves only on its profile's endpoints
// (NVIDIA/OpenShell#2510; v0.0.111 docs/sandboxes/manage-providers.mdx).
inline constexpr probe::SemVer kOpenShellProviderEndpoints{0, 0, 103};

struct OpenShellBackendOptions {
  std::string path = "openshell";  // the CLI
  probe::SemVer version;           // what `openshell --version` said, read once per run
  // The address sandboxes reach as host.openshell.internal ("172.18.0.1",
  // the gateway of the driver's bridge unless the gateway maps it elsewhere),
  // where our proxy listens.
  std::string bridge_gateway;
  // Optional: what the driver mapped host.openshell.internal to in the
  // sandbox NAME (its container's ExtraHosts), nullopt when unknown. A
  // sandbox that looks elsewhere than bridge_gateway is removed and the
  // create fails, rather than leaving an agent without its API.
  std::function<std::optional<std::string>(const std::string& name)> host_address_of;
  // bridge_gateway was set by the operator (node.sandbox.openshell_host_address):
  // a sandbox that maps host.openshell.internal to Docker's `host-gateway`
  // is then taken to reach it.
  bool host_address_configured = false;
  // The gateway every call names, `-g gateway` before the command
  // (node.sandbox.openshell_gateway); empty: none, the CLI's own choice.
  std::string gateway;
  // The gateway shares no filesystem with this node
  // (node.sandbox.openshell_remote, or its metadata's is_remote when that is
  // auto; docs/openshell.md, "Remote gateways"): nothing is mounted; the
  // repository goes in as a copy and its work comes back through git
  // (Backend::BringBack). Its sandboxes reach our proxy only when
  // bridge_gateway was configured, as an address the gateway routes back to
  // this node; else every credential is left to OpenShell's providers.
  bool remote = false;
  std::chrono::milliseconds create_timeout{120000};
  std::chrono::milliseconds call_timeout{30000};
  // Runs every `openshell` call but the session's own exec (which streams
  // the caller's stdio): not owned, it must outlive the backend. Null: the
  // real runner (probe::MakeSystemCommandRunner); a harness lends
  // probe::testing::ScriptedCommandRunner.
  probe::CommandRunner* commands = nullptr;
};

// Fails when the version cannot run sessions (below v0.0.92), with one
// sentence saying so.
absl::StatusOr<std::unique_ptr<Backend>> MakeOpenShellBackend(OpenShellBackendOptions options);

// A label value as OpenShell (Kubernetes rules) accepts it: values that are
// not already <= 63 of [A-Za-z0-9-_.] become "h" + 16 hex digits of their
// SHA-256.
std::string OpenShellLabelValue(const std::string& value);

// A Docker reference with its registry and tag spelled out
// ("mojoup/agents:0.1.0" -> "docker.io/mojoup/agents:0.1.0", "debian" ->
// "docker.io/library/debian:latest"). OpenShell takes a bare name (no '/',
// ':' or '.') for one of its community images (v0.0.111
// crates/openshell-core/src/image.rs); Docker finds the local image under
// either spelling.
std::string QualifiedImageReference(const std::string& image);

// The error an `openshell` command printed, as one line: the message inside
// its miette report (unframed and unwrapped) and, for a gateway's refusal,
// the tonic Status's message alone.
std::string OpenShellErrorMessage(std::string_view text);

// The base-URL variables that send a tool's or a credential's API traffic
// through our proxy at `proxy` ("http://host.openshell.internal:40123"):
// ANTHROPIC_BASE_URL, OPENAI_BASE_URL, KILO_API_URL.
std::map<std::string, std::string> OpenShellBaseUrls(
    const std::string& proxy, const std::string& tool,
    const std::map<std::string, std::string>& environment);

}  // namespace mojoup::sandbox

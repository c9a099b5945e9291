// The openshell runtime on the host: where sandboxes reach it (the gateway's
// host.openshell.internal), what it mounts into them, and the files it
// writes for a session (OpenShell's policy; Codex's base URL is
// codex_config.h's).
//
// Where OpenShell's Docker driver points host.openshell.internal, read from
// the Docker daemon the way the driver sets it (v0.0.111
// crates/openshell-driver-docker/src/lib.rs: ensure_bridge_network,
// docker_gateway_route, docker_extra_hosts):
//   - its bridge is `openshell-docker` unless the gateway config names
//     another (network_name); one it creates carries the label
//     openshell.ai/managed-by=openshell;
//   - each sandbox container gets ExtraHosts host.openshell.internal:<ip>,
//     where ip is the gateway's host_gateway_ip when set, else the bridge's
//     IPv4 gateway, or `host-gateway` when the daemon runs in a VM (Docker
//     Desktop, Colima, OrbStack, ...).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mojoup/probe/docker_api.h"
#include "mojoup/sandbox/backend.h"
#include "mojoup/sandbox/openshell_policy.h"

namespace mojoup::sandbox {

inline constexpr std::string_view kOpenShellDockerNetwork = "openshell-docker";

struct OpenShellHost {
  std::string address;  // the IPv4 address sandboxes reach, "" when unknown
  std::string problem;  // one sentence when it cannot be known
};

// The IPv4 gateway of the driver's bridge: the network labelled
// openshell.ai/managed-by=openshell (`openshell-docker` first), else the
// network of that name. A gateway that maps host.openshell.internal
// elsewhere is caught on each new sandbox (OpenShellHostOf).
OpenShellHost FindOpenShellHost(probe::DockerApi& docker, const probe::DockerEndpoint& endpoint);

// What the sandbox NAME's container maps host.openshell.internal to (an IP,
// or "host-gateway"); nullopt when there is no such container or entry.
std::optional<std::string> OpenShellHostOf(probe::DockerApi& docker,
                                           const probe::DockerEndpoint& endpoint,
                                           const std::string& name);

// Whether a sandbox that maps host.openshell.internal to `mapped` reaches
// our proxy at `bridge_gateway`: one sentence saying what to set when not.
// `configured`: the operator named the address, so Docker's `host-gateway`
// is taken to reach it.
absl::Status CheckOpenShellHostAddress(const std::optional<std::string>& mapped,
                                       const std::string& bridge_gateway, bool configured);

// The Docker driver's configuration (--driver-config-json): the session's
// bind mounts.
std::string OpenShellDriverConfig(const std::vector<BindMount>& mounts);

// The session's rules as OpenShell's policy file, in the session's
// directory; returns its path. A policy OpenShell would refuse is refused
// here, naming our rule.
absl::StatusOr<std::string> WriteOpenShellPolicy(const SandboxSpec& spec,
                                                 const OpenShellPolicyOptions& policy);

}  // namespace mojoup::sandbox

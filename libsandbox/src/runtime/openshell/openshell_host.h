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

#include "mojoup/probe/docker_api.h"

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

}  // namespace mojoup::sandbox

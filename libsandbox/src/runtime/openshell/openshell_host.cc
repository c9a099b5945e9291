#include "runtime/openshell/openshell_host.h"

#include <arpa/inet.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "fmt/format.h"
#include "mojoup/internal/bounded_json.h"
#include "mojoup/internal/docker_api_version.h"
#include "mojoup/internal/docker_filters.h"
#include "mojoup/internal/json_codec.h"
#include "mojoup/internal/percent_encode.h"
#include "mojoup/sandbox/openshell_policy.h"

namespace mojoup::sandbox {
namespace {

namespace json = internal::json;

constexpr std::chrono::seconds kDockerTimeout{5};
constexpr std::string_view kManagedBy = "openshell.ai/managed-by=openshell";

// What the host side reads of the Docker daemon's answers. A daemon's
// answer is not ours to refuse: an entry of another shape is skipped
// (json::OrNull, Lenient), as if it were not there.
struct ListedContainer {
  std::string id;
};
struct Network {
  std::string name;
};
struct ContainerHosts {
  std::vector<std::optional<std::string>> extra_hosts;  // "host:ip"
};
struct Inspected {
  ContainerHosts host_config;
};
struct IpamConfig {
  std::string gateway;
};
struct Ipam {
  std::vector<std::optional<IpamConfig>> config;
};
struct NetworkDetail {
  Ipam ipam;
};

constexpr auto kListedContainer = json::OrNull<ListedContainer>(
    json::Message<ListedContainer>(json::Field("Id", &ListedContainer::id)));
constexpr auto kNetwork =
    json::OrNull<Network>(json::Message<Network>(json::Field("Name", &Network::name)));
constexpr auto kInspected = json::Message<Inspected>(
    json::Optional(
        "HostConfig", &Inspected::host_config,
        json::Message<ContainerHosts>(
            json::Optional("ExtraHosts", &ContainerHosts::extra_hosts, json::OrNull<std::string>())
                .Lenient()))
        .Lenient());
constexpr auto kNetworkDetail = json::Message<NetworkDetail>(
    json::Optional(
        "IPAM", &NetworkDetail::ipam,
        json::Message<Ipam>(json::Optional("Config", &Ipam::config,
                                           json::OrNull<IpamConfig>(json::Message<IpamConfig>(
                                               json::Field("Gateway", &IpamConfig::gateway))))
                                .Lenient()))
        .Lenient());

// GET `target` and read it with `codec`; nullopt when the daemon did not
// answer 200 or the answer is not of the shape `codec` describes.
template <typename T, typename Codec>
std::optional<T> GetJson(probe::DockerApi& docker, const probe::DockerEndpoint& endpoint,
                         const std::string& target, const Codec& codec) {
  auto reply =
      docker.Get(endpoint, std::string(internal::kDockerApiPrefix) + target, kDockerTimeout);
  if (reply.failure != probe::DockerReply::Failure::kNone || reply.status != 200) {
    return std::nullopt;
  }
  rapidjson::Document doc;
  if (!internal::ParseBoundedJson(reply.body, doc, "Docker's answer").ok()) return std::nullopt;
  T out{};
  if (!json::Read(doc, out, codec).ok()) return std::nullopt;
  return out;
}

bool IsIpv4(const std::string& text) {
  in_addr address{};
  return inet_pton(AF_INET, text.c_str(), &address) == 1;
}

// ExtraHosts entries are "host:ip" (the Engine API's form).
std::optional<std::string> AliasIn(const Inspected& container) {
  const std::string prefix = std::string(kOpenShellHostAlias) + ":";
  for (const auto& entry : container.host_config.extra_hosts) {
    if (entry && entry->starts_with(prefix)) return entry->substr(prefix.size());
  }
  return std::nullopt;
}

// The alias of the first container that matches `label`, if any has one.
std::optional<std::string> AliasOfContainers(probe::DockerApi& docker,
                                             const probe::DockerEndpoint& endpoint,
                                             std::string_view label) {
  auto list = GetJson<std::vector<std::optional<ListedContainer>>>(
      docker, endpoint, "/containers/json?all=1&filters=" + internal::DockerLabelFilters({std::string(label)}), kListedContainer);
  if (!list) return std::nullopt;
  for (const auto& item : *list) {
    if (!item) continue;
    auto inspected = GetJson<Inspected>(
        docker, endpoint, "/containers/" + internal::PercentEncode(item->id) + "/json", kInspected);
    if (!inspected) continue;
    if (auto alias = AliasIn(*inspected)) return alias;
  }
  return std::nullopt;
}

std::string BridgeGateway(const NetworkDetail& network) {
  for (const auto& config : network.ipam.config) {
    if (config && IsIpv4(config->gateway)) return config->gateway;
  }
  return {};
}

// The Docker driver's configuration (--driver-config-json).
struct DriverDocker {
  std::vector<BindMount> mounts;
};
struct DriverConfig {
  DriverDocker docker;
};

constexpr auto kDriverMount = json::Message<BindMount>(
    json::Const("type", "bind"), json::Field("source", &BindMount::source),
    json::Field("target", &BindMount::target), json::Field("read_only", &BindMount::read_only));
constexpr auto kDriverConfig = json::Message<DriverConfig>(json::Field(
    "docker", &DriverConfig::docker,
    json::Message<DriverDocker>(json::Field("mounts", &DriverDocker::mounts, kDriverMount))));

}  // namespace

OpenShellHost FindOpenShellHost(probe::DockerApi& docker, const probe::DockerEndpoint& endpoint) {
  OpenShellHost host;
  // The bridge the driver made (labelled; `openshell-docker` first), or the
  // one it uses by default. Other containers' ExtraHosts are not trusted:
  // they may belong to another user's gateway on the same daemon.
  using Networks = std::vector<std::optional<Network>>;
  const Networks labelled =
      GetJson<Networks>(docker, endpoint, "/networks?filters=" + internal::DockerLabelFilters({std::string(kManagedBy)}), kNetwork)
          .value_or(Networks{});
  const Network* chosen = nullptr;
  for (const auto& network : labelled) {
    if (!network) continue;
    if (chosen == nullptr || network->name == kOpenShellDockerNetwork) chosen = &*network;
  }
  // The list gives no IPAM on old daemons: inspect the one chosen by name.
  const std::string name = chosen != nullptr ? chosen->name : std::string(kOpenShellDockerNetwork);
  auto network = GetJson<NetworkDetail>(
      docker, endpoint, "/networks/" + internal::PercentEncode(name), kNetworkDetail);
  if (network) host.address = BridgeGateway(*network);
  if (host.address.empty()) {
    host.problem = fmt::format(
        "the OpenShell Docker driver's network is missing (no network labelled {} and no `{}` "
        "with an IPv4 gateway), so sandboxes could not reach the credential proxy; start the "
        "OpenShell gateway with its Docker driver, or set node.sandbox.openshell_host_address",
        kManagedBy, kOpenShellDockerNetwork);
  }
  return host;
}

std::optional<std::string> OpenShellHostOf(probe::DockerApi& docker,
                                           const probe::DockerEndpoint& endpoint,
                                           const std::string& name) {
  return AliasOfContainers(docker, endpoint, "openshell.ai/sandbox-name=" + name);
}

// The driver maps host.openshell.internal per gateway (host_gateway_ip,
// host-gateway): the proxy listens where the bridge's gateway is, so a
// sandbox that would look elsewhere cannot reach it. `host-gateway` is the
// daemon's own host address, which only the operator can name: a configured
// address is taken on trust.
absl::Status CheckOpenShellHostAddress(const std::optional<std::string>& mapped,
                                       const std::string& bridge_gateway, bool configured) {
  const bool trusted = configured && mapped == "host-gateway";
  if (!mapped || *mapped == bridge_gateway || trusted) return absl::OkStatus();
  return absl::FailedPreconditionError(fmt::format(
      "OpenShell maps {} to \"{}\" in its sandboxes, not to {} where the credential proxy "
      "listens; {}",
      kOpenShellHostAlias, *mapped, bridge_gateway,
      IsIpv4(*mapped) ? fmt::format("set node.sandbox.openshell_host_address to {} (the gateway's "
                                    "host_gateway_ip) and run again",
                                    *mapped)
                      : "set node.sandbox.openshell_host_address to an address of this host that "
                        "the sandboxes reach"));
}

std::string OpenShellDriverConfig(const std::vector<BindMount>& mounts) {
  return json::ToJson(DriverConfig{.docker = {.mounts = mounts}}, kDriverConfig);
}

absl::StatusOr<std::string> WriteOpenShellPolicy(const SandboxSpec& spec,
                                                 const OpenShellPolicyOptions& policy) {
  OpenShellPolicy translated = TranslateToOpenShell(*spec.rules, policy);
  // Refused here, before anything exists, rather than by the gateway
  // with an InvalidArgument that names no rule of ours.
  if (!translated.refused.empty()) return absl::InvalidArgumentError(translated.refused);
  const std::string policy_file = spec.session_dir + "/openshell-policy.yaml";
  std::ofstream file(policy_file, std::ios::trunc);
  file << translated.yaml;
  if (!file) return absl::PermissionDeniedError(fmt::format("cannot write {}", policy_file));
  return policy_file;
}

}  // namespace mojoup::sandbox

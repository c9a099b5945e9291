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
#include "mojoup/internal/json_codec.h"
#include "mojoup/internal/percent_encode.h"
#include "mojoup/sandbox/openshell_policy.h"

namespace mojoup::sandbox {
namespace {

namespace json = internal::json;

constexpr std::chrono::seconds kDockerTimeout{5};
constexpr std::string_view kManagedBy = "openshell.ai/managed-by=openshell";

// GET `target` as JSON; a null document when the daemon did not answer 200.
rapidjson::Document GetJson(probe::DockerApi& docker, const probe::DockerEndpoint& endpoint,
                            const std::string& target) {
  rapidjson::Document doc;
  auto reply =
      docker.Get(endpoint, std::string(internal::kDockerApiPrefix) + target, kDockerTimeout);
  if (reply.failure != probe::DockerReply::Failure::kNone || reply.status != 200) return doc;
  // On error the document is null, as the callers expect.
  internal::ParseBoundedJson(reply.body, doc, "Docker's answer").IgnoreError();
  return doc;
}

std::string LabelFilter(std::string_view label) {
  return internal::PercentEncode(fmt::format(R"({{"label":["{}"]}})", label));
}

bool IsIpv4(const std::string& text) {
  in_addr address{};
  return inet_pton(AF_INET, text.c_str(), &address) == 1;
}

// ExtraHosts entries are "host:ip" (the Engine API's form).
std::optional<std::string> AliasIn(const rapidjson::Value& container) {
  if (!container.IsObject() || !container.HasMember("HostConfig")) return std::nullopt;
  const auto& host_config = container["HostConfig"];
  if (!host_config.IsObject() || !host_config.HasMember("ExtraHosts") ||
      !host_config["ExtraHosts"].IsArray()) {
    return std::nullopt;
  }
  const std::string prefix = std::string(kOpenShellHostAlias) + ":";
  for (const auto& entry : host_config["ExtraHosts"].GetArray()) {
    if (!entry.IsString()) continue;
    std::string_view text = entry.GetString();
    if (text.substr(0, prefix.size()) == prefix) return std::string(text.substr(prefix.size()));
  }
  return std::nullopt;
}

// The alias of the first container that matches `label`, if any has one.
std::optional<std::string> AliasOfContainers(probe::DockerApi& docker,
                                             const probe::DockerEndpoint& endpoint,
                                             std::string_view label) {
  rapidjson::Document list =
      GetJson(docker, endpoint, "/containers/json?all=1&filters=" + LabelFilter(label));
  if (!list.IsArray()) return std::nullopt;
  for (const auto& item : list.GetArray()) {
    if (!item.IsObject() || !item.HasMember("Id") || !item["Id"].IsString()) continue;
    rapidjson::Document inspected = GetJson(
        docker, endpoint,
        std::string("/containers/") + internal::PercentEncode(item["Id"].GetString()) + "/json");
    if (auto alias = AliasIn(inspected)) return alias;
  }
  return std::nullopt;
}

std::string BridgeGateway(const rapidjson::Value& network) {
  if (!network.IsObject() || !network.HasMember("IPAM") || !network["IPAM"].IsObject() ||
      !network["IPAM"].HasMember("Config") || !network["IPAM"]["Config"].IsArray()) {
    return {};
  }
  for (const auto& config : network["IPAM"]["Config"].GetArray()) {
    if (config.IsObject() && config.HasMember("Gateway") && config["Gateway"].IsString() &&
        IsIpv4(config["Gateway"].GetString())) {
      return config["Gateway"].GetString();
    }
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
  rapidjson::Document labelled =
      GetJson(docker, endpoint, "/networks?filters=" + LabelFilter(kManagedBy));
  const rapidjson::Value* chosen = nullptr;
  if (labelled.IsArray()) {
    for (const auto& network : labelled.GetArray()) {
      if (!network.IsObject() || !network.HasMember("Name") || !network["Name"].IsString())
        continue;
      if (chosen == nullptr || network["Name"].GetString() == kOpenShellDockerNetwork) {
        chosen = &network;
      }
    }
  }
  // The list gives no IPAM on old daemons: inspect the one chosen by name.
  const std::string name =
      chosen != nullptr ? (*chosen)["Name"].GetString() : std::string(kOpenShellDockerNetwork);
  rapidjson::Document network =
      GetJson(docker, endpoint, "/networks/" + internal::PercentEncode(name));
  host.address = BridgeGateway(network);
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

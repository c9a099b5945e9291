// A named OpenShell gateway's record and credentials (see openshell_gateway.h).
#include "mojoup/probe/openshell_gateway.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>

#include "fmt/format.h"
#include "mojoup/internal/json_codec.h"
#include "mojoup/internal/openshell_names.h"
#include "mojoup/internal/safe_file.h"

namespace mojoup::probe {
namespace {

namespace json = mojoup::internal::json;

constexpr std::size_t kMaxMetadataBytes = 64 * 1024;

// GatewayMetadata's members without #[serde(default)] are required by
// serde: name, gateway_endpoint, is_remote, gateway_port. Others are
// ignored; auth_mode is optional (v0.0.111 bootstrap metadata.rs).
struct MetadataWire {
  std::string name;
  std::string gateway_endpoint;
  bool is_remote = false;
  std::uint16_t gateway_port = 0;
  std::optional<std::string> auth_mode;
};
constexpr auto kMetadataWire =
    json::Message<MetadataWire>(json::Field("name", &MetadataWire::name),
                                json::Field("gateway_endpoint", &MetadataWire::gateway_endpoint),
                                json::Field("is_remote", &MetadataWire::is_remote),
                                json::Field("gateway_port", &MetadataWire::gateway_port),
                                json::Optional("auth_mode", &MetadataWire::auth_mode));

// tls.rs sanitize_name: the mTLS directory's name.
std::string SanitizedName(std::string_view name) {
  std::string out;
  for (char c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '-' || c == '_';
    out += keep ? c : '_';
  }
  return out;
}

// lstat: a regular file, not a link to one.
bool IsRegularFile(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

bool Exists(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

absl::StatusOr<OpenShellGatewayMetadata> ReadMetadataFile(const std::string& path, bool system) {
  auto read = mojoup::internal::ReadRegularFile(path, kMaxMetadataBytes);
  if (!read.ok()) {
    if (absl::IsNotFound(read.status())) return read.status();
    return absl::FailedPreconditionError(
        fmt::format("the OpenShell gateway metadata {} cannot be read: {}", path,
                    std::string(read.status().message())));
  }
  const uid_t owner = read->info.st_uid;
  if (owner != ::geteuid() && owner != 0) {
    return absl::FailedPreconditionError(fmt::format(
        "the OpenShell gateway metadata {} belongs to another user (uid {}), so it was not "
        "trusted",
        path, owner));
  }
  auto wire = json::Parse<MetadataWire>(read->bytes, kMetadataWire, "the gateway metadata",
                                        {.max_bytes = kMaxMetadataBytes});
  if (!wire.ok()) {
    return absl::FailedPreconditionError(
        fmt::format("the OpenShell gateway metadata {} is not the CLI's record: {}", path,
                    std::string(wire.status().message())));
  }
  OpenShellGatewayMetadata metadata;
  metadata.path = path;
  metadata.name = wire->name;
  metadata.endpoint = wire->gateway_endpoint;
  metadata.is_remote = wire->is_remote;
  metadata.auth_mode = wire->auth_mode.value_or("");
  metadata.system = system;
  return metadata;
}

}  // namespace

std::optional<std::string> OpenShellConfigDir(Kernel& host) {
  // std::env::var("XDG_CONFIG_HOME") taken as it is when set.
  if (std::optional<std::string> xdg = host.GetEnv("XDG_CONFIG_HOME")) return *xdg + "/openshell";
  if (std::optional<std::string> home = host.GetEnv("HOME")) return *home + "/.config/openshell";
  return std::nullopt;
}

std::string OpenShellSystemConfigDir(Kernel& host) {
  std::optional<std::string> set = host.GetEnv("OPENSHELL_SYSTEM_GATEWAY_DIR");
  if (set && !set->empty() && set->front() == '/') return *set;
  return "/etc/openshell";
}

absl::StatusOr<OpenShellGatewayMetadata> ReadOpenShellGatewayMetadata(Kernel& host,
                                                                      const std::string& name) {
  if (!mojoup::internal::IsOpenShellGatewayName(name)) {
    return absl::InvalidArgumentError(
        fmt::format("\"{}\" is not an OpenShell gateway name (one path component)", name));
  }
  // user_entry_shadows_system: the user's record, when it exists, is the one.
  if (std::optional<std::string> user = OpenShellConfigDir(host)) {
    const std::string path = fmt::format("{}/gateways/{}/metadata.json", *user, name);
    if (Exists(path)) return ReadMetadataFile(path, false);
  }
  const std::string system =
      fmt::format("{}/gateways/{}/metadata.json", OpenShellSystemConfigDir(host), name);
  if (Exists(system)) return ReadMetadataFile(system, true);
  return absl::NotFoundError(
      fmt::format("the OpenShell CLI has no record of the gateway {}", name));
}

OpenShellGatewayCredentials FindOpenShellGatewayCredentials(
    Kernel& host, const OpenShellGatewayMetadata& metadata, const std::string& name) {
  OpenShellGatewayCredentials found;
  const std::string config = OpenShellConfigDir(host).value_or("");
  const std::string dir = fmt::format("{}/gateways/{}", config, name);
  auto want = [&](const std::vector<std::string>& files) {
    for (const std::string& file : files) {
      (IsRegularFile(file) ? found.present : found.missing).push_back(file);
    }
  };
  const std::string& mode = metadata.auth_mode;
  if (mode == "plaintext" || (mode.empty() && metadata.endpoint.rfind("http://", 0) == 0)) {
    found.kind = "none";
  } else if (mode == "cloudflare_jwt") {
    found.kind = "edge token";
    // load_edge_token: edge_token, else the legacy cf_token.
    if (IsRegularFile(dir + "/cf_token") && !IsRegularFile(dir + "/edge_token")) {
      want({dir + "/cf_token"});
    } else {
      want({dir + "/edge_token"});
    }
  } else if (mode == "oidc") {
    found.kind = "OIDC token";
    want({dir + "/oidc_token.json"});
  } else {
    found.kind = "mTLS";
    const std::string mtls = fmt::format("{}/gateways/{}/mtls", config, SanitizedName(name));
    want({mtls + "/ca.crt", mtls + "/tls.crt", mtls + "/tls.key"});
  }
  return found;
}

}  // namespace mojoup::probe

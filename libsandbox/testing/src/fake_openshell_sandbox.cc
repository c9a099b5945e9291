#include "mojoup/sandbox/testing/fake_openshell_sandbox.h"

#include <fcntl.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "mojoup/internal/atomic_file.h"

namespace mojoup::sandbox::testing {
namespace {

std::string OptionsJson(const FakeOpenShellSandboxOptions& options) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("version");
  w.String(options.version);
  w.Key("gateway_version");
  w.String(options.gateway_version);
  w.Key("gateway");
  w.String(options.gateway);
  w.Key("gateway_name");
  w.String(options.gateway_name);
  w.Key("remote");
  w.Bool(options.remote);
  w.Key("enable_bind_mounts");
  w.Bool(options.enable_bind_mounts);
  w.Key("allow_driver_config");
  if (options.allow_driver_config) {
    w.Bool(*options.allow_driver_config);
  } else {
    w.Null();
  }
  w.Key("bind_mount_admission");
  w.String(options.bind_mount_admission);
  w.Key("driver");
  w.String(options.driver);
  w.Key("fail_create");
  w.String(options.fail_create);
  w.Key("phase_error");
  w.Bool(options.phase_error);
  w.Key("network");
  w.String(options.network);
  w.Key("host_gateway_ip");
  w.String(options.host_gateway_ip);
  w.Key("imported_profiles");
  w.StartArray();
  for (const std::string& id : options.imported_profiles) w.String(id);
  w.EndArray();
  w.Key("extra_hosts");
  w.StartArray();
  for (const std::string& entry : options.extra_hosts) w.String(entry);
  w.EndArray();
  w.Key("upstream_ca");
  w.String(options.upstream_ca);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

// serde_json::to_string_pretty of GatewayMetadata: declared order, two
// spaces, None members left out.
std::string MetadataJson(const OpenShellGatewayConfig& gateway) {
  std::uint32_t port = 0;
  const std::size_t colon = gateway.endpoint.rfind(':');
  if (colon != std::string::npos && colon > gateway.endpoint.find("://") + 2) {
    for (char c : gateway.endpoint.substr(colon + 1)) {
      if (c < '0' || c > '9' || port > 65535) break;
      port = port * 10 + static_cast<std::uint32_t>(c - '0');
    }
  }
  if (port > 65535) port = 0;
  // No port in the URL: the scheme's.
  if (colon == std::string::npos || colon <= gateway.endpoint.find("://") + 2) {
    port = gateway.endpoint.rfind("http://", 0) == 0 ? 80 : 443;
  }
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  w.SetIndent(' ', 2);
  w.StartObject();
  w.Key("name");
  w.String(gateway.name);
  w.Key("gateway_endpoint");
  w.String(gateway.endpoint);
  w.Key("is_remote");
  w.Bool(gateway.remote);
  w.Key("gateway_port");
  w.Uint(port);
  if (!gateway.auth_mode.empty()) {
    w.Key("auth_mode");
    w.String(gateway.auth_mode);
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

// ensure_parent_dir_restricted and set_file_owner_only: 0700 directories,
// 0600 files.
void WritePrivate(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  fs::create_directories(parent, ec);
  if (ec || ::chmod(parent.c_str(), 0700) != 0) {
    throw std::runtime_error("cannot create " + parent.string());
  }
  if (absl::Status put = mojoup::internal::ReplaceAtomically(path, text, 0600); !put.ok()) {
    throw std::runtime_error("cannot write " + path + ": " + std::string(put.message()));
  }
}

}  // namespace

std::string WriteOpenShellGatewayConfig(const std::string& config_home,
                                        const OpenShellGatewayConfig& gateway) {
  const std::string root = config_home + "/openshell";
  const std::string dir = root + "/gateways/" + gateway.name;
  const std::string metadata = dir + "/metadata.json";
  WritePrivate(metadata, MetadataJson(gateway));
  if (gateway.credentials) {
    const std::string& mode = gateway.auth_mode;
    if (mode == "cloudflare_jwt") {
      WritePrivate(dir + "/edge_token", "fake-edge-token");
    } else if (mode == "oidc") {
      WritePrivate(
          dir + "/oidc_token.json",
          R"({"access_token":"fake","issuer":"https://issuer.invalid","client_id":"cli"})");
    } else if (mode != "plaintext") {
      for (const char* file : {"ca.crt", "tls.crt", "tls.key"}) {
        WritePrivate(dir + "/mtls/" + file, std::string("fake ") + file + "\n");
      }
    }
  }
  if (gateway.active) WritePrivate(root + "/active_gateway", gateway.name);
  return metadata;
}

std::string InstallFakeOpenShellSandbox(const std::string& dir, const std::string& fake_binary,
                                        const FakeOpenShellSandboxOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target = fs::absolute(fake_binary, ec);
  if (ec || !fs::exists(target)) {
    throw std::runtime_error("no fake-openshell program at " + fake_binary);
  }

  const std::string config = dir + "/fake-openshell.json";
  if (absl::Status put = mojoup::internal::ReplaceAtomically(config, OptionsJson(options), 0644);
      !put.ok()) {
    throw std::runtime_error("cannot install " + config + ": " + std::string(put.message()));
  }

  // A symlink, not a copy: the program finds its options next to the name it
  // was started by, so the link's directory is what counts.
  const std::string link = dir + "/openshell";
  fs::remove(link, ec);
  if (::symlink(target.c_str(), link.c_str()) != 0) {
    throw std::runtime_error("cannot link " + link + " to " + target.string() + ": " +
                             std::strerror(errno));
  }

  // Writable by whoever the code under test runs as (tests drop to `nobody`):
  // the call log, and the gateway's provider and policy stores and their locks.
  const std::string log = dir + "/openshell-calls.jsonl";
  for (const std::string& file :
       {log, dir + "/fake-openshell-providers.json", dir + "/fake-openshell-providers.json.lock",
        dir + "/fake-openshell-policies.txt", dir + "/fake-openshell-policies.txt.lock"}) {
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd < 0 || ::fchmod(fd, 0666) != 0) {
      if (fd >= 0) ::close(fd);
      throw std::runtime_error("cannot create " + file + ": " + std::strerror(errno));
    }
    ::close(fd);
  }
  return log;
}

}  // namespace mojoup::sandbox::testing

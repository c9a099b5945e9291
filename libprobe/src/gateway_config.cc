// Reads the OpenShell gateway's gateway.toml and lists the refusals it
// guarantees for the node's sandboxes, which are Docker-driver sandboxes
// with same-path host bind mounts passed as caller driver config. These
// settings are valid configurations, so `openshell-gateway config preflight`
// passes them; only the file says they will refuse us.
//
// toml++ is used header-only and without exceptions, in this file alone.
#define TOML_EXCEPTIONS 0
#include "gateway_config.h"

#include <toml++/toml.h>

namespace mojoup::probe::internal {
namespace {

std::optional<std::string> NonEmptyEnv(Kernel& host, const std::string& name) {
  std::optional<std::string> value = host.GetEnv(name);
  if (!value || value->empty()) return std::nullopt;
  return value;
}

// `[openshell.drivers.docker]`, where both series keep the Docker driver's
// settings (v0.0.111 crates/openshell-server/src/config_file.rs, `drivers`
// of OpenShellRoot; 0.1.x docs/reference/gateway-config.mdx).
toml::node_view<const toml::node> DockerTable(const toml::table& file) {
  return file["openshell"]["drivers"]["docker"];
}

// True only for a boolean `true`: an absent key has the default, and any
// other value is not the consent the driver needs.
bool IsTrue(toml::node_view<const toml::node> value) {
  const toml::value<bool>* flag = value.as_boolean();
  return flag != nullptr && flag->get();
}

void JudgeSeries00(const toml::table& file, std::vector<GatewayRefusalKind>& refusals) {
  // v0.0.92 and v0.0.111 crates/openshell-server/src/config_file.rs: load()
  // rejects `[openshell] version` above SCHEMA_VERSION, which is 1; a file
  // without it is accepted.
  if (const toml::value<std::int64_t>* version = file["openshell"]["version"].as_integer();
      version != nullptr && version->get() > 1) {
    refusals.push_back(GatewayRefusalKind::kNewerSchema);
  }
  // v0.0.92 and v0.0.111 crates/openshell-driver-docker/src/lib.rs:
  // DockerComputeConfig::enable_bind_mounts defaults to false, and a create
  // with bind mounts is refused without it. The gateway takes it from the
  // file only: no flag or environment variable sets it (v0.0.111
  // crates/openshell-server/src/cli.rs), nor is it inherited from
  // `[openshell.gateway]` (config_file.rs inheritable_keys).
  if (!IsTrue(DockerTable(file)["enable_bind_mounts"])) {
    refusals.push_back(GatewayRefusalKind::kBindMountsOff);
  }
}

// The 0.1.x rules come from OpenShell's 0.1.0 release notes and docs
// (docs/upgrade/0-1-0.mdx, docs/reference/gateway-config.mdx), in the order
// a 0.1.2 gateway checks a create: driver config, bind mounts, admission.
void JudgeSeries01(const toml::table& file, std::vector<GatewayRefusalKind>& refusals) {
  // Schema version 2 (PR #2814): a file without `[openshell] version`, or with
  // any value but 2, stops the gateway at startup.
  const toml::value<std::int64_t>* version = file["openshell"]["version"].as_integer();
  if (version == nullptr || version->get() != 2) {
    refusals.push_back(GatewayRefusalKind::kLegacySchema);
  }
  // `allow_driver_config`, off by default since 0.1.0 (PR #3538, #3571).
  if (!IsTrue(DockerTable(file)["allow_driver_config"])) {
    refusals.push_back(GatewayRefusalKind::kDriverConfigOff);
  }
  // `enable_bind_mounts`, off by default (gateway-config.mdx, Docker driver).
  if (!IsTrue(DockerTable(file)["enable_bind_mounts"])) {
    refusals.push_back(GatewayRefusalKind::kBindMountsOff);
  }
  // `[openshell.drivers.docker.resource_admission] enabled`, true by default,
  // refuses every host bind: no label resolver can vouch for a host path
  // (upgrade/0-1-0.mdx, "Approve caller-selected compute resources").
  const toml::value<bool>* admission =
      DockerTable(file)["resource_admission"]["enabled"].as_boolean();
  if (admission == nullptr || admission->get()) {
    refusals.push_back(GatewayRefusalKind::kResourceAdmission);
  }
}

}  // namespace

std::optional<std::string> GatewayConfigPath(Kernel& host) {
  // `--config` or OPENSHELL_GATEWAY_CONFIG, else the default path (v0.0.111
  // crates/openshell-server/src/cli.rs RunArgs::config, resolve_config_path;
  // 0.1.x: deploy/man/openshell-gateway.8.md, config preflight, reads a
  // nonempty OPENSHELL_GATEWAY_CONFIG, else $XDG_CONFIG_HOME/openshell/
  // gateway.toml). A `--config` on the gateway's own
  // command line cannot be seen from here; an empty variable counts as unset,
  // as clap reads it.
  if (std::optional<std::string> named = NonEmptyEnv(host, "OPENSHELL_GATEWAY_CONFIG")) {
    return named;
  }
  // The default: <openshell config dir>/gateway.toml, the directory being
  // $XDG_CONFIG_HOME/openshell, else $HOME/.config/openshell (v0.0.111
  // crates/openshell-server/src/defaults.rs default_gateway_config_path,
  // crates/openshell-core/src/paths.rs xdg_config_dir). An empty
  // XDG_CONFIG_HOME would make it relative to the gateway's working
  // directory, which is unknown here: nothing is judged then.
  if (std::optional<std::string> xdg = host.GetEnv("XDG_CONFIG_HOME")) {
    if (xdg->empty()) return std::nullopt;
    return *xdg + "/openshell/gateway.toml";
  }
  if (std::optional<std::string> home = NonEmptyEnv(host, "HOME")) {
    return *home + "/.config/openshell/gateway.toml";
  }
  return std::nullopt;
}

std::optional<GatewayConfigReading> ReadGatewayConfig(Kernel& host, const SemVer& version) {
  const bool series00 = version.major == 0 && version.minor == 0;
  const bool series01 = version.major == 0 && version.minor == 1;
  if (!series00 && !series01) return std::nullopt;
  std::optional<std::string> path = GatewayConfigPath(host);
  if (!path) return std::nullopt;
  std::optional<std::string> text = host.ReadFile(*path);
  if (!text) return std::nullopt;

  GatewayConfigReading reading;
  reading.path = *path;
  toml::parse_result parsed = toml::parse(*text, *path);
  if (!parsed) {
    const toml::parse_error& error = parsed.error();
    reading.parse_error = GatewayConfigReading::ParseError{
        std::string(error.description()), static_cast<int>(error.source().begin.line),
        static_cast<int>(error.source().begin.column)};
    return reading;
  }
  const toml::table& file = parsed.table();
  if (series00) {
    JudgeSeries00(file, reading.refusals);
  } else {
    JudgeSeries01(file, reading.refusals);
  }
  return reading;
}

bool StopsGatewayStart(GatewayRefusalKind kind) {
  return kind == GatewayRefusalKind::kLegacySchema || kind == GatewayRefusalKind::kNewerSchema;
}

}  // namespace mojoup::probe::internal

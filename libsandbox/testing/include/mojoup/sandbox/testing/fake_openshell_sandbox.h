// A fake `openshell` whose sandbox commands are real Docker containers, for
// testing the OpenShell runtime end to end without an OpenShell gateway.
//
// The program is `fake-openshell` (built into bin/). It speaks the real CLI's
// grammar for `--version`, `status`, `gateway info` and `sandbox create |
// list | get | exec | delete` as of the configured version (a flag that
// version lacks is a clap-style error, exit 2), and backs each sandbox with a
// container on the local dockerd labelled the way OpenShell's Docker driver
// labels them. InstallFakeOpenShellSandbox() puts it in a directory as
// `openshell` with its options beside it; anything that runs `openshell` from
// there (PATH or a full path) meets it.
//
//   FakeOpenShellSandboxOptions options;
//   options.version = "0.0.110";
//   std::string log = InstallFakeOpenShellSandbox(dir, bin_dir + "/fake-openshell", options);
//   // or, with the installed package: InstallFakeOpenShellSandbox(dir, options)
//   // run the code under test with PATH=dir:$PATH, then read `log`:
//   // one JSON array per invocation, the full argv (argv[0] as it was given).
//
// Each install directory is its own gateway: sandboxes created through one
// directory are invisible to the fake installed in another (they carry the
// label openshell.ai/sandbox-namespace derived from the directory), so tests
// running side by side do not see or delete each other's sandboxes.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "mojoup/sandbox/testing/programs.h"

namespace mojoup::sandbox::testing {

struct FakeOpenShellSandboxOptions {
  // What `openshell --version` prints ("openshell 0.0.111"); also selects the
  // grammar and the create semantics of that release (0.0.37 .. 0.0.111 from
  // source, 0.1.0 .. 0.1.10 from release notes; see FAKE_OPENSHELL.md).
  std::string version = "0.0.111";
  // The gateway's own version, reported as "version" by `status -o json`;
  // empty: the same as `version`. A 0.0.x CLI and a 0.1.x gateway (or the
  // reverse) cannot talk: sandbox and provider commands fail.
  std::string gateway_version;
  // `status -o json`: connected | connected_http | error | disconnected |
  // not_configured | unreachable | unauthenticated. Only connected lets
  // sandbox commands through; the others fail them with that state's error
  // (exit 1). connected_http: gRPC failed while the HTTP health check
  // answered, so every gRPC call fails too.
  std::string gateway = "connected";
  // The gateway's name and what its metadata says of it: this double plays
  // the gateway a package installs, seeded as the system-level active gateway
  // (the loopback gateway's canonical name "openshell", v0.0.111
  // commands/gateway.rs) at https://127.0.0.1:17670. Calls select a gateway as
  // the CLI does (-g NAME, OPENSHELL_GATEWAY, the user's active_gateway file,
  // then this one); a user's metadata.json for the name (WriteOpenShellGatewayConfig)
  // shadows the seeded record; a name with no record fails with the CLI's
  // "Unknown gateway" error.
  std::string gateway_name = "openshell";
  bool remote = false;
  // The gateway config's [openshell.drivers.docker] enable_bind_mounts.
  bool enable_bind_mounts = true;
  // 0.1.x [openshell.drivers.docker] allow_driver_config; unset: the
  // release's default (0.0.x has no such switch and always accepts
  // --driver-config-json; 0.1.x defaults to false).
  std::optional<bool> allow_driver_config;
  // 0.1.x resource admission for host bind mounts: "enforced" (the default:
  // refused, Docker has no trusted label resolver for host binds),
  // "disabled" ([...resource_admission] enabled = false) or
  // "trusted_label_resolver" (admitted as if one existed). Ignored by 0.0.x.
  std::string bind_mount_admission = "enforced";
  // The gateway's compute driver: "docker" (the default) or "kubernetes".
  // kubernetes plays OpenShell's Kubernetes driver as of v0.0.111: no host
  // binds (a `docker` block in --driver-config-json is dropped silently),
  // the `kubernetes` block validated as the driver does, each PVC claim
  // played by a Docker named volume of the claim's name (a claim with no
  // such volume leaves the sandbox provisioning), a per-sandbox named volume
  // at /sandbox seeded like the `workspace-init` init container, commands
  // as uid:gid 1000:1000 in /sandbox, and `sandbox stop|start` (see
  // FAKE_OPENSHELL.md). Both drivers have `sandbox upload|download`.
  std::string driver = "docker";
  // Non-empty: `sandbox create` fails with this message, exit 1.
  std::string fail_create;
  // Create succeeds but the sandbox is in phase Error.
  bool phase_error = false;
  // The Docker driver's bridge network (created if missing, labelled
  // openshell.ai/managed-by=openshell); OpenShell's default is
  // "openshell-docker".
  std::string network = "openshell-docker";
  // The driver's host_gateway_ip: the address host.openshell.internal and
  // host.docker.internal resolve to in sandboxes. Empty: the bridge's
  // gateway, or Docker's host-gateway on Docker Desktop-like daemons.
  std::string host_gateway_ip;
  // 0.1.x ships no provider profiles: these ids of the v0.0.111 built-in
  // ones (claude-code, codex, copilot, github) play the profiles an
  // administrator imported. 0.0.x gateways have them all built in.
  std::vector<std::string> imported_profiles;
  // Test hooks for the sandbox's proxy, not OpenShell settings. Each
  // "NAME:ADDRESS" goes into every sandbox's /etc/hosts, where the proxy
  // resolves names first (the fake has no DNS); upstream_ca names a PEM
  // file of CAs the proxy trusts upstream besides the image's bundle.
  std::vector<std::string> extra_hosts;
  std::string upstream_ca;
};

// What WriteOpenShellGatewayConfig writes for one gateway.
struct OpenShellGatewayConfig {
  std::string name = "openshell";
  std::string endpoint = "https://127.0.0.1:17670";
  bool remote = false;
  // metadata.json's auth_mode: "" (mTLS), "mtls", "plaintext",
  // "cloudflare_jwt" (an edge_token) or "oidc" (oidc_token.json).
  std::string auth_mode;
  bool credentials = true;  // write the mode's credential files
  bool active = true;       // write `active_gateway` naming it
};

// Writes a user's OpenShell config under `config_home` (what
// $XDG_CONFIG_HOME is for that user) as `openshell gateway add` leaves it
// (v0.0.111 crates/openshell-bootstrap/src/metadata.rs
// store_gateway_metadata, mtls.rs, edge_token.rs, oidc_token.rs, paths.rs):
// openshell/gateways/NAME/metadata.json, the credentials of its auth mode
// (mtls/{ca.crt,tls.crt,tls.key}, 0600 files in 0700 directories;
// placeholder contents, the fake does not check them), and
// openshell/active_gateway. Returns the metadata file's path; throws
// std::runtime_error when it cannot.
std::string WriteOpenShellGatewayConfig(const std::string& config_home,
                                        const OpenShellGatewayConfig& gateway);

// Writes DIR/openshell (a symlink to `fake_binary`) and DIR/fake-openshell.json
// (the options), creates the invocation log DIR/openshell-calls.jsonl (mode
// 0666, for code under test that runs as another user) and returns its path.
// Throws std::runtime_error when it cannot.
std::string InstallFakeOpenShellSandbox(const std::string& dir, const std::string& fake_binary,
                                        const FakeOpenShellSandboxOptions& options);

// The same with the fake-openshell that FindTestingProgram() finds (in the
// package's libexec/mojoup/, or beside this program in a build tree).
inline std::string InstallFakeOpenShellSandbox(const std::string& dir,
                                               const FakeOpenShellSandboxOptions& options) {
  std::string fake = FindTestingProgram("fake-openshell");
  if (fake.empty()) {
    throw std::runtime_error(
        "no fake-openshell program found (set MOJOUP_TESTING_PROGRAMS to its directory)");
  }
  return InstallFakeOpenShellSandbox(dir, fake, options);
}

}  // namespace mojoup::sandbox::testing

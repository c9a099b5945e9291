// A named OpenShell gateway as the `openshell` CLI knows it on this machine:
// its name rules, where the CLI keeps its record and credentials for this
// user, and the record itself (v0.0.111 crates/openshell-bootstrap/src/
// paths.rs, metadata.rs, mtls.rs, edge_token.rs, oidc_token.rs;
// crates/openshell-cli/src/main.rs resolve_gateway, tls.rs).
//
//   auto metadata = probe::ReadOpenShellGatewayMetadata(kernel, name);
//   if (metadata.ok() && metadata->is_remote) ...;   // NotFound: no record
//
// The record is the user's file, read as untrusted input: its last
// component is not followed, it must be a regular file of at most 64 KiB
// owned by the user (or root, for the system layer), and it must have the
// CLI's required members.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "mojoup/probe/kernel.h"

namespace mojoup::probe {

// The user's OpenShell config root: $XDG_CONFIG_HOME/openshell, else
// $HOME/.config/openshell (openshell-core paths.rs xdg_config_dir); nullopt
// when neither is set.
std::optional<std::string> OpenShellConfigDir(Kernel& host);

// The read-only system layer: $OPENSHELL_SYSTEM_GATEWAY_DIR when it is a
// non-empty absolute path, else /etc/openshell (bootstrap paths.rs).
std::string OpenShellSystemConfigDir(Kernel& host);

struct OpenShellGatewayMetadata {
  std::string path;        // the file read
  std::string name;        // "name"
  std::string endpoint;    // "gateway_endpoint"
  bool is_remote = false;  // "is_remote"
  std::string auth_mode;   // "auth_mode": "" (mTLS), mtls, plaintext, cloudflare_jwt, oidc
  bool system = false;     // from the system layer, not the user's
};

// The gateway's metadata.json as the CLI resolves it: the user's
// CONFIG/openshell/gateways/NAME/metadata.json when it exists (it shadows the
// system's), else the system layer's. NotFound when neither exists; another
// error, one sentence naming the file, when it cannot be used.
absl::StatusOr<OpenShellGatewayMetadata> ReadOpenShellGatewayMetadata(Kernel& host,
                                                                      const std::string& name);

// The credentials the CLI presents to the gateway, by its auth mode (main.rs
// apply_auth_with_status, tls.rs tls_dir_for_gateway): for mTLS the files
// CONFIG/openshell/gateways/<sanitized NAME>/mtls/{ca.crt,tls.crt,tls.key},
// for cloudflare_jwt the edge_token (or legacy cf_token), for oidc
// oidc_token.json, for plaintext (or an http:// endpoint) none.
struct OpenShellGatewayCredentials {
  std::string kind;                  // "mTLS", "edge token", "OIDC token", "none"
  std::vector<std::string> present;  // files found (regular, not links)
  std::vector<std::string> missing;  // files that must be there and are not
};
OpenShellGatewayCredentials FindOpenShellGatewayCredentials(
    Kernel& host, const OpenShellGatewayMetadata& metadata, const std::string& name);

}  // namespace mojoup::probe

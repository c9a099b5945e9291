// The OpenShell gateway's own configuration file, gateway.toml, read to
// foresee the refusals it guarantees for the node's sandboxes. Only this
// header's .cc includes toml++ (a heavy header).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mojoup/probe/kernel.h"
#include "mojoup/probe/semver.h"
#include "openshell_refusal.h"

namespace mojoup::probe::internal {

// What gateway.toml says, judged by the rules of one OpenShell series.
struct GatewayConfigReading {
  std::string path;
  // The refusals the file guarantees (a setting it leaves out has its
  // default): first one that stops the gateway starting, if any, then those
  // of `sandbox create` in the order the gateway checks them.
  std::vector<GatewayRefusalKind> refusals;
  // Set when the file does not parse as TOML (then `refusals` is empty).
  struct ParseError {
    std::string description;
    int line = 0;
    int column = 0;
  };
  std::optional<ParseError> parse_error;
};

// The file the gateway would read when started in this process's
// environment: OPENSHELL_GATEWAY_CONFIG, else $XDG_CONFIG_HOME/openshell/
// gateway.toml, else $HOME/.config/openshell/gateway.toml. nullopt when the
// environment names none.
std::optional<std::string> GatewayConfigPath(Kernel& host);

// Reads and judges that file for a gateway of `version`'s series (0.0.x or
// 0.1.x). nullopt when there is nothing to judge: no path, a file that is
// not there or cannot be read (the gateway may be remote, or run as another
// user), or a series this library has no rules for.
std::optional<GatewayConfigReading> ReadGatewayConfig(Kernel& host, const SemVer& version);

// Whether `kind` stops the gateway starting at all (a schema version it
// does not accept), rather than refusing a `sandbox create`.
bool StopsGatewayStart(GatewayRefusalKind kind);

}  // namespace mojoup::probe::internal

#include "mojoup/probe/testing/fake_openshell.h"

#include <sstream>
#include <stdexcept>

#include "mojoup/internal/atomic_file.h"

namespace mojoup::probe::testing {
namespace {

using Gateway = FakeOpenShellOptions::Gateway;

// The body of `status -o json` for each state, as the real CLI prints it.
std::string StatusScript(Gateway gateway, const std::string& version) {
  const std::string server = "https://127.0.0.1:17670";
  auto json = [&](const std::string& status, const std::string& extra) {
    return "cat <<'JSON'\n{\n  \"gateway\": \"local\",\n  \"server\": \"" + server +
           "\",\n  \"status\": \"" + status + "\"" + extra + "\n}\nJSON\nexit 0\n";
  };
  const std::string authenticated = ",\n  \"version\": \"" + version +
                                    "\",\n  \"authentication\": {\"status\": \"authenticated\", "
                                    "\"provider\": \"mTLS transport\"}";
  switch (gateway) {
    case Gateway::kConnected:
      return json("connected", authenticated);
    case Gateway::kConnectedHttp:
      return json("connected_http",
                  ",\n  \"http_status\": \"200 OK\",\n  \"authentication\": {\"status\": "
                  "\"not_required\", \"mode\": \"gateway\"}");
    case Gateway::kUnauthenticated:
      return json("connected",
                  ",\n  \"version\": \"" + version +
                      "\",\n  \"authentication\": {\"status\": \"failed\", "
                      "\"error\": \"OIDC credentials are missing; run `openshell gateway login "
                      "local`\"}");
    case Gateway::kError:
      return json("error",
                  ",\n  \"http_status\": \"503 Service Unavailable\",\n  \"error\": \"status: "
                  "Unavailable, message: \\\"compute driver not ready\\\"\"");
    case Gateway::kDisconnected:
      return json("disconnected",
                  ",\n  \"http_status\": \"502 Bad Gateway\",\n  \"error\": \"transport error\"");
    case Gateway::kNotConfigured:
      return "echo '{\"status\": \"not_configured\"}'\nexit 0\n";
    case Gateway::kUnreachable:
      return "echo 'Error:   x client error (Connect)' >&2\necho '  -> tcp connect error: "
             "Connection refused (os error 111)' >&2\nexit 1\n";
    case Gateway::kHang:
      return "exec sleep 60\n";
    case Gateway::kGarbage:
      return "echo 'Gateway: local'\nexit 0\n";
  }
  return "exit 1\n";
}

}  // namespace

std::string WriteFakeOpenShell(const std::string& dir, const FakeOpenShellOptions& options) {
  const std::string path = dir + "/openshell";
  std::ostringstream out;
  out << "#!/bin/sh\n# Fake openshell written by mojoup's test doubles.\n";
  out << "case \"$1\" in\n";
  out << "  -V|--version)\n";
  if (options.hang_on_version)
    out << "    exec sleep 60 ;;\n";
  else
    out << "    echo 'openshell " << options.version << "'; exit 0 ;;\n";
  out << "  status)\n";
  out << "    if [ \"$2\" != '-o' ] || [ \"$3\" != 'json' ]; then\n";
  out << "      echo 'Gateway: local'; exit 0\n    fi\n";
  out << "    "
      << StatusScript(options.gateway,
                      options.gateway_version.empty() ? options.version : options.gateway_version)
      << "    ;;\n";
  out << "  gateway)\n";
  out << "    if [ \"$2\" = 'info' ]; then\n";
  out << "      echo '{\"status\": \"healthy\", \"version\": \"" << options.version
      << "\", \"compute_drivers\": [\"docker\"]}'; exit 0\n    fi ;;\n";
  out << "esac\n";
  out << "echo \"error: unrecognized subcommand '$1'\" >&2\nexit 2\n";
  if (absl::Status put = mojoup::internal::ReplaceAtomically(path, out.str(), 0755); !put.ok()) {
    throw std::runtime_error("cannot install " + path + ": " + std::string(put.message()));
  }
  return path;
}

}  // namespace mojoup::probe::testing

// A fake `openshell` executable that speaks the real CLI's grammar and JSON
// (the design's FACTS.md, "OpenShell") with a scripted gateway state. It is a
// real program: put its directory on PATH, or name it in
// node.sandbox.openshell_path, and anything that runs `openshell` meets it.
//
//   FakeOpenShellOptions options;
//   options.gateway = FakeOpenShellOptions::Gateway::kDisconnected;
//   std::string path = WriteFakeOpenShell(temp_dir, options);  // temp_dir/openshell
#pragma once

#include <string>

namespace mojoup::probe::testing {

struct FakeOpenShellOptions {
  enum class Gateway {
    kConnected,        // status: connected, authenticated
    kConnectedHttp,    // status: connected_http
    kUnauthenticated,  // connected, but authentication failed
    kError,            // status: error
    kDisconnected,     // status: disconnected
    kNotConfigured,    // {"status":"not_configured"}, exit 0
    kUnreachable,      // exit 1, error on stderr, no JSON
    kHang,             // never answers
    kGarbage,          // exit 0, not JSON
  };
  std::string version = "0.0.111";
  // The gateway's own release in `status -o json`; "" means `version`.
  std::string gateway_version;
  Gateway gateway = Gateway::kConnected;
  bool hang_on_version = false;
};

// Writes `<dir>/openshell` (mode 0755) and returns its path. Throws
// std::runtime_error when it cannot be written.
std::string WriteFakeOpenShell(const std::string& dir, const FakeOpenShellOptions& options);

}  // namespace mojoup::probe::testing

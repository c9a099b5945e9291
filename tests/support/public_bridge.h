// A Docker bridge whose addresses OpenShell's proxy counts as public, for
// upstreams that sandboxes reach through it: 192.88.99.0/24 is in none of
// the ranges openshell-core net.rs is_internal_ip names (v0.0.111), and the
// proxy refuses internal addresses to a wildcard rule's hosts
// (proxy/destination.rs DefaultPublicOnly). Made once per process by the
// harness (root), kept for the next run; labelled as OpenShell's driver
// labels the bridges it makes.
//
//   REQUIRE(WhyNoPublicBridge() == "");
//   EchoServer upstream(tls, kPublicBridgeGateway);
#pragma once

#include "test_support.h"

namespace mojoup::test {

inline constexpr const char* kPublicBridge = "mojoup-public-bridge";
inline constexpr const char* kPublicBridgeGateway = "192.88.99.1";

// "" once the bridge is there, else docker's answer.
inline std::string WhyNoPublicBridge() {
  static const std::string why = []() -> std::string {
    if (RunWithEnv({}, {"docker", "network", "inspect", kPublicBridge}).result.exit_code == 0) {
      return "";
    }
    Run created = RunWithEnv({}, {"docker", "network", "create", "--driver", "bridge", "--subnet",
                                  "192.88.99.0/24", "--gateway", kPublicBridgeGateway, "--label",
                                  "openshell.ai/managed-by=openshell", kPublicBridge});
    if (created.result.exit_code == 0) return "";
    return "cannot create the Docker network " + std::string(kPublicBridge) + ": " +
           created.result.err;
  }();
  return why;
}

}  // namespace mojoup::test

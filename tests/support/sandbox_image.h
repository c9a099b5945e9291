// The Docker daemon and the sandbox image the session tests run on.
#pragma once

#include <rapidjson/document.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "mojoup/internal/docker_api_version.h"
#include "mojoup/probe/docker_api.h"
#include "mojoup/probe/kernel.h"
#include "test_support.h"

namespace mojoup::test {

// What tests/support/make_sandbox_image.sh assembles from this host's
// busybox, bash, curl and git (no registry is reachable).
inline constexpr const char* kSandboxImage = "mojoup-test-sandbox:8";

// Why this machine cannot run sessions on a real dockerd, or "" when it can
// (the image is assembled on first use).
inline std::string WhyNoSandboxDocker() {
  auto kernel = probe::MakeSystemKernel();
  auto endpoint = probe::ResolveDockerEndpoint(*kernel);
  if (!endpoint.ok()) return std::string(endpoint.status().message());
  auto reply = probe::MakeDockerApi()->Get(*endpoint, "/_ping", std::chrono::seconds(2));
  if (reply.failure != probe::DockerReply::Failure::kNone || reply.status != 200) {
    return "no dockerd answers at " + endpoint->host + " (" + reply.message + ")";
  }
  auto built =
      RunWithEnv({}, {MOJOUP_SOURCE_DIR "/tests/support/make_sandbox_image.sh", kSandboxImage},
                 std::chrono::seconds(120));
  if (built.result.exit_code != 0) return "cannot assemble the test image: " + built.result.err;
  return "";
}

// Debian 12's own nodejs and npm in a sandbox image, from mmdebstrap
// (tests/support/make_node_image.sh), for the node and npm rows.
inline constexpr const char* kNodeImage = "mojoup-test-node:2";

// Why there is no node image, or "" once it is there (about a minute to
// build from the Debian mirror on first use).
inline std::string WhyNoNodeImage() {
  auto built = RunWithEnv({}, {MOJOUP_SOURCE_DIR "/tests/support/make_node_image.sh", kNodeImage},
                          std::chrono::seconds(900));
  if (built.result.exit_code != 0) {
    return "cannot build the node image with mmdebstrap: " + built.result.err;
  }
  return "";
}

// The ids of every container (running or not) that Docker's list filter
// `key` (label, name) matches with `value`, or nullopt when the daemon did
// not answer with a list.
inline std::optional<std::vector<std::string>> ContainersFiltered(const std::string& key,
                                                                  const std::string& value) {
  auto kernel = probe::MakeSystemKernel();
  auto endpoint = probe::ResolveDockerEndpoint(*kernel);
  if (!endpoint.ok()) return std::nullopt;
  std::string filter;
  for (unsigned char c : "{\"" + key + "\":[\"" + value + "\"]}") {
    if (std::isalnum(c)) {
      filter += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      filter += hex;
    }
  }
  auto reply = probe::MakeDockerApi()->Get(
      *endpoint,
      std::string(mojoup::internal::kDockerApiPrefix) + "/containers/json?all=1&filters=" + filter,
      std::chrono::seconds(10));
  rapidjson::Document doc;
  doc.Parse(reply.body.c_str());
  if (reply.status != 200 || !doc.IsArray()) return std::nullopt;
  std::vector<std::string> ids;
  for (const auto& item : doc.GetArray()) ids.emplace_back(item["Id"].GetString());
  return ids;
}

// Containers labelled `label` ("key=value").
inline std::optional<std::vector<std::string>> ContainersLabelled(const std::string& label) {
  return ContainersFiltered("label", label);
}

// Containers whose name contains `name`.
inline std::optional<std::vector<std::string>> ContainersNamed(const std::string& name) {
  return ContainersFiltered("name", name);
}

// Removes a container a test made (or an attack would have), forcibly.
inline void RemoveContainer(const std::string& id) {
  RunWithEnv({}, {"docker", "rm", "-f", id}, std::chrono::seconds(30));
}

// The bridge OpenShell's gateway makes as it starts (v0.0.111
// crates/openshell-driver-docker/src/lib.rs ensure_bridge_network), which
// fake-openshell's sandboxes join and where the node finds the address its
// sandboxes reach the credential proxy at: made here when the daemon lacks
// it, so that no test depends on another having run first. "" or why not.
inline std::string WhyNoOpenShellNetwork() {
  auto kernel = probe::MakeSystemKernel();
  auto endpoint = probe::ResolveDockerEndpoint(*kernel);
  if (!endpoint.ok()) return std::string(endpoint.status().message());
  auto api = probe::MakeDockerApi();
  const std::string prefix(internal::kDockerApiPrefix);
  if (api->Get(*endpoint, prefix + "/networks/openshell-docker", std::chrono::seconds(5)).status ==
      200) {
    return "";
  }
  auto made = api->Send(*endpoint, "POST", prefix + "/networks/create",
                        R"({"Name": "openshell-docker", "Driver": "bridge", "Attachable": true,
                            "Labels": {"openshell.ai/managed-by": "openshell"}})",
                        std::chrono::seconds(10));
  // 409: a test beside this one made it first.
  if (made.status != 201 && made.status != 409) {
    return "cannot create the openshell-docker network: " + made.body;
  }
  return "";
}

}  // namespace mojoup::test

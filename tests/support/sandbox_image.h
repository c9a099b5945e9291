// The Docker daemon and the sandbox image the session tests run on.
#pragma once

#include <chrono>
#include <string>

#include "mojoup/probe/docker_api.h"
#include "mojoup/probe/kernel.h"
#include "test_support.h"

namespace mojoup::test {

// What tests/support/make_sandbox_image.sh assembles from this host's
// busybox and curl (no registry is reachable).
inline constexpr const char* kSandboxImage = "mojoup-test-sandbox:1";

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
  auto built = RunWithEnv(
      {}, {MOJOUP_SOURCE_DIR "/tests/support/make_sandbox_image.sh", kSandboxImage},
      std::chrono::seconds(120));
  if (built.result.exit_code != 0) return "cannot assemble the test image: " + built.result.err;
  return "";
}

}  // namespace mojoup::test

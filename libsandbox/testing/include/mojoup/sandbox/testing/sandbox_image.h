// BuildLocalSandboxImage: a small sandbox image made from this host's own
// files, for harnesses that run real sessions where no registry is reachable.
//
//   absl::Status built = mojoup::sandbox::testing::BuildLocalSandboxImage("my-test-sandbox:1");
//   if (!built.ok()) SKIP(built.message());
//   spec.image = "my-test-sandbox:1";
//
// The image holds busybox (static, for the shell and coreutils), the listed
// programs with every library `ldd` names for them at the same paths, the CA
// bundle, and an /etc/passwd naming the invoking user; it is loaded with
// `docker import`. Needs `docker` on PATH and a dockerd it reaches, and the
// host's /bin/busybox (Debian: busybox-static).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace mojoup::sandbox::testing {

// Builds `image` unless the daemon has it already. FailedPrecondition when
// this host lacks a piece (no docker, no daemon, no busybox, a program not on
// PATH), saying which; Internal when a step fails.
absl::Status BuildLocalSandboxImage(const std::string& image,
                                    const std::vector<std::string>& programs = {"curl", "git"});

}  // namespace mojoup::sandbox::testing

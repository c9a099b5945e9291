// The oldest versions the sandbox runtimes work with, defined once: the probe
// checks the host against them, and the layers above (the OpenShell backend,
// the sandbox supervisor) refuse below them. Header-only and free of
// dependencies, so that the static supervisor can include it.
#pragma once

#include "mojoup/probe/semver.h"

namespace mojoup::probe {

inline constexpr SemVer kMinDockerApi{1, 40, 0};  // Docker 19.03

// The openshell runtime reads `openshell status -o json` and
// `openshell sandbox get -o json`; both gained `-o` in v0.0.92 (at v0.0.91
// crates/openshell-cli/src/main.rs has a bare `Status` and a `sandbox get`
// without `output`). Same-path bind mounts (v0.0.61) come with it.
inline constexpr SemVer kMinOpenShell{0, 0, 92};

// The OpenShell releases this code was written against, oldest to newest:
// 0.0.x from kMinOpenShell (read in the source up to v0.0.111) and 0.1.0 to
// 0.1.10 (2026-09-25 to 2026-11-24, from their release notes and docs). A
// gateway newer than `newest`, or of a later series, may refuse things in
// words nothing here recognises: the doctor warns, and the runtime should say
// so when it cannot explain a refusal.
struct OpenShellReleases {
  SemVer oldest;
  SemVer newest;
};
inline constexpr OpenShellReleases kModelledOpenShell{kMinOpenShell, {0, 1, 10}};

// Before this release `sandbox create ... -- CMD` (and a create without a
// command) reaches the sandbox through the host's `ssh`, with `openshell
// ssh-proxy` as its ProxyCommand, and fails the create when ssh does
// (v0.0.92 and v0.0.110 crates/openshell-cli/src/run.rs sandbox_create,
// crates/openshell-cli/src/ssh.rs; NVIDIA/OpenShell#1849). From v0.0.111
// `--detach -- CMD` makes CMD the sandbox's main process instead.
inline constexpr SemVer kOpenShellCreateWithoutSsh{0, 0, 111};

inline constexpr int kMinLandlockAbi = 3;  // FS_TRUNCATE, Linux 6.2

}  // namespace mojoup::probe

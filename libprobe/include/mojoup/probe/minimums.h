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

inline constexpr int kMinLandlockAbi = 3;  // FS_TRUNCATE, Linux 6.2

}  // namespace mojoup::probe

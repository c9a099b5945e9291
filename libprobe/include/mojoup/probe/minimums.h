// The oldest versions the sandbox runtimes work with, defined once: the probe
// checks the host against them, and the layers above (the OpenShell backend,
// the sandbox supervisor) refuse below them. Header-only and free of
// dependencies, so that the static supervisor can include it.
#pragma once

#include "mojoup/probe/semver.h"

namespace mojoup::probe {

inline constexpr SemVer kMinDockerApi{1, 40, 0};  // Docker 19.03
inline constexpr SemVer kMinOpenShell{0, 0, 61};  // same-path bind mounts
inline constexpr int kMinLandlockAbi = 3;         // FS_TRUNCATE, Linux 6.2

}  // namespace mojoup::probe

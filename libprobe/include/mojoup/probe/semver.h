// SemVer: a release number as the probe compares them (OpenShell, Docker's
// Engine API).
//
//   if (auto version = mojoup::probe::ParseSemVer("openshell 0.0.111 (abc)");
//       version && *version < mojoup::probe::kMinOpenShell) ...
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace mojoup::probe {

struct SemVer {
  int major = 0;
  int minor = 0;
  int patch = 0;

  friend auto operator<=>(const SemVer&, const SemVer&) = default;
  std::string ToString() const;
};

// "0.0.111", "v0.0.111", "openshell 0.0.111 (abc)": the first x.y.z found.
std::optional<SemVer> ParseSemVer(std::string_view text);

}  // namespace mojoup::probe

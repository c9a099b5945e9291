// The Docker driver's mounts from --driver-config-json, checked as the
// gateway checks them.

#include <rapidjson/document.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {

bool PathIsOrUnder(std::string_view path, std::string_view parent) {
  if (parent == "/") return path.starts_with("/");
  return path == parent ||
         (path.starts_with(parent) && path.size() > parent.size() && path[parent.size()] == '/');
}

// A container path as the driver accepts it: absolute, normalized, not "/",
// clear of OpenShell's own directories. Empty when valid; else why not.
std::string TargetProblem(const std::string& target, std::string& normalized) {
  if (target.empty()) return "mount target must not be empty";
  if (Trim(target) != target) return "mount target must not contain surrounding whitespace";
  if (std::any_of(target.begin(), target.end(),
                  [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
    return "mount target must not contain control characters";
  }
  if (target.front() != '/') return "mount target must be an absolute container path";
  std::vector<std::string> segments;
  std::stringstream parts(target.substr(1));
  for (std::string part; std::getline(parts, part, '/');) segments.push_back(part);
  for (std::size_t i = 0; i < segments.size(); ++i) {
    bool trailing = i + 1 == segments.size();
    if ((segments[i].empty() && !trailing) || segments[i] == "." || segments[i] == "..") {
      return "mount target must be normalized without empty, '.', or '..' path segments";
    }
  }
  normalized = target;
  while (normalized.size() > 1 && normalized.back() == '/') normalized.pop_back();
  if (normalized == "/") return "mount target must not be the container root";
  for (std::string_view reserved : kReservedRoots) {
    if (PathIsOrUnder(normalized, reserved) || PathIsOrUnder(reserved, normalized)) {
      return fmt::format("mount target '{}' conflicts with reserved OpenShell path '{}'", target,
                         reserved);
    }
  }
  return {};
}

// The Docker driver's block of --driver-config-json, checked as the gateway
// checks it. Returns the gateway's error line, or empty with `mounts` filled.
std::string ReadDockerMounts(const rapidjson::Value& config, bool enable_bind_mounts,
                             std::string_view admission_refusal, std::vector<Mount>& mounts) {
  if (!config.HasMember("docker")) return {};
  const rapidjson::Value& docker = config["docker"];
  if (!docker.IsObject()) {
    return GrpcError("InvalidArgument", "template.driver_config.docker must be an object");
  }
  for (const auto& member : docker.GetObject()) {
    if (std::string_view(member.name.GetString()) != "mounts") {
      return GrpcError(
          "InvalidArgument",
          fmt::format("invalid docker driver_config: unknown field `{}`", member.name.GetString()));
    }
  }
  if (!docker.HasMember("mounts")) return {};
  if (!docker["mounts"].IsArray()) {
    return GrpcError("InvalidArgument", "invalid docker driver_config: mounts must be an array");
  }
  for (const auto& entry : docker["mounts"].GetArray()) {
    if (!entry.IsObject() || !entry.HasMember("type") || !entry["type"].IsString()) {
      return GrpcError("InvalidArgument",
                       "invalid docker driver_config: each mount needs a string `type`");
    }
    const std::string type = entry["type"].GetString();
    if (type == "image") {
      return GrpcError("FailedPrecondition",
                       "invalid docker driver_config: docker image mounts are not supported");
    }
    if (type != "bind") {
      return fmt::format("fake-openshell: {} mounts are not implemented by this test double", type);
    }
    if (!enable_bind_mounts) {
      return GrpcError("FailedPrecondition",
                       "docker bind mounts require enable_bind_mounts = true in "
                       "[openshell.drivers.docker]");
    }
    // 0.1.x resource admission comes after enable_bind_mounts (order seen
    // from a v0.1.2 gateway in a third-party capture, see FAKE_OPENSHELL.md).
    if (!admission_refusal.empty()) return GrpcError("FailedPrecondition", admission_refusal);
    Mount mount;
    for (const auto& field : entry.GetObject()) {
      const std::string_view key = field.name.GetString();
      if (key == "type") continue;
      if ((key == "source" || key == "target") && field.value.IsString()) {
        (key == "source" ? mount.source : mount.target) = field.value.GetString();
      } else if (key == "read_only" && field.value.IsBool()) {
        mount.read_only = field.value.GetBool();
      } else if (key != "selinux_label") {
        return GrpcError("InvalidArgument",
                         fmt::format("invalid docker driver_config: unknown or mistyped field "
                                     "`{}` in a bind mount",
                                     key));
      }
    }
    if (mount.source.empty() || mount.source.front() != '/') {
      return GrpcError("FailedPrecondition", "bind source must be an absolute host path");
    }
    std::string normalized;
    if (std::string problem = TargetProblem(mount.target, normalized); !problem.empty()) {
      return GrpcError("FailedPrecondition", problem);
    }
    for (const Mount& earlier : mounts) {
      if (earlier.target == normalized) {
        return GrpcError(
            "FailedPrecondition",
            fmt::format("duplicate docker driver_config mount target '{}'", normalized));
      }
    }
    mount.target = normalized;
    mounts.push_back(std::move(mount));
  }
  return {};
}

}  // namespace mojoup::fake_openshell

// The Kubernetes compute driver's sandboxes as containers (v0.0.111
// crates/openshell-driver-kubernetes/src/driver.rs): the PVC claims and the
// workspace volume, what happens before the pod's container starts, a pod
// that cannot be scheduled, `sandbox stop|start`, and the fake's own
// gateway-restart hook. A pod is the sandbox's container; recreating the
// pod recreates the container from the same description, volumes kept.

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"
#include "mojoup/internal/docker_filters.h"
#include "runtime/native/stream_pump.h"

namespace mojoup::fake_openshell {

namespace {

// Where the workspace-init container mounts the workspace PVC, and the
// sentinel it leaves there (driver.rs WORKSPACE_INIT_MOUNT_PATH,
// WORKSPACE_SENTINEL).
constexpr const char* kInitMountPath = "/workspace-pvc";
// The pod's fsGroup: the sandbox gid, 1000 unless OpenShift annotations say
// otherwise (driver.rs apply_workspace_persistence; config.rs
// DEFAULT_SANDBOX_UID, resolve_sandbox_gid).
constexpr const char* kFsGroup = "1000";

// The workspace-init container's command, as driver.rs
// apply_workspace_persistence formats it.
std::string WorkspaceInitCommand() {
  return fmt::format(
      "if [ ! -f {0}/.workspace-initialized ]; then if [ -d {1} ]; then tmp=$(mktemp) && rm -f "
      "\"$tmp\" && (cd {1} && find . -mindepth 1 -maxdepth 1 -exec tar -cf \"$tmp\" {{}} +) && "
      "if [ -f \"$tmp\" ]; then tar -C {0} --no-same-owner --no-same-permissions --touch -xf "
      "\"$tmp\" && rm -f \"$tmp\"; fi; fi && touch {0}/.workspace-initialized; fi",
      kInitMountPath, kDefaultWorkspace);
}

// kubelet's volume ownership for an fsGroup, applied to each writable
// volume at every mount (Kubernetes pkg/volume/volume_linux.go
// SetVolumeOwnership, fsGroupChangePolicy Always): group fsGroup, group
// read-write (and search on directories), setgid directories.
std::string FsGroupCommand(const std::string& path) {
  return fmt::format(
      "chgrp -hR {0} {1} && chmod -R g+rwX {1} && find {1} -type d -exec chmod g+s {{}} +",
      kFsGroup, path);
}

}  // namespace

std::string MountsJson(const std::vector<Mount>& mounts) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartArray();
  for (const Mount& mount : mounts) {
    w.StartObject();
    w.Key("Type");
    w.String(mount.volume ? "volume" : "bind");
    w.Key("Source");
    w.String(mount.source);
    w.Key("Target");
    w.String(mount.target);
    w.Key("ReadOnly");
    w.Bool(mount.read_only);
    if (mount.volume) {
      // A PVC is never filled from the image (the workspace is seeded by
      // workspace-init, not by Docker's copy into an empty volume).
      w.Key("VolumeOptions");
      w.StartObject();
      w.Key("NoCopy");
      w.Bool(true);
      w.EndObject();
    }
    w.EndObject();
  }
  w.EndArray();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::optional<Mount> VolumeMountOf(const rapidjson::Value& m) {
  if (!m.IsObject() || !m.HasMember("Type") || !m["Type"].IsString() ||
      std::string_view(m["Type"].GetString()) != "volume" || !m.HasMember("Source") ||
      !m["Source"].IsString() || !m.HasMember("Target") || !m["Target"].IsString()) {
    return std::nullopt;
  }
  const bool read_only =
      m.HasMember("ReadOnly") && m["ReadOnly"].IsBool() && m["ReadOnly"].GetBool();
  return Mount{m["Source"].GetString(), m["Target"].GetString(), read_only, true};
}

std::vector<Mount> VolumeMounts(const rapidjson::Value& mounts) {
  std::vector<Mount> found;
  if (!mounts.IsArray()) return found;
  for (const auto& m : mounts.GetArray()) {
    if (auto mount = VolumeMountOf(m)) found.push_back(*mount);
  }
  return found;
}

bool VolumesExist(Docker& docker, const std::vector<Mount>& mounts) {
  for (const Mount& mount : mounts) {
    if (!Answered(docker.Call("GET", "/volumes/" + PercentEncode(mount.source)), {200})) {
      return false;
    }
  }
  return true;
}

namespace {

// Runs `script` as root in a throwaway container of `image` with `mounts`,
// no network; "" when it exited 0, else what it said.
std::string RunHelper(Docker& docker, const std::string& image, const std::string& script,
                      const std::vector<Mount>& mounts) {
  rapidjson::StringBuffer body;
  {
    rapidjson::Writer<rapidjson::StringBuffer> w(body);
    w.StartObject();
    w.Key("Image");
    w.String(image);
    w.Key("User");
    w.String("0");
    w.Key("Entrypoint");
    w.StartArray();
    for (const char* word : {"sh", "-c", script.c_str()}) w.String(word);
    w.EndArray();
    w.Key("Cmd");
    w.StartArray();
    w.EndArray();
    w.Key("HostConfig");
    w.StartObject();
    w.Key("NetworkMode");
    w.String("none");
    w.Key("Mounts");
    const std::string mounts_json = MountsJson(mounts);
    w.RawValue(mounts_json.c_str(), mounts_json.size(), rapidjson::kArrayType);
    w.EndObject();
    w.EndObject();
  }
  DockerReply created = docker.Call("POST", "/containers/create", body.GetString());
  rapidjson::Document info;
  info.Parse(created.body.c_str());
  if (!Answered(created, {201}) || info.HasParseError() || !info.IsObject() ||
      !info.HasMember("Id") || !info["Id"].IsString()) {
    return "create the pod's init container: " + DockerReplyProblem(created);
  }
  const std::string id = info["Id"].GetString();
  std::string problem;
  DockerReply started = docker.Call("POST", "/containers/" + id + "/start");
  if (!Answered(started, {204, 304})) problem = "start: " + DockerReplyProblem(started);
  if (problem.empty()) {
    DockerReply waited =
        docker.Call("POST", "/containers/" + id + "/wait", {}, std::chrono::minutes(5));
    rapidjson::Document result;
    result.Parse(waited.body.c_str());
    const bool exited = Answered(waited, {200}) && !result.HasParseError() && result.IsObject() &&
                        result.HasMember("StatusCode") && result["StatusCode"].IsInt();
    if (!exited) {
      problem = "wait: " + DockerReplyProblem(waited);
    } else if (int status = result["StatusCode"].GetInt(); status != 0) {
      DockerReply logs = docker.Call("GET", "/containers/" + id + "/logs?stdout=1&stderr=1");
      std::string said;
      mojoup::sandbox::FrameSplitter frames;
      frames.Feed(
          logs.body.data(), logs.body.size(),
          [&](unsigned char, const char* data, std::size_t size) { said.append(data, size); });
      problem = fmt::format("exited with status {}: {}", status, Trim(said));
    }
  }
  docker.Call("DELETE", "/containers/" + id + "?force=1");
  return problem;
}

}  // namespace

bool IsKubernetes(const Context& ctx) { return ctx.options.driver == "kubernetes"; }

std::string WorkspaceVolumeName(const std::string& container_name) {
  return container_name + "-workspace";
}

std::optional<int> KubernetesMounts(Docker& docker, const KubernetesConfig& config,
                                    const StringMap& volume_labels,
                                    const std::string& container_name, std::vector<Mount>& mounts,
                                    std::vector<Mount>& claims, bool& pending) {
  for (const KubernetesMount& mount : config.mounts) {
    // Docker's API 1.40 has no volume subpath.
    if (mount.sub_path) return NotModelled("a kubernetes volume mount's `sub_path`");
    auto volume = std::find_if(config.volumes.begin(), config.volumes.end(),
                               [&](const KubernetesVolume& v) { return v.name == mount.name; });
    DockerReply reply = docker.Call("GET", "/volumes/" + PercentEncode(volume->claim));
    if (Answered(reply, {404})) {
      pending = true;
    } else if (!Answered(reply, {200})) {
      return DockerFailed("inspect Docker volume", reply);
    }
    std::string target = mount.mount_path;
    while (target.size() > 1 && target.back() == '/') target.pop_back();
    claims.push_back({volume->claim, target, mount.read_only, true});
  }
  if (config.explicit_workspace_mount) return std::nullopt;
  // The workspace PVC (volumeClaimTemplates "workspace"), labelled with
  // the sandbox so that delete finds it.
  rapidjson::StringBuffer body;
  {
    rapidjson::Writer<rapidjson::StringBuffer> w(body);
    w.StartObject();
    w.Key("Name");
    w.String(WorkspaceVolumeName(container_name));
    w.Key("Labels");
    w.StartObject();
    for (const auto& [key, value] : volume_labels) {
      w.Key(key.c_str());
      w.String(value);
    }
    w.EndObject();
    w.EndObject();
  }
  DockerReply created = docker.Call("POST", "/volumes/create", body.GetString());
  if (!Answered(created, {201})) return DockerFailed("create Docker volume", created);
  mounts.push_back(
      {WorkspaceVolumeName(container_name), std::string(kDefaultWorkspace), false, true});
  return std::nullopt;
}

std::string PreparePodVolumes(Docker& docker, const std::string& image,
                              const std::vector<Mount>& mounts) {
  std::vector<Mount> helper_mounts;
  std::string script;
  bool workspace = false;
  for (const Mount& mount : mounts) {
    if (!mount.volume || mount.read_only) continue;
    std::string path = fmt::format("/fake-openshell-fsgroup/{}", helper_mounts.size());
    if (mount.target == kDefaultWorkspace) {
      path = kInitMountPath;
      workspace = true;
    }
    helper_mounts.push_back({mount.source, path, false, true});
    script += FsGroupCommand(path) + " && ";
  }
  if (helper_mounts.empty()) return {};
  script += workspace ? WorkspaceInitCommand() : "true";
  return RunHelper(docker, image, script, helper_mounts);
}

int WaitOut(const char* variable, const std::function<std::string(unsigned)>& message) {
  unsigned seconds = 300;
  if (const char* env = std::getenv(variable)) {
    char* end = nullptr;
    unsigned long parsed = std::strtoul(env, &end, 10);
    if (end != env && *end == '\0' && parsed <= 86400) seconds = static_cast<unsigned>(parsed);
  }
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  return PrintError(message(seconds));
}

// The CLI's provisioning wait (v0.0.111 crates/openshell-cli/src/run.rs
// sandbox_create, OPENSHELL_PROVISION_TIMEOUT; commands/common.rs
// provisioning_timeout_message). The Ready condition's message the real
// watch would add ("Last reported status: ...") is not modelled.
int WaitUnschedulable() {
  return WaitOut("OPENSHELL_PROVISION_TIMEOUT", [](unsigned seconds) {
    return fmt::format("sandbox provisioning timed out after {}s", seconds);
  });
}

bool RemoveSandboxVolumes(Docker& docker, const Context& ctx, const Sandbox& sandbox,
                          std::string& error) {
  DockerReply reply = docker.Call(
      "GET", "/volumes?filters=" +
                 internal::DockerLabelFilters({fmt::format("{}={}", kNamespace, ctx.namespace_name),
                                               fmt::format("{}={}", kSandboxId, sandbox.id)}));
  rapidjson::Document list;
  list.Parse(reply.body.c_str());
  if (!Answered(reply, {200}) || list.HasParseError() || !list.IsObject()) {
    error = "list volumes: " + DockerReplyProblem(reply);
    return false;
  }
  if (!list.HasMember("Volumes") || !list["Volumes"].IsArray()) return true;
  for (const auto& volume : list["Volumes"].GetArray()) {
    if (!volume.IsObject() || !volume.HasMember("Name") || !volume["Name"].IsString()) continue;
    DockerReply removed =
        docker.Call("DELETE", "/volumes/" + PercentEncode(volume["Name"].GetString()));
    if (!Answered(removed, {204, 404})) {
      error = "remove volume: " + DockerReplyProblem(removed);
      return false;
    }
  }
  return true;
}

}  // namespace mojoup::fake_openshell

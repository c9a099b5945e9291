// `sandbox stop | start` on the Kubernetes driver, and the fake's own
// gateway-restart hook: each recreates the sandbox's pod (its container)
// and keeps its volumes.

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {

namespace {

enum class PodOutcome { kRunning, kPending, kStopped };

// Deletes the sandbox's pod and makes it again from the same description:
// left unstarted and pinned Stopped (`stop`), or started after kubelet's
// and workspace-init's work unless a claim is missing (then it stays
// provisioning, kPending). Nothing on success, else the exit code.
std::optional<int> RecreatePod(Docker& docker, const std::string& container, bool run,
                               PodOutcome& outcome) {
  DockerReply reply = docker.Call("GET", "/containers/" + container + "/json");
  rapidjson::Document info;
  info.Parse(reply.body.c_str());
  if (!Answered(reply, {200}) || info.HasParseError() || !info.IsObject() ||
      !info.HasMember("Config") || !info["Config"].IsObject() || !info.HasMember("HostConfig") ||
      !info["HostConfig"].IsObject() || !info.HasMember("Name") || !info["Name"].IsString()) {
    return DockerFailed("inspect Docker container", reply);
  }
  auto& alloc = info.GetAllocator();
  rapidjson::Value body(rapidjson::kObjectType);
  body.CopyFrom(info["Config"], alloc);
  rapidjson::Value& labels = body["Labels"];
  if (labels.HasMember(kPinnedPhase)) labels.RemoveMember(kPinnedPhase);
  if (!run) labels.AddMember(rapidjson::StringRef(kPinnedPhase), "Stopped", alloc);
  // The claims are attached only when each one's volume exists.
  std::vector<Mount> claims;
  if (labels.HasMember(kClaims) && labels[kClaims].IsString()) {
    rapidjson::Document listed;
    listed.Parse(labels[kClaims].GetString());
    claims = VolumeMounts(listed);
  }
  const bool schedulable = run && VolumesExist(docker, claims);
  rapidjson::Value host(info["HostConfig"], alloc);
  rapidjson::Value kept(rapidjson::kArrayType);
  std::vector<Mount> mounts;
  if (host.HasMember("Mounts") && host["Mounts"].IsArray()) {
    for (auto& m : host["Mounts"].GetArray()) {
      const std::optional<Mount> volume = VolumeMountOf(m);
      if (volume && std::any_of(claims.begin(), claims.end(),
                                [&](const Mount& c) { return c.source == volume->source; })) {
        continue;
      }
      if (volume) mounts.push_back(*volume);
      kept.PushBack(rapidjson::Value(m, alloc), alloc);
    }
  }
  if (schedulable) {
    rapidjson::Document attached;
    attached.Parse(MountsJson(claims).c_str());
    for (auto& m : attached.GetArray()) kept.PushBack(rapidjson::Value(m, alloc), alloc);
    mounts.insert(mounts.end(), claims.begin(), claims.end());
  }
  if (host.HasMember("Mounts")) host.RemoveMember("Mounts");
  host.AddMember("Mounts", kept, alloc);
  body.AddMember("HostConfig", host, alloc);
  const std::string name = std::string(info["Name"].GetString()).substr(1);
  const std::string image = body["Image"].GetString();
  rapidjson::StringBuffer text;
  rapidjson::Writer<rapidjson::StringBuffer> w(text);
  body.Accept(w);

  reply = docker.Call("DELETE", "/containers/" + container + "?force=1");
  if (!Answered(reply, {204, 404})) return DockerFailed("remove Docker container", reply);
  reply = docker.Call("POST", "/containers/create?name=" + PercentEncode(name), text.GetString());
  rapidjson::Document created;
  created.Parse(reply.body.c_str());
  if (!Answered(reply, {201}) || created.HasParseError() || !created.IsObject() ||
      !created.HasMember("Id") || !created["Id"].IsString()) {
    return DockerFailed("create Docker container", reply);
  }
  outcome = PodOutcome::kStopped;
  if (!run) return std::nullopt;
  if (!schedulable) {
    outcome = PodOutcome::kPending;
    return std::nullopt;
  }
  if (std::string problem = PreparePodVolumes(docker, image, mounts); !problem.empty()) {
    return PrintError(GrpcError("Internal", "workspace-init: " + problem));
  }
  reply = docker.Call("POST", "/containers/" + std::string(created["Id"].GetString()) + "/start");
  if (!Answered(reply, {204, 304})) return DockerFailed("start Docker container", reply);
  outcome = PodOutcome::kRunning;
  return std::nullopt;
}

// `sandbox stop|start [NAME]` (v0.0.111 main.rs SandboxCommands::Stop,
// Start): the sandbox, once the gateway and the driver take the command.
std::optional<int> LifecycleSandbox(const Context& ctx, const std::vector<std::string>& argv,
                                    std::string_view verb, std::optional<Docker>& docker,
                                    Sandbox& sandbox) {
  const std::string usage = fmt::format("openshell sandbox {} [NAME]", verb);
  const Grammar grammar{.usage = usage, .flags = {}, .max_positionals = 1};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  if (!IsKubernetes(ctx)) {
    return NotModelled(fmt::format("`sandbox {}` on the Docker driver", verb));
  }
  return FindNamedSandbox(ctx, args, docker, sandbox);
}

// wait_for_lifecycle_phase's deadline (v0.0.111 run.rs,
// OPENSHELL_LIFECYCLE_TIMEOUT, default 300 s) for a pod that never runs.
int WaitLifecycle(std::string_view target) {
  return WaitOut("OPENSHELL_LIFECYCLE_TIMEOUT", [&](unsigned seconds) {
    return fmt::format("timed out after {}s waiting for sandbox to reach {}", seconds, target);
  });
}

}  // namespace

// The driver's stop_sandbox (v0.0.111 driver.rs stop_sandbox,
// patch_sandbox_operating_state): the pod goes, the workspace PVC stays;
// the CLI prints `✓ Stopped sandbox NAME` once the phase is Stopped
// (run.rs sandbox_stop).
int SandboxStop(const Context& ctx, const std::vector<std::string>& argv) {
  std::optional<Docker> docker;
  Sandbox sandbox;
  if (auto code = LifecycleSandbox(ctx, argv, "stop", docker, sandbox)) return *code;
  PodOutcome outcome = PodOutcome::kStopped;
  if (auto code = RecreatePod(*docker, sandbox.container, false, outcome)) return *code;
  Print(fmt::format("✓ Stopped sandbox {}\n", sandbox.name));
  return 0;
}

// start_sandbox: the pod again, init containers first; `✓ Started sandbox
// NAME` once Ready (run.rs sandbox_start).
int SandboxStart(const Context& ctx, const std::vector<std::string>& argv) {
  std::optional<Docker> docker;
  Sandbox sandbox;
  if (auto code = LifecycleSandbox(ctx, argv, "start", docker, sandbox)) return *code;
  PodOutcome outcome = PodOutcome::kStopped;
  if (auto code = RecreatePod(*docker, sandbox.container, true, outcome)) return *code;
  if (outcome == PodOutcome::kPending) return WaitLifecycle("Ready");
  Print(fmt::format("✓ Started sandbox {}\n", sandbox.name));
  return 0;
}

// Not OpenShell's: `openshell fake-openshell-restart-gateway` plays a
// restart of a Kubernetes gateway's cluster, where every sandbox's pod is
// recreated (init containers run again) and every PVC kept. Stopped
// sandboxes stay stopped.
int RestartGateway(const Context& ctx, const std::vector<std::string>& argv) {
  if (argv.size() != 2) {
    std::fputs("usage: openshell fake-openshell-restart-gateway\n", stderr);
    return 2;
  }
  if (!IsKubernetes(ctx)) {
    std::fputs("fake-openshell: the gateway restart hook needs driver kubernetes\n", stderr);
    return 2;
  }
  std::string error;
  auto docker = ConnectDocker(error);
  if (!docker) return NoDocker(error);
  auto sandboxes = ListSandboxes(*docker, ctx, {}, error);
  if (!sandboxes) return PrintError(GrpcError("Internal", error));
  for (const Sandbox& sandbox : *sandboxes) {
    if (sandbox.phase == "Stopped") continue;
    PodOutcome outcome = PodOutcome::kStopped;
    if (auto code = RecreatePod(*docker, sandbox.container, true, outcome)) return *code;
  }
  return 0;
}

}  // namespace mojoup::fake_openshell

// Sandboxes as containers: finding them by label and printing them.

#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "fake_openshell.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {

// The phase the gateway reports for a container state. A main process that
// exited: Error up to 0.0.111 (reason MainProcessExited, v0.0.111
// crates/openshell-server/src/compute/mod.rs); from 0.1.0 Completed when it
// exited 0 and Error otherwise (refs/pull/2884/head, "complete successful
// main processes", in the v0.1.0 release note, 2026-09-25).
// A pinned phase (the label kPinnedPhase) wins: "Error" (the phase_error
// hook) or "Stopped" (a stopped Kubernetes sandbox, whose pod is gone).
std::string PhaseOf(std::string_view state, std::string_view pinned, std::optional<int> main_exit,
                    const Version& version) {
  if (pinned == "Error" || pinned == "Stopped") return std::string(pinned);
  if (state == "running") return "Ready";
  if (state == "created") return "Provisioning";
  if (state == "restarting") return "Starting";
  if (state == "paused") return "Stopped";
  if (state == "removing") return "Deleting";
  if (state == "exited" || state == "dead") {
    if (main_exit && *main_exit == 0 && IsZeroOne(version)) return "Completed";
    return "Error";
  }
  return "Unknown";
}

// Docker's list gives "Exited (N) 3 seconds ago" for a stopped container.
std::optional<int> ExitCodeOf(std::string_view status) {
  if (!status.starts_with("Exited (")) return std::nullopt;
  status.remove_prefix(8);
  int code = 0;
  bool digits = false;
  for (char c : status) {
    if (c < '0' || c > '9') break;
    code = code * 10 + (c - '0');
    digits = true;
  }
  if (!digits) return std::nullopt;
  return code;
}

std::string FormatCreated(std::int64_t seconds) {
  if (seconds <= 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixSeconds(seconds), absl::UTCTimeZone());
}

// This install's sandboxes whose Docker labels include every `match` pair,
// oldest first. Nothing when Docker does not answer (`error` says why).
std::optional<std::vector<Sandbox>> ListSandboxes(Docker& docker, const Context& ctx,
                                                  const std::vector<std::string>& match,
                                                  std::string& error) {
  rapidjson::StringBuffer filters;
  {
    rapidjson::Writer<rapidjson::StringBuffer> w(filters);
    w.StartObject();
    w.Key("label");
    w.StartArray();
    w.String(fmt::format("{}=openshell", kManagedBy));
    w.String(fmt::format("{}={}", kNamespace, ctx.namespace_name));
    for (const std::string& pair : match) w.String(pair);
    w.EndArray();
    w.EndObject();
  }
  DockerReply reply =
      docker.Call("GET", "/containers/json?all=1&filters=" + PercentEncode(filters.GetString()));
  if (!Answered(reply, {200})) {
    error = "list containers: " + DockerReplyProblem(reply);
    return std::nullopt;
  }
  rapidjson::Document body;
  body.Parse(reply.body.c_str());
  if (body.HasParseError() || !body.IsArray()) {
    error = "Docker's container list is not a JSON array";
    return std::nullopt;
  }
  std::vector<Sandbox> found;
  for (const auto& item : body.GetArray()) {
    if (!item.IsObject() || !item.HasMember("Id") || !item["Id"].IsString()) continue;
    StringMap docker_labels;
    if (item.HasMember("Labels") && item["Labels"].IsObject()) {
      for (const auto& label : item["Labels"].GetObject()) {
        if (label.value.IsString()) docker_labels[label.name.GetString()] = label.value.GetString();
      }
    }
    Sandbox sandbox;
    sandbox.container = item["Id"].GetString();
    sandbox.id = docker_labels[kSandboxId];
    sandbox.name = docker_labels[kSandboxName];
    sandbox.landlock = docker_labels[kLandlockRules];
    sandbox.child_environment = docker_labels[kChildEnvironment];
    sandbox.run_as = docker_labels[kRunAs];
    if (item.HasMember("Created") && item["Created"].IsInt64()) {
      sandbox.created = item["Created"].GetInt64();
    }
    const std::string state =
        item.HasMember("State") && item["State"].IsString() ? item["State"].GetString() : "";
    std::optional<int> main_exit;
    if (docker_labels[kMainProcess] == "1" && item.HasMember("Status") &&
        item["Status"].IsString()) {
      main_exit = ExitCodeOf(item["Status"].GetString());
    }
    sandbox.phase = PhaseOf(state, docker_labels[kPinnedPhase], main_exit, ctx.version);
    if (IsZeroOne(ctx.version)) sandbox.exit_code = main_exit;
    std::stringstream attached(docker_labels[kProviders]);
    for (std::string provider; std::getline(attached, provider, ',');) {
      if (!provider.empty()) sandbox.providers.push_back(provider);
    }
    rapidjson::Document user;
    user.Parse(docker_labels[kUserLabels].c_str());
    if (!user.HasParseError() && user.IsObject()) {
      for (const auto& label : user.GetObject()) {
        if (label.value.IsString())
          sandbox.labels[label.name.GetString()] = label.value.GetString();
      }
    }
    found.push_back(std::move(sandbox));
  }
  std::sort(found.begin(), found.end(), [](const Sandbox& a, const Sandbox& b) {
    return std::tie(a.created, a.name) < std::tie(b.created, b.name);
  });
  return found;
}

// The sandbox called `name`; nothing if there is none (`error` stays empty)
// or Docker failed (`error` says why).
std::optional<Sandbox> FindSandbox(Docker& docker, const Context& ctx, const std::string& name,
                                   std::string& error) {
  auto found = ListSandboxes(docker, ctx, {fmt::format("{}={}", kSandboxName, name)}, error);
  if (!found || found->empty()) return std::nullopt;
  return found->front();
}

// sandbox_to_json as the release has it (serde_json sorts the keys); `get`
// adds the policy fields.
void WriteSandbox(JsonWriter& w, const Sandbox& sandbox, const Version& version, bool detail) {
  w.StartObject();
  if (version >= Release(84)) {
    w.Key("annotations");
    w.StartObject();
    w.EndObject();
  }
  w.Key("created_at");
  w.String(FormatCreated(sandbox.created));
  w.Key("current_policy_version");
  w.Int(0);
  // From 0.1.0: null until the main process exits (refs/pull/2884/head
  // crates/openshell-cli/src/run.rs sandbox_to_json).
  if (IsZeroOne(version)) {
    w.Key("exit_code");
    if (sandbox.exit_code) {
      w.Int(*sandbox.exit_code);
    } else {
      w.Null();
    }
  }
  w.Key("id");
  w.String(sandbox.id);
  w.Key("labels");
  w.StartObject();
  for (const auto& [key, value] : sandbox.labels) {
    w.Key(key.c_str());
    w.String(value);
  }
  w.EndObject();
  w.Key("name");
  w.String(sandbox.name);
  w.Key("phase");
  w.String(sandbox.phase);
  if (detail) {
    w.Key("policy");
    w.Null();
    w.Key("policy_source");
    w.String("sandbox");
  }
  w.Key("resource_version");
  w.Int(0);
  if (detail) {
    w.Key("revision");
    w.Null();
  }
  if (version >= Release(88)) {
    w.Key("workspace");
    w.String("default");
  }
  w.EndObject();
}

std::string SandboxJson(const Sandbox& sandbox, const Version& version, bool detail) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.SetIndent(' ', 2);
  WriteSandbox(w, sandbox, version, detail);
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

std::optional<int> FindNamedSandbox(const Context& ctx, const Args& args,
                                    std::optional<Docker>& docker, Sandbox& sandbox) {
  if (auto code = GatewayRefuses(ctx)) return *code;
  if (args.positionals.empty()) {
    return PrintError("no sandbox name given and no last-used sandbox recorded");
  }
  std::string error;
  docker = ConnectDocker(error);
  if (!docker) return NoDocker(error);
  auto found = FindSandbox(*docker, ctx, args.positionals[0], error);
  if (!error.empty()) return PrintError(GrpcError("Internal", error));
  if (!found) return NotFound();
  sandbox = *std::move(found);
  return std::nullopt;
}

}  // namespace mojoup::fake_openshell

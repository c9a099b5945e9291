#include "mojoup/sandbox/native_backend.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>

#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "image/missing_image.h"
#include "mojoup/internal/bounded_json.h"
#include "mojoup/internal/docker_api_version.h"
#include "mojoup/internal/percent_encode.h"
#include "runtime/native/stream_pump.h"
#include "supervisor/command_line.h"

namespace mojoup::sandbox {
namespace {

using probe::DockerReply;
using probe::DockerReplyProblem;

using mojoup::internal::kDockerApiPrefix;
using mojoup::internal::ParseBoundedJson;
using mojoup::internal::PercentEncode;

absl::Status Failed(std::string_view what, const DockerReply& reply) {
  std::string message = fmt::format("Docker could not {}: {}", what, DockerReplyProblem(reply));
  if (reply.failure != DockerReply::Failure::kNone) return absl::UnavailableError(message);
  if (reply.status == 404) return absl::NotFoundError(message);
  if (reply.status == 409) return absl::FailedPreconditionError(message);
  return absl::InternalError(message);
}

// The Engine API's container create body, written a part at a time.
using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

void WriteStrings(JsonWriter& w, const std::vector<std::string>& items) {
  w.StartArray();
  for (const std::string& item : items) w.String(item);
  w.EndArray();
}

// The supervisor is the entrypoint; it becomes the command once confined.
void WriteProcess(JsonWriter& w, const SandboxSpec& spec) {
  w.Key("Entrypoint");
  WriteStrings(w, {std::string(supervisor::kSupervisorPath)});
  w.Key("Cmd");
  WriteStrings(
      w, supervisor::CommandLine({.proxy_socket = spec.proxy_socket.empty()
                                                      ? std::string()
                                                      : std::string(supervisor::kProxySocketPath),
                                  .write_dirs = spec.writable,
                                  .command = spec.command}));
  w.Key("User");
  w.String(fmt::format("{}:{}", spec.uid, spec.gid));
  w.Key("WorkingDir");
  w.String(spec.workdir);
  std::vector<std::string> env;
  for (const auto& [name, value] : spec.environment) env.push_back(name + "=" + value);
  w.Key("Env");
  WriteStrings(w, env);
}

void WriteLabels(JsonWriter& w, const SandboxSpec& spec) {
  w.Key("Labels");
  w.StartObject();
  for (const auto& [name, value] : spec.labels) {
    w.Key(name.c_str());
    w.String(value);
  }
  w.Key(kSessionLabel.data(), static_cast<rapidjson::SizeType>(kSessionLabel.size()));
  w.String(spec.session);
  w.EndObject();
}

// Attached before the start, every stream of the command: Run pumps them.
void WriteStreams(JsonWriter& w, const SandboxSpec& spec) {
  w.Key("Tty");
  w.Bool(spec.tty);
  for (const char* key :
       {"OpenStdin", "StdinOnce", "AttachStdin", "AttachStdout", "AttachStderr"}) {
    w.Key(key);
    w.Bool(true);
  }
}

// No network, no capabilities, no new privileges, and the spec's limits.
void WriteConfinement(JsonWriter& w, const SandboxSpec& spec) {
  w.Key("NetworkMode");
  w.String("none");
  w.Key("Init");
  w.Bool(true);
  w.Key("CapDrop");
  WriteStrings(w, {"ALL"});
  w.Key("SecurityOpt");
  WriteStrings(w, {"no-new-privileges"});
  w.Key("PidsLimit");
  w.Int64(spec.pids);
  w.Key("Memory");
  w.Int64(spec.memory_bytes);
  if (spec.cpus > 0) {
    w.Key("NanoCpus");
    w.Int64(static_cast<std::int64_t>(spec.cpus * 1e9));
  }
}

// `run` streams the command's output itself; a container log would only
// grow on the node's disk for as long as the command writes.
void WriteNoLog(JsonWriter& w) {
  w.Key("LogConfig");
  w.StartObject();
  w.Key("Type");
  w.String("none");
  w.Key("Config");
  w.StartObject();
  w.EndObject();
  w.EndObject();
}

void WriteTmp(JsonWriter& w, const SandboxSpec& spec) {
  w.Key("Tmpfs");
  w.StartObject();
  w.Key("/tmp");
  // Docker gives the tmpfs the image's /tmp mode (often 0755 root), so the
  // user must own it to write there.
  w.String(fmt::format("rw,nosuid,nodev,mode=1777,uid={},gid={}", spec.uid, spec.gid));
  w.EndObject();
}

// The spec's mounts, the supervisor and the proxy's socket.
void WriteMounts(JsonWriter& w, const SandboxSpec& spec) {
  std::vector<BindMount> mounts = spec.mounts;
  mounts.push_back({spec.supervisor, std::string(supervisor::kSupervisorPath), true});
  if (!spec.proxy_socket.empty()) {
    mounts.push_back({spec.proxy_socket, std::string(supervisor::kProxySocketPath), true});
  }
  w.Key("Mounts");
  w.StartArray();
  for (const BindMount& mount : mounts) {
    w.StartObject();
    w.Key("Type");
    w.String("bind");
    w.Key("Source");
    w.String(mount.source);
    w.Key("Target");
    w.String(mount.target);
    w.Key("ReadOnly");
    w.Bool(mount.read_only);
    w.EndObject();
  }
  w.EndArray();
}

std::string CreateBody(const SandboxSpec& spec) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("Image");
  w.String(spec.image);
  WriteProcess(w, spec);
  WriteLabels(w, spec);
  WriteStreams(w, spec);
  w.Key("HostConfig");
  w.StartObject();
  WriteConfinement(w, spec);
  WriteNoLog(w);
  WriteTmp(w, spec);
  WriteMounts(w, spec);
  w.EndObject();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

class NativeBackend final : public Backend {
 public:
  NativeBackend(probe::DockerEndpoint endpoint, std::unique_ptr<probe::DockerApi> api,
                NativeBackendOptions options)
      : endpoint_(std::move(endpoint)), api_(std::move(api)), options_(options) {}

  std::string_view name() const override { return "native"; }
  bool NeedsSupervisor() const override { return true; }
  // A 404 from create is the image missing, said as MissingImageSentence.
  bool ExplainsMissingImage() const override { return true; }
  // The supervisor bridges it to the proxy's socket, mounted in.
  std::string ProxyAddressInside() const override { return std::string(supervisor::kProxyAddress); }

  absl::StatusOr<std::string> Create(const SandboxSpec& spec) override {
    if (spec.image.empty()) return absl::InvalidArgumentError("no sandbox image is set");
    if (spec.supervisor.empty()) {
      return absl::InvalidArgumentError("no supervisor (mojoup-sandbox-init) was given");
    }
    DockerReply reply = Call(
        "POST", "/containers/create?name=mojoup-" + PercentEncode(spec.session), CreateBody(spec));
    if (reply.failure != DockerReply::Failure::kNone || reply.status != 201) {
      if (reply.status == 404) {
        return absl::FailedPreconditionError(
            MissingImageSentence(spec.image, DockerReplyProblem(reply)));
      }
      return Failed("create the sandbox", reply);
    }
    rapidjson::Document body;
    if (!ParseBoundedJson(reply.body, body, "Docker's answer").ok() || !body.IsObject() ||
        !body.HasMember("Id") || !body["Id"].IsString()) {
      return absl::InternalError("Docker's answer to create has no container id");
    }
    std::string id = body["Id"].GetString();
    std::lock_guard lock(mu_);
    not_started_[id];
    return id;
  }

  absl::StatusOr<int> Run(const std::string& sandbox, const Stdio& stdio) override {
    // Attach before start, so not a byte of output is lost.
    probe::DockerStream stream;
    DockerReply attached =
        api_->Upgrade(endpoint_, "POST",
                      fmt::format("{}/containers/{}/attach?stream=1&stdin=1&stdout=1&stderr=1",
                                  kDockerApiPrefix, PercentEncode(sandbox)),
                      {}, options_.api_timeout, stream);
    if (attached.failure != DockerReply::Failure::kNone ||
        (attached.status != 101 && attached.status != 200)) {
      return Failed("attach to the sandbox", attached);
    }
    DockerReply started =
        Call("POST", fmt::format("/containers/{}/start", PercentEncode(sandbox)), {});
    if (started.failure != DockerReply::Failure::kNone ||
        (started.status != 204 && started.status != 304)) {
      ::close(stream.fd);
      return Failed("start the sandbox", started);
    }
    for (int signal : Started(sandbox)) Signal(sandbox, signal).IgnoreError();
    if (stdio.tty && stdio.rows > 0) {
      Resize(sandbox, stdio.rows, stdio.columns).IgnoreError();
    }
    absl::Status pumped = PumpStreams(stream.fd, std::move(stream.pending), stdio);

    // Output ended: the command is exiting. One that closed its output and
    // lingers is killed after exit_timeout, so a session never hangs here.
    auto code = Wait(sandbox, options_.exit_timeout);
    if (!code.ok() && absl::IsDeadlineExceeded(code.status())) {
      Signal(sandbox, SIGKILL).IgnoreError();
      code = Wait(sandbox, options_.api_timeout);
    }
    if (!code.ok()) return code.status();
    if (!pumped.ok()) return pumped;
    return code;
  }

  absl::Status Signal(const std::string& sandbox, int signal) override {
    {
      // Docker drops a signal to a container not yet started (409): it waits
      // for the start instead, so a SIGTERM that came early still ends the
      // command.
      std::lock_guard lock(mu_);
      if (auto waiting = not_started_.find(sandbox); waiting != not_started_.end()) {
        waiting->second.push_back(signal);
        return absl::OkStatus();
      }
    }
    DockerReply reply = Call(
        "POST", fmt::format("/containers/{}/kill?signal={}", PercentEncode(sandbox), signal), {});
    if (reply.failure == DockerReply::Failure::kNone &&
        (reply.status == 204 || reply.status == 409)) {
      return absl::OkStatus();  // 409: it is not running any more
    }
    return Failed("signal the sandbox", reply);
  }

  absl::Status Resize(const std::string& sandbox, unsigned short rows,
                      unsigned short columns) override {
    DockerReply reply = Call(
        "POST",
        fmt::format("/containers/{}/resize?h={}&w={}", PercentEncode(sandbox), rows, columns), {});
    if (reply.failure == DockerReply::Failure::kNone && reply.status == 200) {
      return absl::OkStatus();
    }
    return Failed("resize the sandbox's terminal", reply);
  }

  absl::Status Remove(const std::string& sandbox) override {
    Started(sandbox);  // never to start: its waiting signals go with it
    DockerReply reply =
        Call("DELETE", fmt::format("/containers/{}?force=1&v=1", PercentEncode(sandbox)), {});
    // 404: already gone; 409: "removal already in progress" by someone else.
    if (reply.failure == DockerReply::Failure::kNone &&
        (reply.status == 204 || reply.status == 404 || reply.status == 409)) {
      return absl::OkStatus();
    }
    return Failed("remove the sandbox", reply);
  }

  absl::StatusOr<std::vector<SandboxInfo>> List(
      const std::map<std::string, std::string>& labels) override {
    rapidjson::StringBuffer filters;
    {
      rapidjson::Writer<rapidjson::StringBuffer> w(filters);
      w.StartObject();
      w.Key("label");
      w.StartArray();
      for (const auto& [name, value] : labels) w.String(name + "=" + value);
      w.EndArray();
      w.EndObject();
    }
    DockerReply reply =
        Call("GET", "/containers/json?all=1&filters=" + PercentEncode(filters.GetString()), {});
    if (reply.failure != DockerReply::Failure::kNone || reply.status != 200) {
      return Failed("list sandboxes", reply);
    }
    rapidjson::Document body;
    if (!ParseBoundedJson(reply.body, body, "Docker's answer").ok() || !body.IsArray()) {
      return absl::InternalError("Docker's container list is not a JSON array");
    }
    std::vector<SandboxInfo> found;
    for (const auto& item : body.GetArray()) {
      if (!item.IsObject() || !item.HasMember("Id") || !item["Id"].IsString()) continue;
      SandboxInfo info;
      info.id = item["Id"].GetString();
      if (item.HasMember("Labels") && item["Labels"].IsObject()) {
        for (const auto& label : item["Labels"].GetObject()) {
          if (label.value.IsString()) {
            info.labels[label.name.GetString()] = label.value.GetString();
          }
        }
      }
      info.session = info.labels[std::string(kSessionLabel)];
      info.running = item.HasMember("State") && item["State"].IsString() &&
                     std::string_view(item["State"].GetString()) == "running";
      found.push_back(std::move(info));
    }
    return found;
  }

 private:
  DockerReply Call(std::string_view method, const std::string& path, std::string_view body) {
    return api_->Send(endpoint_, method, std::string(kDockerApiPrefix) + path, body,
                      options_.api_timeout);
  }

  absl::StatusOr<int> Wait(const std::string& sandbox, std::chrono::milliseconds timeout) {
    DockerReply reply =
        api_->Send(endpoint_, "POST",
                   fmt::format("{}/containers/{}/wait", kDockerApiPrefix, PercentEncode(sandbox)),
                   {}, timeout);
    if (reply.failure == DockerReply::Failure::kTimedOut) {
      return absl::DeadlineExceededError("the sandbox did not exit");
    }
    if (reply.failure != DockerReply::Failure::kNone || reply.status != 200) {
      return Failed("wait for the sandbox", reply);
    }
    rapidjson::Document body;
    if (!ParseBoundedJson(reply.body, body, "Docker's answer").ok() || !body.IsObject() ||
        !body.HasMember("StatusCode") || !body["StatusCode"].IsInt()) {
      return absl::InternalError("Docker's answer to wait has no exit code");
    }
    return body["StatusCode"].GetInt();
  }

  // The signals that came for `sandbox` before it started; from now on
  // they go straight to it.
  std::vector<int> Started(const std::string& sandbox) {
    std::lock_guard lock(mu_);
    auto waiting = not_started_.extract(sandbox);
    return waiting.empty() ? std::vector<int>() : std::move(waiting.mapped());
  }

  std::mutex mu_;
  std::map<std::string, std::vector<int>> not_started_;  // created, not yet started
  probe::DockerEndpoint endpoint_;
  std::unique_ptr<probe::DockerApi> api_;
  NativeBackendOptions options_;
};

}  // namespace

std::unique_ptr<Backend> MakeNativeBackend(probe::DockerEndpoint endpoint,
                                           std::unique_ptr<probe::DockerApi> api,
                                           NativeBackendOptions options) {
  if (api == nullptr) api = probe::MakeDockerApi();
  return std::make_unique<NativeBackend>(std::move(endpoint), std::move(api), options);
}

}  // namespace mojoup::sandbox

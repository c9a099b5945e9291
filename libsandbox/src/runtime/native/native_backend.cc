#include "mojoup/sandbox/native_backend.h"

#include <rapidjson/document.h>
#include <signal.h>

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "fmt/format.h"
#include "image/missing_image.h"
#include "mojoup/internal/bounded_json.h"
#include "mojoup/internal/docker_api_version.h"
#include "mojoup/internal/docker_filters.h"
#include "mojoup/internal/json_codec.h"
#include "mojoup/internal/percent_encode.h"
#include "runtime/native/stream_pump.h"
#include "supervisor/command_line.h"

namespace mojoup::sandbox {
namespace {

namespace json = internal::json;

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

// The Engine API's container create body: what a sandbox is to Docker.
struct DockerMount {
  std::string type = "bind";
  std::string source;
  std::string target;
  bool read_only = false;
};

struct LogConfig {
  std::string type;
  std::map<std::string, std::string> config;
};

struct HostConfig {
  // No network, no capabilities, no new privileges, and the spec's limits.
  std::string network_mode = "none";
  bool init = true;
  std::vector<std::string> cap_drop = {"ALL"};
  std::vector<std::string> security_opt = {"no-new-privileges"};
  std::int64_t pids_limit = 0;
  std::int64_t memory = 0;
  std::optional<std::int64_t> nano_cpus;
  // `run` streams the command's output itself; a container log would only
  // grow on the node's disk for as long as the command writes.
  LogConfig log_config{"none", {}};
  std::map<std::string, std::string> tmpfs;
  std::vector<DockerMount> mounts;
};

struct CreateRequest {
  std::string image;
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::string user;
  std::string working_dir;
  std::vector<std::string> env;
  std::vector<std::pair<std::string, std::string>> labels;  // the session's last
  // Attached before the start, every stream of the command: Run pumps them.
  bool tty = false;
  bool open_stdin = true;
  bool stdin_once = true;
  bool attach_stdin = true;
  bool attach_stdout = true;
  bool attach_stderr = true;
  HostConfig host_config;
};

constexpr auto kMount = json::Message<DockerMount>(
    json::Field("Type", &DockerMount::type), json::Field("Source", &DockerMount::source),
    json::Field("Target", &DockerMount::target), json::Field("ReadOnly", &DockerMount::read_only));

constexpr auto kLogConfig = json::Message<LogConfig>(json::Field("Type", &LogConfig::type),
                                                     json::Field("Config", &LogConfig::config));

constexpr auto kHostConfig = json::Message<HostConfig>(
    json::Field("NetworkMode", &HostConfig::network_mode), json::Field("Init", &HostConfig::init),
    json::Field("CapDrop", &HostConfig::cap_drop),
    json::Field("SecurityOpt", &HostConfig::security_opt),
    json::Field("PidsLimit", &HostConfig::pids_limit), json::Field("Memory", &HostConfig::memory),
    json::Optional("NanoCpus", &HostConfig::nano_cpus),
    json::Field("LogConfig", &HostConfig::log_config, kLogConfig),
    json::Field("Tmpfs", &HostConfig::tmpfs), json::Field("Mounts", &HostConfig::mounts, kMount));

constexpr auto kCreateRequest = json::Message<CreateRequest>(
    json::Field("Image", &CreateRequest::image),
    json::Field("Entrypoint", &CreateRequest::entrypoint), json::Field("Cmd", &CreateRequest::cmd),
    json::Field("User", &CreateRequest::user),
    json::Field("WorkingDir", &CreateRequest::working_dir), json::Field("Env", &CreateRequest::env),
    json::Field("Labels", &CreateRequest::labels), json::Field("Tty", &CreateRequest::tty),
    json::Field("OpenStdin", &CreateRequest::open_stdin),
    json::Field("StdinOnce", &CreateRequest::stdin_once),
    json::Field("AttachStdin", &CreateRequest::attach_stdin),
    json::Field("AttachStdout", &CreateRequest::attach_stdout),
    json::Field("AttachStderr", &CreateRequest::attach_stderr),
    json::Field("HostConfig", &CreateRequest::host_config, kHostConfig));

// Docker's answers, each member checked; what else they hold is Docker's.
struct Created {
  std::string id;
};
constexpr auto kCreated = json::Message<Created>(json::Field("Id", &Created::id));

struct Waited {
  int status_code = 0;
};
constexpr auto kWaited = json::Message<Waited>(json::Field("StatusCode", &Waited::status_code));

struct Listed {
  std::string id;
  std::map<std::string, std::string> labels;
  std::string state;
};
constexpr auto kListed = json::Message<Listed>(json::Field("Id", &Listed::id),
                                               json::Optional("Labels", &Listed::labels).Lenient(),
                                               json::Optional("State", &Listed::state).Lenient());

// The spec's mounts, the supervisor and the proxy's socket.
std::vector<DockerMount> Mounts(const SandboxSpec& spec) {
  std::vector<DockerMount> mounts;
  for (const BindMount& mount : spec.mounts) {
    mounts.push_back({"bind", mount.source, mount.target, mount.read_only});
  }
  mounts.push_back({"bind", spec.supervisor, std::string(supervisor::kSupervisorPath), true});
  if (!spec.proxy_socket.empty()) {
    mounts.push_back({"bind", spec.proxy_socket, std::string(supervisor::kProxySocketPath), true});
  }
  return mounts;
}

HostConfig Confinement(const SandboxSpec& spec) {
  HostConfig host;
  host.pids_limit = spec.pids;
  host.memory = spec.memory_bytes;
  if (spec.cpus > 0) host.nano_cpus = static_cast<std::int64_t>(spec.cpus * 1e9);
  // Docker gives the tmpfs the image's /tmp mode (often 0755 root), so the
  // user must own it to write there.
  host.tmpfs["/tmp"] = fmt::format("rw,nosuid,nodev,mode=1777,uid={},gid={}", spec.uid, spec.gid);
  host.mounts = Mounts(spec);
  return host;
}

std::string CreateBody(const SandboxSpec& spec) {
  CreateRequest request;
  request.image = spec.image;
  // The supervisor is the entrypoint; it becomes the command once confined.
  request.entrypoint = {std::string(supervisor::kSupervisorPath)};
  request.cmd = supervisor::CommandLine(
      {.proxy_socket =
           spec.proxy_socket.empty() ? std::string() : std::string(supervisor::kProxySocketPath),
       .write_dirs = spec.writable,
       .command = spec.command});
  request.user = fmt::format("{}:{}", spec.uid, spec.gid);
  request.working_dir = spec.workdir;
  for (const auto& [name, value] : spec.environment) request.env.push_back(name + "=" + value);
  request.labels.assign(spec.labels.begin(), spec.labels.end());
  request.labels.emplace_back(kSessionLabel, spec.session);
  request.tty = spec.tty;
  request.host_config = Confinement(spec);
  return json::ToJson(request, kCreateRequest);
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
    auto created = json::Parse<Created>(reply.body, kCreated, "Docker's answer");
    if (!created.ok()) return absl::InternalError("Docker's answer to create has no container id");
    absl::MutexLock lock(&mu_);
    not_started_[created->id];
    return created->id;
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
      absl::MutexLock lock(&mu_);
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
    std::vector<std::string> filters;
    for (const auto& [name, value] : labels) filters.push_back(name + "=" + value);
    DockerReply reply =
        Call("GET", "/containers/json?all=1&filters=" + internal::DockerLabelFilters(filters), {});
    if (reply.failure != DockerReply::Failure::kNone || reply.status != 200) {
      return Failed("list sandboxes", reply);
    }
    rapidjson::Document body;
    if (!ParseBoundedJson(reply.body, body, "Docker's answer").ok() || !body.IsArray()) {
      return absl::InternalError("Docker's container list is not a JSON array");
    }
    std::vector<SandboxInfo> found;
    for (const auto& item : body.GetArray()) {
      Listed listed;
      if (!json::Read(item, listed, kListed).ok()) continue;  // not a container
      SandboxInfo info;
      info.id = std::move(listed.id);
      info.labels = std::move(listed.labels);
      info.session = info.labels[std::string(kSessionLabel)];
      info.running = listed.state == "running";
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
    auto waited = json::Parse<Waited>(reply.body, kWaited, "Docker's answer");
    if (!waited.ok()) return absl::InternalError("Docker's answer to wait has no exit code");
    return waited->status_code;
  }

  // The signals that came for `sandbox` before it started; from now on
  // they go straight to it.
  std::vector<int> Started(const std::string& sandbox) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto waiting = not_started_.extract(sandbox);
    return waiting.empty() ? std::vector<int>() : std::move(waiting.mapped());
  }

  absl::Mutex mu_;
  // created, not yet started
  std::map<std::string, std::vector<int>> not_started_ ABSL_GUARDED_BY(mu_);
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

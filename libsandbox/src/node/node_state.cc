// Node::State: the node's seams, its runtime and session manager made once,
// and how it tells what it did on the side. Below node.cc, node_run.cc and
// node_inputs.cc, which use it; it uses none of them.
#include "node/node_state.h"

#include <algorithm>
#include <filesystem>

#include "fmt/format.h"
#include "mojoup/probe/openshell_cli.h"
#include "mojoup/probe/openshell_gateway.h"
#include "mojoup/sandbox/native_backend.h"
#include "mojoup/sandbox/openshell_backend.h"
#include "runtime/openshell/openshell_host.h"
#include "session/close_notices.h"

namespace mojoup {
namespace {

// A DockerApi the caller owns, lent to a backend that wants to own one.
class LentDockerApi : public probe::DockerApi {
 public:
  explicit LentDockerApi(probe::DockerApi& api) : api_(api) {}
  probe::DockerReply Send(const probe::DockerEndpoint& endpoint, std::string_view method,
                          std::string_view target, std::string_view body,
                          std::chrono::milliseconds timeout) override {
    return api_.Send(endpoint, method, target, body, timeout);
  }
  probe::DockerReply Upgrade(const probe::DockerEndpoint& endpoint, std::string_view method,
                             std::string_view target, std::string_view body,
                             std::chrono::milliseconds timeout,
                             probe::DockerStream& stream) override {
    return api_.Upgrade(endpoint, method, target, body, timeout, stream);
  }

 private:
  probe::DockerApi& api_;
};

// node.sandbox.openshell_remote; for auto (the default) the gateway's
// metadata says, and a gateway with none, or none named, is local. A record
// that is there but cannot be used fails closed, in its own sentence.
absl::StatusOr<bool> OpenShellGatewayIsRemote(probe::Kernel& kernel,
                                              const policy::NodeConfig& config) {
  const std::string remote = config.Get("node.sandbox.openshell_remote").value_or("auto");
  if (remote != "auto") return remote == "yes";
  const std::optional<std::string> gateway = config.Get("node.sandbox.openshell_gateway");
  if (!gateway) return false;
  auto metadata = probe::ReadOpenShellGatewayMetadata(kernel, *gateway);
  if (absl::IsNotFound(metadata.status())) return false;
  if (!metadata.ok()) return metadata.status();
  return metadata->is_remote;
}

}  // namespace

absl::Status NotPossible(const absl::Status& status) {
  if (!absl::IsInvalidArgument(status)) return status;
  return absl::FailedPreconditionError(status.message());
}

probe::ProbeOptions ProbeOptionsFor(const policy::NodeConfig& config) {
  probe::ProbeOptions options;
  options.openshell_path = config.Get("node.sandbox.openshell_path");
  options.require_openshell = policy::SandboxRuntime(config) != "native";
  options.openshell_gateway = config.Get("node.sandbox.openshell_gateway").value_or("");
  const std::string remote = config.Get("node.sandbox.openshell_remote").value_or("auto");
  if (remote != "auto") options.openshell_remote = remote == "yes";
  return options;
}

policy::Capability CapabilityOf(const probe::Verdict& verdict) {
  return {verdict.can_sandbox, verdict.reason.value_or("")};
}

void Notices::operator()(std::string_view sentence) const {
  if (sink) sink(sentence);
}

void Notices::WriteBack(const sandbox::WriteBackReport& report) const {
  for (const sandbox::CloseNotice& notice : sandbox::WriteBackNotices(report)) {
    (*this)(notice.message);
  }
}

void Notices::Close(const sandbox::CloseReport& report) const {
  for (const sandbox::CloseNotice& notice : sandbox::CloseNotices(report)) (*this)(notice.message);
}

probe::Report Node::State::Probe() const {
  if (options.kernel == nullptr && options.docker == nullptr && options.commands == nullptr) {
    return probe::ProbeSystem(ProbeOptionsFor(config));
  }
  // Each seam not lent is the real one.
  std::unique_ptr<probe::Kernel> kernel;
  std::unique_ptr<probe::DockerApi> docker;
  std::unique_ptr<probe::CommandRunner> commands;
  if (options.kernel == nullptr) kernel = probe::MakeSystemKernel();
  if (options.docker == nullptr) docker = probe::MakeDockerApi();
  if (options.commands == nullptr) commands = probe::MakeSystemCommandRunner();
  return probe::Probe(ProbeOptionsFor(config),
                      probe::Host{options.kernel ? *options.kernel : *kernel,
                                  options.docker ? *options.docker : *docker,
                                  options.commands ? *options.commands : *commands});
}

std::unique_ptr<sandbox::Backend> Node::State::MakeBackend(std::string& error) const {
  std::unique_ptr<probe::Kernel> own_kernel;
  if (options.kernel == nullptr) own_kernel = probe::MakeSystemKernel();
  probe::Kernel& kernel = options.kernel ? *options.kernel : *own_kernel;
  auto endpoint = probe::ResolveDockerEndpoint(kernel);
  if (!endpoint.ok()) {
    error = std::string(endpoint.status().message());
    return nullptr;
  }
  auto lent_docker = [this]() -> std::unique_ptr<probe::DockerApi> {
    if (options.docker == nullptr) return probe::MakeDockerApi();
    return std::make_unique<LentDockerApi>(*options.docker);
  };
  if (policy::SandboxRuntime(config) == "native") {
    return sandbox::MakeNativeBackend(*endpoint, lent_docker());
  }
  std::optional<std::string> path =
      probe::FindOpenShell(kernel, config.Get("node.sandbox.openshell_path"));
  if (!path) {
    error = "the OpenShell CLI `openshell` is not on PATH (node.sandbox.runtime is openshell)";
    return nullptr;
  }
  const std::string gateway = config.Get("node.sandbox.openshell_gateway").value_or("");
  absl::StatusOr<bool> remote = OpenShellGatewayIsRemote(kernel, config);
  if (!remote.ok()) {
    error = std::string(remote.status().message());
    return nullptr;
  }
  std::unique_ptr<probe::CommandRunner> own_runner;
  if (options.commands == nullptr) own_runner = probe::MakeSystemCommandRunner();
  probe::CommandResult version =
      probe::OpenShellCli(options.commands ? *options.commands : *own_runner, *path, gateway)
          .Version(std::chrono::seconds(5));
  std::optional<probe::SemVer> parsed =
      version.Succeeded() ? probe::ParseSemVer(version.out) : std::nullopt;
  if (!parsed) {
    error = fmt::format("`{} --version` gave no version", *path);
    return nullptr;
  }
  sandbox::OpenShellBackendOptions backend_options;
  backend_options.path = *path;
  backend_options.version = *parsed;
  backend_options.gateway = gateway;
  backend_options.remote = *remote;
  // The runner that asked the version runs the runtime's calls too.
  backend_options.commands = options.commands;
  if (auto set = config.Get("node.sandbox.openshell_host_address")) {
    backend_options.bridge_gateway = *set;
    backend_options.host_address_configured = true;
  } else if (!*remote) {
    // A remote gateway's pods do not reach this node's bridge: without an
    // address they route back to, the runtime leaves keys to providers.
    sandbox::OpenShellHost host = sandbox::FindOpenShellHost(*lent_docker(), *endpoint);
    if (!host.problem.empty()) {
      error = host.problem;
      return nullptr;
    }
    backend_options.bridge_gateway = host.address;
  }
  if (!*remote) {
    backend_options.host_address_of = [docker = std::shared_ptr<probe::DockerApi>(lent_docker()),
                                       endpoint = *endpoint](const std::string& name) {
      return sandbox::OpenShellHostOf(*docker, endpoint, name);
    };
  }
  auto made = sandbox::MakeOpenShellBackend(std::move(backend_options));
  if (!made.ok()) {
    error = std::string(made.status().message());
    return nullptr;
  }
  return *std::move(made);
}

absl::StatusOr<sandbox::Backend*> Node::State::Runtime() {
  if (backend == nullptr && backend_error.empty()) {
    if (options.backend != nullptr) {
      backend = options.backend;
    } else {
      owned_backend = MakeBackend(backend_error);
      backend = owned_backend.get();
    }
  }
  if (backend == nullptr) return absl::FailedPreconditionError(backend_error);
  return backend;
}

absl::StatusOr<sandbox::SessionManager*> Node::State::Manager() {
  if (manager) return &*manager;
  auto runtime = Runtime();
  if (!runtime.ok()) return runtime.status();
  sandbox::SessionManagerOptions manager_options;
  manager_options.state_dir = state_dir;
  manager_options.backend = *runtime;
  manager_options.supervisor = supervisor;
  manager_options.getenv = options.getenv;
  const policy::AuditSettings audit = policy::AuditSettingsOf(config);
  manager_options.audit_keep = static_cast<std::size_t>(std::max(audit.keep, 0));
  manager_options.audit_max_age = std::chrono::duration_cast<std::chrono::hours>(audit.max_age);
  manager.emplace(std::move(manager_options));
  return &*manager;
}

sandbox::ReapReport Node::State::ReapWith(sandbox::SessionManager& sessions) const {
  sandbox::ReapReport reap = sessions.Reap();
  for (const std::string& id : reap.sessions) {
    notice(fmt::format("cleaned up session {}, whose owner is gone", id));
  }
  for (const std::string& message : reap.notices) notice(message);
  for (const std::string& error : reap.errors) notice(error);
  return reap;
}

}  // namespace mojoup

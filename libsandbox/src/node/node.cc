// mojoup::Node: the node's configuration, seams and runtime, and the
// operations on them (node_run.cc starts runs, node_proxy.cc the proxy,
// node_image.cc the agent image).
#include "mojoup/sandbox/node.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <filesystem>

#include "fmt/format.h"
#include "mojoup/internal/docker_api_version.h"
#include "mojoup/internal/host_port.h"
#include "mojoup/policy/effective_policy.h"
#include "mojoup/policy/tool_profiles.h"
#include "mojoup/probe/openshell_cli.h"
#include "mojoup/sandbox/native_backend.h"
#include "mojoup/sandbox/openshell_backend.h"
#include "mojoup/sandbox/policy_watch.h"
#include "node/node_state.h"
#include "runtime/openshell/openshell_host.h"

namespace mojoup {
namespace {

namespace fs = std::filesystem;

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

}  // namespace

absl::StatusOr<std::string> RepositoryDirectory(const std::string& dir) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(dir, ec);
  if (!ec && fs::is_directory(canonical, ec)) return canonical.string();
  return absl::InvalidArgumentError(
      fmt::format("--repo {}: {}; expected a repository's directory", dir,
                  fs::exists(dir, ec) ? "not a directory" : "no such directory"));
}

probe::ProbeOptions ProbeOptionsFor(const policy::NodeConfig& config) {
  probe::ProbeOptions options;
  options.openshell_path = config.Get("node.sandbox.openshell_path");
  options.require_openshell = policy::SandboxRuntime(config) != "native";
  return options;
}

policy::Capability CapabilityOf(const probe::Verdict& verdict) {
  return {verdict.can_sandbox, verdict.reason.value_or("")};
}

void Notices::operator()(std::string_view sentence) const {
  if (sink) sink(sentence);
}

void Notices::WriteBack(const sandbox::WriteBackReport& report) const {
  for (const std::string& path : report.written) {
    (*this)(fmt::format(
        "the session refreshed its sign-in; {} has the provider's new tokens", path));
  }
  for (const std::string& notice : report.notices) (*this)(notice);
  for (const sandbox::KeptAside& kept : report.kept_aside) {
    (*this)(fmt::format("{} was not written back: {}; the sandbox's copy is kept at {}",
                        kept.host_path, kept.why, kept.aside_path));
  }
  for (const std::string& error : report.errors) (*this)(error);
}

void Notices::Close(const sandbox::CloseReport& report) const {
  WriteBack(report.sign_in);
  for (const std::string& message : report.notices) (*this)(message);
  for (const std::string& message : report.errors) (*this)(message);
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
  std::unique_ptr<probe::CommandRunner> own_runner;
  if (options.commands == nullptr) own_runner = probe::MakeSystemCommandRunner();
  probe::CommandResult version =
      probe::OpenShellCli(options.commands ? *options.commands : *own_runner, *path)
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
  // The runner that asked the version runs the runtime's calls too.
  backend_options.commands = options.commands;
  if (auto set = config.Get("node.sandbox.openshell_host_address")) {
    backend_options.bridge_gateway = *set;
    backend_options.host_address_configured = true;
  } else {
    sandbox::OpenShellHost host = sandbox::FindOpenShellHost(*lent_docker(), *endpoint);
    if (!host.problem.empty()) {
      error = host.problem;
      return nullptr;
    }
    backend_options.bridge_gateway = host.address;
  }
  backend_options.host_address_of = [docker = std::shared_ptr<probe::DockerApi>(lent_docker()),
                                     endpoint = *endpoint](const std::string& name) {
    return sandbox::OpenShellHostOf(*docker, endpoint, name);
  };
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

absl::StatusOr<policy::EffectivePolicy> Node::State::PolicyFor(
    const std::string& dir, const PolicySnapshot* snapshot) const {
  policy::PolicyPaths paths = policy::PolicyPathsFor(dir, config);
  if (snapshot != nullptr) {
    paths.repo_read = true;
    paths.repo_text = snapshot->text;
  }
  auto effective = policy::LoadEffectivePolicy(paths);
  if (!effective.ok()) return absl::InvalidArgumentError(effective.status().message());
  return effective;
}

absl::StatusOr<Node> Node::Open(NodeOptions options) {
  auto state = std::make_unique<State>();
  if (options.config_path.empty()) options.config_path = policy::DefaultConfigPath();
  std::error_code ec;
  if (options.config_named && !fs::exists(options.config_path, ec)) {
    return absl::InvalidArgumentError(fmt::format(
        "--config {}: no such file; expected the node config file (leave --config out to use {})",
        options.config_path, policy::DefaultConfigPath()));
  }
  // The image is the one default the policy layer cannot know.
  auto config = policy::NodeConfig::Load(options.config_path,
                                         {{"node.sandbox.image", sandbox::DefaultAgentImage()}});
  if (!config.ok()) return absl::InvalidArgumentError(config.status().message());
  state->config = *std::move(config);
  state->state_dir = options.state_dir.empty() ? sandbox::DefaultStateDir() : options.state_dir;
  state->supervisor =
      options.supervisor.empty() ? sandbox::FindSupervisor("/proc/self/exe") : options.supervisor;
  state->notice.sink = options.notice;
  state->options = std::move(options);
  return Node(std::move(state));
}

Node::Node(std::unique_ptr<State> state) : state_(std::move(state)) {}
Node::Node(Node&&) noexcept = default;
Node& Node::operator=(Node&&) noexcept = default;
Node::~Node() = default;

const policy::NodeConfig& Node::config() const { return state_->config; }
const std::string& Node::state_dir() const { return state_->state_dir; }

absl::StatusOr<Explanation> Node::Explain(const std::string& dir, const std::string& tool,
                                          const std::string& host) const {
  // "api.github.com", "api.github.com:8443", "[fd00::7]:8080"
  std::optional<internal::HostPort> host_port;
  if (!host.empty()) {
    host_port = internal::SplitHostPort(host, 443);
    if (!host_port || host_port->host.empty()) {
      return absl::InvalidArgumentError(
          "--host expects HOST or HOST:PORT with a port from 1 to 65535");
    }
  }
  if (absl::Status known = CheckTool(tool); !known.ok()) return known;
  auto repo = RepositoryDirectory(dir);
  if (!repo.ok()) return repo.status();
  auto effective = state_->PolicyFor(*repo);
  if (!effective.ok()) return effective.status();
  Explanation explained{*std::move(effective), {}, std::nullopt};
  probe::Report report = state_->Probe();
  explained.decision = policy::Decide(CapabilityOf(report.verdict), state_->config,
                                      explained.policy, policy::CurrentUserName());
  if (host_port) {
    explained.host = policy::CheckHost(explained.policy, tool, host_port->host, host_port->port);
  }
  return explained;
}

std::string Explanation::Json() const { return policy::ExplainJson(policy, decision, host); }
std::string Explanation::Text() const { return policy::ExplainText(policy, decision, host); }

std::string RepositoryRoot(const std::string& dir, std::error_code& ec) {
  return fs::canonical(policy::FindRepoRoot(dir), ec).string();
}

std::optional<std::string> Node::PolicyChanged(const std::string& dir) const {
  std::error_code ec;
  const std::string root = RepositoryRoot(dir, ec);
  if (ec) return std::nullopt;
  auto change = sandbox::PolicyWatch(state_->state_dir).FindChange(root);
  if (!change) return std::nullopt;
  return change->Sentence();
}

absl::Status Node::AcceptPolicy(const std::string& dir) {
  std::error_code ec;
  const std::string root = RepositoryRoot(dir, ec);
  if (ec) return absl::InvalidArgumentError(fmt::format("{}: {}", dir, ec.message()));
  if (absl::Status accepted = sandbox::PolicyWatch(state_->state_dir).Accept(root);
      !accepted.ok()) {
    return accepted;
  }
  state_->notice(fmt::format("the policy of {} is accepted as yours", root));
  return absl::OkStatus();
}

absl::StatusOr<RunResult> Node::Run(RunRequest request, const sandbox::Stdio& stdio) {
  auto launch = Start(std::move(request));
  if (!launch.ok()) return launch.status();
  if (launch->run == nullptr) return absl::FailedPreconditionError(launch->decision.reason);
  RunResult result;
  absl::StatusOr<int> code = launch->run->Wait(stdio);
  result.closed = launch->run->Close();
  if (!code.ok()) return code.status();
  result.decision = std::move(launch->decision);
  result.exit_code = *code;
  return result;
}

absl::StatusOr<std::vector<sandbox::SessionRecord>> Node::Sessions() {
  auto manager = state_->Manager();
  if (!manager.ok()) return manager.status();
  return (*manager)->List();
}

absl::StatusOr<sandbox::CloseReport> Node::Stop(const std::string& id) {
  auto manager = state_->Manager();
  if (!manager.ok()) return manager.status();
  auto stopped = (*manager)->Stop(id);
  if (!stopped.ok()) return stopped.status();
  // Errors stay with the caller: they mean the session is not all gone.
  state_->notice.WriteBack(stopped->sign_in);
  for (const std::string& message : stopped->notices) state_->notice(message);
  return stopped;
}

absl::StatusOr<sandbox::ReapReport> Node::Reap() {
  auto manager = state_->Manager();
  if (!manager.ok()) return manager.status();
  return state_->ReapWith(**manager);
}

std::string StatusJson(const probe::Verdict& verdict,
                       const std::vector<sandbox::SessionRecord>& sessions,
                       const absl::StatusOr<sandbox::AgentImage>& image) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("schema");
  w.String("mojoup.status/v1");
  w.Key("can_sandbox");
  w.Bool(verdict.can_sandbox);
  w.Key("verdict");
  w.String(verdict.Line());
  w.Key("image");
  if (image.ok()) {
    const std::string json = sandbox::AgentImageToJson(*image);
    w.RawValue(json.c_str(), json.size(), rapidjson::kObjectType);
  } else {
    w.Null();
  }
  w.Key("sessions");
  w.StartArray();
  for (const sandbox::SessionRecord& session : sessions) {
    w.StartObject();
    for (const auto& [key, value] : {std::pair{"id", &session.id},
                                     {"user", &session.user},
                                     {"repo", &session.repo},
                                     {"tool", &session.tool},
                                     {"runtime", &session.runtime},
                                     {"sandbox", &session.sandbox},
                                     {"state", &session.state},
                                     {"started_at", &session.started_at}}) {
      w.Key(key);
      if (key == std::string_view("tool") && value->empty()) {
        w.Null();
      } else {
        w.String(*value);
      }
    }
    w.Key("pid");
    w.Int(session.pid);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

std::string StatusText(const probe::Verdict& verdict,
                       const std::vector<sandbox::SessionRecord>& sessions,
                       const absl::StatusOr<sandbox::AgentImage>& image) {
  std::string text = verdict.Line() + "\n";
  if (image.ok()) {
    text += fmt::format(
        "Sandbox image {}: {}.\n", image->reference,
        image->agents.empty() ? "its labels name no agent CLIs" : AgentList(image->agents));
  } else {
    std::string sentence(image.status().message());
    if (!sentence.empty() && sentence[0] >= 'a' && sentence[0] <= 'z') {
      sentence[0] = static_cast<char>(sentence[0] - 32);
    }
    text += sentence + ".\n";
  }
  if (sessions.empty()) return text + "No sessions in sandboxes.\n";
  constexpr std::string_view kRow = "{:<17} {:<10} {:<12} {:<8} {:<8} {:<20} {:>7}  {}\n";
  text += fmt::format(kRow, "SESSION", "USER", "TOOL", "RUNTIME", "STATE", "STARTED", "PID",
                      "REPOSITORY");
  for (const sandbox::SessionRecord& s : sessions) {
    text += fmt::format(kRow, s.id, s.user, s.tool.empty() ? "-" : s.tool, s.runtime, s.state,
                        s.started_at, s.pid, s.repo);
  }
  return text;
}

}  // namespace mojoup

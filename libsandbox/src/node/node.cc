// mojoup::Node: opening a node and the operations on it but runs
// (node_run.cc starts runs, node_proxy.cc the proxy, node_image.cc the
// agent image; node_state.cc holds the seams and runtime they share).
#include "mojoup/sandbox/node.h"

#include <filesystem>

#include "fmt/format.h"
#include "image/agent_image_json.h"
#include "mojoup/internal/host_port.h"
#include "mojoup/internal/json_codec.h"
#include "mojoup/policy/effective_policy.h"
#include "mojoup/sandbox/policy_watch.h"
#include "node/node_state.h"

namespace mojoup {
namespace {

namespace fs = std::filesystem;
namespace json = internal::json;
using sandbox::SessionRecord;

// What `status --json` prints.
struct StatusMessage {
  bool can_sandbox = false;
  std::string verdict;
  std::optional<sandbox::AgentImage> image;  // null when Docker lacks it or does not answer
  std::vector<SessionRecord> sessions;
};

constexpr auto kStatusSession = json::Message<SessionRecord>(
    json::Field("id", &SessionRecord::id), json::Field("user", &SessionRecord::user),
    json::Field("repo", &SessionRecord::repo),
    json::Field("tool", &SessionRecord::tool).EmptyAsNull(),
    json::Field("runtime", &SessionRecord::runtime),
    json::Field("sandbox", &SessionRecord::sandbox), json::Field("state", &SessionRecord::state),
    json::Field("started_at", &SessionRecord::started_at), json::Field("pid", &SessionRecord::pid));

constexpr auto kStatus = json::Message<StatusMessage>(
    json::Const("schema", "mojoup.status/v1"),
    json::Field("can_sandbox", &StatusMessage::can_sandbox),
    json::Field("verdict", &StatusMessage::verdict),
    json::Field("image", &StatusMessage::image, sandbox::kAgentImageJson).WriteNull(),
    json::Field("sessions", &StatusMessage::sessions, kStatusSession));

}  // namespace

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
  if (!options.getenv) options.getenv = sandbox::SystemGetenv();
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
  return Explain(ExplainRequest{dir, tool, host, ""});
}

absl::StatusOr<Explanation> Node::Explain(const ExplainRequest& request) const {
  // "api.github.com", "api.github.com:8443", "[fd00::7]:8080"
  std::optional<internal::HostPort> host_port;
  if (!request.host.empty()) {
    host_port = internal::SplitHostPort(request.host, 443);
    if (!host_port || host_port->host.empty()) {
      return absl::InvalidArgumentError(
          "--host expects HOST or HOST:PORT with a port from 1 to 65535");
    }
  }
  if (absl::Status known = CheckTool(request.tool); !known.ok()) return known;
  std::optional<policy::SessionRules> session;
  if (!request.session.empty()) {
    auto rules = SessionRulesOf(state_->state_dir, request.session);
    if (!rules.ok()) return rules.status();
    session = *std::move(rules);
  }
  auto repo = RepositoryDirectory(request.dir);
  if (!repo.ok()) return repo.status();
  auto effective = state_->PolicyFor(*repo);
  if (!effective.ok()) return effective.status();
  Explanation explained{*std::move(effective), {}, std::nullopt, {}, std::move(session)};
  probe::Report report = state_->Probe();
  explained.decision = policy::Decide(CapabilityOf(report.verdict), state_->config,
                                      explained.policy, policy::CurrentUserName());
  explained.ask = policy::DecideAsk(state_->config, explained.policy);
  if (host_port) {
    explained.host =
        explained.session
            ? policy::CheckHost(explained.policy, request.tool, host_port->host, host_port->port,
                                *explained.session)
            : policy::CheckHost(explained.policy, request.tool, host_port->host, host_port->port);
  }
  return explained;
}

std::string Explanation::Json() const {
  if (session) return policy::ExplainJson(policy, decision, host, *session);
  return policy::ExplainJson(policy, decision, host);
}

std::string Explanation::Text() const {
  if (session) return policy::ExplainText(policy, decision, host, ask, *session);
  return policy::ExplainText(policy, decision, host, ask);
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
  StatusMessage status{.can_sandbox = verdict.can_sandbox,
                       .verdict = verdict.Line(),
                       .image = std::nullopt,
                       .sessions = sessions};
  if (image.ok()) status.image = *image;
  return json::ToJson(status, kStatus) + "\n";
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

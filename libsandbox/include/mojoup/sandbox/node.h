// Node: a mojoup node's sandbox role in one object. It is what `mojoup-node`
// does, for any program: say whether this machine can sandbox agents, explain
// a repository's policy and the decision, run a command in a per-session
// sandbox (choosing the runtime, starting the session's credential proxy,
// staging the tool's sign-in), list, stop and clean up sessions.
//
//   auto node = mojoup::Node::Open({});          // the default node config
//   if (!node.ok()) return Fail(node.status());
//   mojoup::probe::Report report = node->Doctor();
//   auto explained = node->Explain("/home/me/src/app");
//
//   mojoup::RunRequest request;
//   request.workdir = "/home/me/src/app";
//   request.command = {"make", "test"};
//   auto result = node->Run(request);            // streams stdio, blocks to the end
//   if (result.ok()) return result->exit_code;
//
// Errors are values. InvalidArgument means bad input (a malformed request, a
// broken policy or config): nothing was started. Anything else means the
// asked-for thing is not possible here, and says why in one sentence. A
// sentence names a request's field by the `mojoup-node` flag that sets it
// (workdir is --repo).
//
// A Node is not thread-safe; open one per thread. A program that runs many
// sessions at once talks to the node's sandbox service instead, which runs
// each in a worker process of its own (mojoup/service/client.h). The seams in NodeOptions let
// a test harness run all of it without Docker or OpenShell (see
// mojoup/sandbox/testing/ and examples/harness.cc).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mojoup/credproxy/proxy.h"
#include "mojoup/policy/decision.h"
#include "mojoup/policy/effective_policy.h"
#include "mojoup/policy/explain.h"
#include "mojoup/policy/node_config.h"
#include "mojoup/probe/command_runner.h"
#include "mojoup/probe/docker_api.h"
#include "mojoup/probe/kernel.h"
#include "mojoup/probe/probe.h"
#include "mojoup/sandbox/agent_image.h"
#include "mojoup/sandbox/audit_reader.h"
#include "mojoup/sandbox/backend.h"
#include "mojoup/sandbox/run_request.h"
#include "mojoup/sandbox/session.h"

namespace mojoup {

struct NodeOptions {
  // The node config file; empty: policy::DefaultConfigPath(). A missing
  // file is a fresh node's empty config, unless the caller named the file
  // (a mistyped path would read as an empty config).
  std::string config_path;
  bool config_named = false;
  // Where session records, staging and sockets live; empty:
  // sandbox::DefaultStateDir().
  std::string state_dir;
  // mojoup-sandbox-init, which the native runtime runs as the sandbox's
  // first process; empty: looked for beside this program.
  std::string supervisor;
  // Where the node says what it did on the side, one sentence each: the
  // decision, sessions of dead owners cleaned up, sign-ins written back,
  // warnings. Unset: dropped.
  std::function<void(std::string_view)> notice;
  // Where the credentials' values (--credential NAME) and the tools'
  // relocation variables are looked up; unset: this process's environment.
  // A process that runs a run for someone else passes theirs, without
  // putting them into its own environment.
  sandbox::Getenv getenv;
  // Seams; null means the real one. Not owned: they must outlive the Node.
  probe::Kernel* kernel = nullptr;
  probe::DockerApi* docker = nullptr;
  probe::CommandRunner* commands = nullptr;
  // The sandbox runtime to use instead of the one node.sandbox.runtime names
  // (InMemoryBackend in a harness).
  sandbox::Backend* backend = nullptr;
  // What Node::BuildImage builds with; unset: sandbox::BuildAgentImage (a
  // harness passes a fake: a real build downloads hundreds of megabytes).
  std::function<absl::StatusOr<sandbox::AgentImage>(const sandbox::AgentImageOptions&)> build_image;
};

// A run that has started: a session in a sandbox, or an ordinary process
// when the decision was to run unsandboxed.
class RunningCommand {
 public:
  virtual ~RunningCommand() = default;

  // Whether the command got a terminal (then `stdio.out` carries both streams).
  virtual bool terminal() const = 0;
  // The session's record; empty for an unsandboxed run.
  virtual const sandbox::SessionRecord& record() const = 0;

  // Runs the command to its end and returns its exit code (128+N when signal
  // N ended it). Call once.
  virtual absl::StatusOr<int> Wait(sandbox::Stdio stdio) = 0;
  // From any thread while Wait runs.
  virtual absl::Status Signal(int signal) = 0;
  virtual absl::Status Resize(unsigned short rows, unsigned short columns) = 0;
  // Removes the sandbox, stops the proxy, writes refreshed sign-in files
  // back (reported through NodeOptions::notice). The destructor does it too.
  virtual sandbox::CloseReport Close() = 0;
  // What the session's proxy decided and its approvals came to so far (the
  // service's /metrics); from any thread, also while Wait or Close runs.
  // Zero for a run without a sandbox.
  virtual sandbox::SessionTally Tally() const { return {}; }
};

// What Node::Start decided, and the run when there is one.
struct Launch {
  policy::SandboxDecision decision;
  std::unique_ptr<RunningCommand> run;  // null when the decision refused
};

struct RunResult {
  policy::SandboxDecision decision;
  int exit_code = 0;
  sandbox::CloseReport closed;
};

// What `mojoup-node policy explain` is asked.
struct ExplainRequest {
  std::string dir = ".";  // the repository holding it (--repo)
  std::string tool{};     // whose own service hosts count for `host` (--tool)
  std::string host{};     // "HOST[:PORT]", port 443 when not given (--host)
  // A live session of this node that asks (--session): its grants and
  // denials too, and they count for `host`.
  std::string session{};
};

// The effective policy of a repository and what this node would decide now.
struct Explanation {
  policy::EffectivePolicy policy;
  policy::SandboxDecision decision;
  std::optional<policy::HostCheck> host;  // when a host was asked about
  policy::AskDecision ask;                // the policy's ask on this node
  std::string Json() const;               // schema mojoup.policy/v1
  std::string Text() const;
  // With ExplainRequest::session: what its operator answered it, fetched
  // from its control socket (policy::ExplainJson's "session").
  std::optional<policy::SessionRules> session{};
};

// A standalone credential proxy (`mojoup-node proxy`).
struct ProxyRequest {
  std::string workdir = ".";  // take the rules from this repository's policy...
  std::string policy_file;    // ...or from this policy file alone
  std::string tool;
  std::string listen;  // loopback HOST:PORT; with neither listen nor socket, 127.0.0.1:0
  std::string socket;  // unix socket path
  std::vector<std::string> credentials;
  std::vector<std::string> resolve;
  std::string upstream_ca;
  std::string audit_file;
};

// A running standalone proxy; it stops, and its CA directory goes, when destroyed.
class RunningProxy {
 public:
  virtual ~RunningProxy() = default;
  virtual const credproxy::Proxy& proxy() const = 0;
  // The ready line: {"schema": "mojoup.proxy/v1", "listen", "socket", "ca_cert", "env"}.
  virtual std::string ReadyJson() const = 0;
};

class Node {
 public:
  static absl::StatusOr<Node> Open(NodeOptions options);

  Node(Node&&) noexcept;
  Node& operator=(Node&&) noexcept;
  ~Node();

  const policy::NodeConfig& config() const;
  const std::string& state_dir() const;

  // Every host check and the verdict: can this machine sandbox agents. The
  // last check, sandbox.image, says whether the node's Docker holds the
  // sandbox image; it passes or warns, and never decides the verdict.
  probe::Report Doctor() const;

  // What the node's Docker holds under SandboxImage(config()). NotFound says,
  // in one sentence, how to get it; Unavailable when Docker does not answer,
  // also without asking when `report` (this node's Doctor()) says so.
  absl::StatusOr<sandbox::AgentImage> Image(const probe::Report* report = nullptr) const;

  // The image `mojoup-node setup` offers to build: the default agent image,
  // when node.sandbox.image leaves it in use and the node's Docker lacks it;
  // nullopt for a custom image, one already there, or a Docker that does not
  // answer.
  std::optional<std::string> ImageToBuild() const;

  // Builds and tags the default agent image (sandbox::BuildAgentImage with
  // every pinned agent), reporting each step through `progress`.
  absl::StatusOr<sandbox::AgentImage> BuildImage(
      std::function<void(const sandbox::ImageStep&)> progress) const;

  // The policy of the repository holding `dir`, and the decision this node
  // would take now for the invoking user. `host`, "HOST[:PORT]" (port 443
  // when not given): also whether a session of `tool` may reach it.
  absl::StatusOr<Explanation> Explain(const std::string& dir, const std::string& tool = "",
                                      const std::string& host = "") const;
  // The same, with a live session's grants and denials when `request`
  // names one: each with its source ("session grant: approval 3, approved by
  // alice at T, scope session"), a "once" grant only until it is used; they
  // decide `host` where no rule of the policy does. InvalidArgument, in one
  // sentence, for a session that is not this node's, not running or does
  // not ask; its control socket is given a deadline.
  absl::StatusOr<Explanation> Explain(const ExplainRequest& request) const;

  // If a sandboxed session may have written the policy that decides `dir`
  // (see sandbox::PolicyWatch): the sentence saying what changed and when.
  std::optional<std::string> PolicyChanged(const std::string& dir) const;
  // The user says the policy of `dir`, as it is now, is theirs.
  absl::Status AcceptPolicy(const std::string& dir);

  // Checks the request, cleans up after dead sessions, probes, decides, and
  // starts the command: in a sandbox, or as an ordinary process when nobody
  // asks for one. Nothing runs until RunningCommand::Wait.
  absl::StatusOr<Launch> Start(RunRequest request);
  // Start, Wait with `stdio`, Close. FailedPrecondition when refused.
  absl::StatusOr<RunResult> Run(RunRequest request, const sandbox::Stdio& stdio = {});

  // The sessions on record, oldest first.
  absl::StatusOr<std::vector<sandbox::SessionRecord>> Sessions();
  // Ends a session from any process (see SessionManager::Stop).
  absl::StatusOr<sandbox::CloseReport> Stop(const std::string& id);
  // Cleans up after sessions whose owner is gone; an error when the runtime
  // cannot be reached at all (say, no `openshell`).
  absl::StatusOr<sandbox::ReapReport> Reap();

  absl::StatusOr<std::unique_ptr<RunningProxy>> StartProxy(ProxyRequest request) const;

  // The audit of session `id` on this node (sandbox::AuditPath), also after
  // the session ended: its lines with seq > `since`, checked as
  // sandbox::ReadAudit checks them. InvalidArgument when `id` is not 16
  // lowercase hex digits, or for a line that does not pass ("FILE:LINE:
  // ..."); NotFound when this node has no audit of the session.
  absl::StatusOr<std::vector<sandbox::AuditLine>> Audit(const std::string& id,
                                                        std::uint64_t since = 0) const;
  // Audit, then each line as the session writes it, until its end line, or
  // the session is gone from this node without one, or `on_line` returns
  // false, or `stop` (asked about once a second) says so.
  absl::Status FollowAudit(const std::string& id, std::uint64_t since,
                           const std::function<bool(const sandbox::AuditLine&)>& on_line,
                           std::function<bool()> stop = {}) const;
  // Ask, the operator's side (credproxy/approvals.h): the approvals of this
  // node's sessions that ask (all of them when `session` is empty), through
  // each session's control socket. NotFound for an unknown session,
  // FailedPrecondition for one that does not ask. With `after`, waits up to
  // `wait` (at most 60 s) for the session's approvals to change past it.
  absl::StatusOr<credproxy::ApprovalList> Approvals(
      const std::string& session = "", std::optional<std::uint64_t> after = std::nullopt,
      std::chrono::milliseconds wait = {}) const;
  // Approves or denies a session's approval; the approval as it now is.
  absl::StatusOr<credproxy::ApprovalInfo> DecideApproval(const std::string& session,
                                                         const std::string& id, bool approve,
                                                         credproxy::ApprovalScope scope,
                                                         const std::string& reason = "") const;

 private:
  struct State;
  explicit Node(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The image sessions start from: node.sandbox.image, else
// sandbox::DefaultAgentImage().
std::string SandboxImage(const policy::NodeConfig& config);

// One step of an image build as one line: "[2/7] download codex 0.171.0
// (41 MB) ..." as it starts, the same with " done in 3.2 s" when it is done.
std::string ImageStepLine(const sandbox::ImageStep& step);

// What the host probe needs from the node config: whether the runtime needs
// the OpenShell CLI and gateway (only openshell does), and where `openshell` is.
probe::ProbeOptions ProbeOptionsFor(const policy::NodeConfig& config);

// The decision's view of a probe verdict.
policy::Capability CapabilityOf(const probe::Verdict& verdict);

// `mojoup-node status --json`: {"schema": "mojoup.status/v1", "can_sandbox",
// "verdict", "image", "sessions": [...]}, where "image" is the sandbox image
// (Node::Image()) as sandbox::AgentImageToJson() writes it, or null when
// Docker lacks it or does not answer.
std::string StatusJson(const probe::Verdict& verdict,
                       const std::vector<sandbox::SessionRecord>& sessions,
                       const absl::StatusOr<sandbox::AgentImage>& image);
// `mojoup-node status`: the verdict's line, a line on the sandbox image, then
// a table of the sessions.
std::string StatusText(const probe::Verdict& verdict,
                       const std::vector<sandbox::SessionRecord>& sessions,
                       const absl::StatusOr<sandbox::AgentImage>& image);

}  // namespace mojoup

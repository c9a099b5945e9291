// Node::Start: from a run request to a started run, in a sandbox or not;
// Node::Run starts one and waits for it.
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <sstream>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "fmt/format.h"
#include "mojoup/internal/file_checks.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/internal/session_id.h"
#include "mojoup/internal/spawn.h"
#include "mojoup/policy/effective_policy.h"
#include "mojoup/policy/network_rules.h"
#include "node/node_state.h"

namespace mojoup {
namespace {

// The command in a sandbox: a session of the node's runtime.
class SandboxedRun : public RunningCommand {
 public:
  SandboxedRun(Notices notice, std::unique_ptr<sandbox::Session> session, bool terminal,
               bool drop_input)
      : notice_(std::move(notice)),
        session_(std::move(session)),
        terminal_(terminal),
        drop_input_(drop_input) {}
  ~SandboxedRun() override { Close(); }

  bool terminal() const override { return terminal_; }
  const sandbox::SessionRecord& record() const override { return session_->record(); }

  absl::StatusOr<int> Wait(sandbox::Stdio stdio) override {
    stdio.tty = terminal_;
    if (drop_input_) stdio.in = -1;
    // `run ... | head`: the command gets the SIGPIPE it would get in a
    // pipeline, and the session ends and is cleaned up as any other.
    if (!stdio.output_closed) {
      stdio.output_closed = [this] { session_->Signal(SIGPIPE).IgnoreError(); };
    }
    absl::StatusOr<int> code = session_->Run(stdio);
    if (!code.ok()) return NotPossible(code.status());
    return code;
  }
  absl::Status Signal(int signal) override { return session_->Signal(signal); }
  absl::Status Resize(unsigned short rows, unsigned short columns) override {
    return session_->Resize(rows, columns);
  }
  sandbox::CloseReport Close() override {
    if (closed_) return {};
    closed_ = true;
    sandbox::CloseReport report = session_->Close();
    notice_.Close(report);
    return report;
  }
  sandbox::SessionTally Tally() const override { return session_->Tally(); }

 private:
  Notices notice_;
  std::unique_ptr<sandbox::Session> session_;
  bool terminal_;
  bool drop_input_;
  bool closed_ = false;
};

// The command as an ordinary process: nobody asked for a sandbox.
class ProcessRun : public RunningCommand {
 public:
  ProcessRun(Notices notice, std::vector<std::string> command, std::string workdir)
      : notice_(std::move(notice)), command_(std::move(command)), workdir_(std::move(workdir)) {}

  bool terminal() const override { return false; }
  const sandbox::SessionRecord& record() const override { return record_; }

  absl::StatusOr<int> Wait(sandbox::Stdio stdio) override {
    internal::SpawnOptions options;
    options.argv = command_;
    options.environment = internal::CurrentEnvironment();
    options.in = internal::Stream::DescriptorOrNull(stdio.in);
    options.out = internal::Stream::Descriptor(stdio.out);
    options.err = internal::Stream::Descriptor(stdio.err);
    options.workdir = workdir_;
    auto child = internal::Spawn(options);
    if (!child.ok()) return NotStarted(child.status());
    {
      // Signals sent while it started are delivered now.
      absl::MutexLock lock(&mu_);
      pid_ = child->pid();
      for (int signal : pending_) kill(pid_, signal);
      pending_.clear();
    }
    const int code = child->Wait().ShellCode();
    absl::MutexLock done(&mu_);
    pid_ = -1;
    return code;
  }

  absl::Status Signal(int signal) override {
    absl::MutexLock lock(&mu_);
    if (pid_ == 0) {
      pending_.push_back(signal);  // delivered as soon as it runs
    } else if (pid_ > 0) {
      kill(pid_, signal);
    }
    return absl::OkStatus();
  }
  absl::Status Resize(unsigned short, unsigned short) override { return absl::OkStatus(); }
  sandbox::CloseReport Close() override { return {}; }

 private:
  // A command that did not start ends as a shell would end it: a program
  // that cannot be run is 127 when missing, else 126, and says why; a
  // working directory or descriptor that cannot be set up is 126. Only a
  // process that cannot be made at all is an error.
  absl::StatusOr<int> NotStarted(const absl::Status& status) {
    const int error = internal::SpawnErrno(status);
    if (internal::SpawnExecFailed(status)) {
      notice_(std::string(status.message()));
      return error == ENOENT ? 127 : 126;
    }
    if (absl::IsInternal(status)) {
      return absl::InternalError(fmt::format("cannot start a process: {}", std::strerror(error)));
    }
    return 126;
  }

  Notices notice_;
  std::vector<std::string> command_;
  std::string workdir_;
  sandbox::SessionRecord record_;
  absl::Mutex mu_;
  pid_t pid_ ABSL_GUARDED_BY(mu_) = 0;  // 0: not started; -1: ended
  std::vector<int> pending_ ABSL_GUARDED_BY(mu_);
};

// The user's git identity for the repository (its config, then the
// user's), as GIT_AUTHOR_* and GIT_COMMITTER_*: the session's home holds
// only the tool's sign-in, not ~/.gitconfig, and the image knows no name for
// the user's uid, so without it a commit in the session fails ("unable to
// auto-detect email address"). Only the identity crosses: a .gitconfig may
// hold credential helpers, tokens and commands.
std::map<std::string, std::string> GitIdentity(probe::CommandRunner* lent,
                                               const std::string& repo) {
  std::unique_ptr<probe::CommandRunner> own;
  if (lent == nullptr) own = probe::MakeSystemCommandRunner();
  probe::CommandRunner& commands = lent != nullptr ? *lent : *own;
  probe::CommandResult found =
      commands.Run({"git", "-C", repo, "config", "-z", "--get-regexp", R"(^user\.(name|email)$)"},
                   std::chrono::seconds(2));
  std::map<std::string, std::string> identity;
  if (!found.Succeeded()) return identity;
  // -z: each entry is KEY, a newline and the value, ended by a NUL, so a
  // value with a line break comes whole.
  std::istringstream entries(found.out);
  for (std::string entry; std::getline(entries, entry, '\0');) {
    const std::size_t newline = entry.find('\n');
    if (newline == std::string::npos || newline + 1 == entry.size()) continue;
    const std::string key = entry.substr(0, newline);
    const std::string value = entry.substr(newline + 1);
    const char* what = key == "user.name" ? "NAME" : key == "user.email" ? "EMAIL" : nullptr;
    if (what == nullptr) continue;
    // The last one wins, as in git.
    identity[fmt::format("GIT_AUTHOR_{}", what)] = value;
    identity[fmt::format("GIT_COMMITTER_{}", what)] = value;
  }
  return identity;
}

// The session's spec from the request: who runs what where, in which
// image, with the user's git identity; the request's command and
// environment move into it.
void FillSessionSpec(sandbox::SessionSpec& spec, RunRequest& request,
                     const policy::NodeConfig& config, const std::string& user,
                     const std::string& repo, const std::string& workdir,
                     const std::map<std::string, std::string>& identity) {
  spec.id = std::move(request.session_id);
  spec.user = user;
  spec.uid = getuid();
  spec.gid = getgid();
  spec.home = sandbox::UserHome();
  spec.repo = repo;
  spec.workdir = workdir;
  spec.tool = request.tool;
  spec.command = std::move(request.command);
  spec.image = SandboxImage(config);
  spec.cpus = policy::SandboxCpus(config);
  // --audit FILE: the session's audit lines, appended there too.
  spec.audit.mirror = request.audit_file;
  spec.audit.max_bytes = policy::AuditMaxBytes(config);
  // OpenShell's exec streams a terminal (its interactive exec, with window
  // changes) when asked for one and its stdin is a terminal.
  spec.tty = request.terminal;
  spec.environment = std::move(request.environment);
  if (const char* term = std::getenv("TERM"); spec.tty && term != nullptr) {
    spec.environment.emplace("TERM", term);
  }
  for (const auto& [name, value] : identity) {
    spec.environment.emplace(name, value);
  }
}

// The session's ask settings from the node config; each request held for an
// answer is told on `notice`, with the commands that answer it. Where the
// runtime's own proxy refuses at once (`refused_at_once`), the request was
// refused, not held, and a grant lasts for the session.
credproxy::ApprovalsOptions AskOptions(const policy::NodeConfig& config, const Notices& notice,
                                       bool refused_at_once) {
  const policy::AskSettings settings = policy::AskSettingsOf(config);
  credproxy::ApprovalsOptions options;
  options.hold = settings.hold;
  options.expiry = settings.expiry;
  options.max_pending = static_cast<std::size_t>(settings.max_pending);
  options.on_change = [notice, refused_at_once](const credproxy::Approval& approval) {
    if (approval.state != credproxy::ApprovalState::kPending) return;
    if (refused_at_once) {
      notice(fmt::format(
          "the agent was refused {}:{} (approval {}); answer with `mojoup-node approve {} {} "
          "--scope session`, after which its retry passes, or `mojoup-node deny {} {}`",
          approval.host, approval.port, approval.id, approval.session, approval.id,
          approval.session, approval.id));
      return;
    }
    notice(
        fmt::format("the agent asks to reach {}:{} (approval {}); answer with `mojoup-node "
                    "approve {} {} [--scope session]` or `mojoup-node deny {} {}`",
                    approval.host, approval.port, approval.id, approval.session, approval.id,
                    approval.session, approval.id));
  };
  return options;
}

}  // namespace

absl::StatusOr<Launch> Node::Start(RunRequest request) {
  State& node = *state_;
  if (request.command.empty()) return absl::InvalidArgumentError("give the command to run");
  if (absl::Status tool = CheckTool(request.tool); !tool.ok()) return tool;
  if (!request.session_id.empty() && !internal::IsRandomHex(request.session_id)) {
    return absl::InvalidArgumentError(
        fmt::format("session id \"{}\": expected 16 lowercase hex digits", request.session_id));
  }
  std::string workdir;
  auto found = node.RepositoryOf(request.workdir, workdir);
  if (!found.ok()) return found.status();
  const std::string repo = *found;
  if (absl::Status state = internal::CheckPrivateDir(node.state_dir, "the node's state directory");
      !state.ok() && !absl::IsNotFound(state)) {
    return state;
  }
  auto effective = node.TrustedPolicy(repo, workdir, request.accept_policy);
  if (!effective.ok()) return effective.status();

  // Everything the sandbox needs is checked before anything is started.
  sandbox::SessionSpec spec;
  spec.proxy.rules = policy::NetworkRules::Build(*effective, request.tool);
  if (absl::Status inputs =
          AddProxyInputs(node.config, request.credentials, request.resolve, request.upstream_ca,
                         request.audit_file, node.options.getenv, spec.proxy);
      !inputs.ok()) {
    return inputs;
  }

  const std::string user = policy::CurrentUserName();
  // The probe, the user's git identity and the reaping of earlier sessions'
  // leftovers go side by side.
  auto probing = std::async(std::launch::async, [&node] { return node.Probe(); });
  auto identity = std::async(std::launch::async,
                             [&node, &repo] { return GitIdentity(node.options.commands, repo); });
  auto manager = node.Manager();
  if (manager.ok()) node.ReapWith(**manager);
  probe::Report report = probing.get();
  Launch launch;
  launch.decision = policy::Decide(CapabilityOf(report.verdict), node.config, *effective, user);
  node.notice(launch.decision.reason);
  using Result = policy::SandboxDecision::Result;
  if (launch.decision.result == Result::kRefused) return launch;
  if (launch.decision.result == Result::kUnsandboxed) {
    launch.run = std::make_unique<ProcessRun>(node.notice, std::move(request.command), workdir);
    return launch;
  }

  if (!manager.ok()) return manager.status();
  const sandbox::Backend& runtime = **node.Runtime();
  if (runtime.NeedsSupervisor() && node.supervisor.empty()) {
    return absl::FailedPreconditionError(
        "mojoup-sandbox-init is not installed beside mojoup-node (bin/ or ../libexec/mojoup/); "
        "reinstall mojoup-node");
  }
  FillSessionSpec(spec, request, node.config, user, repo, workdir, identity.get());
  absl::Status fits = runtime.CheckCommand(spec.workdir, spec.environment, spec.command);
  if (!fits.ok()) return fits;  // the caller's to change, before any session exists
  if (const policy::AskDecision ask = policy::DecideAsk(node.config, *effective); ask.on) {
    // A runtime whose own proxy owns its sandboxes' egress (OpenShell's)
    // refuses a request outside the list at once: the operator is asked
    // after, and the agent's retry passes once approved.
    spec.ask = AskOptions(node.config, node.notice, runtime.RefusesEgressItself());
  } else if (policy::ProxyAskOn(node.config) &&
             (effective->ask.value || effective->ask.source.level != policy::Level::kDefault)) {
    // The node would ask, and a policy had its say: which one kept it off.
    node.notice(ask.why);
  }
  const std::string tool = request.tool;
  // The runtime tells which credentials it could not carry.
  spec.notice = [&node](const std::string& sentence) { node.notice(sentence); };
  const bool terminal = spec.tty;
  const std::string image = spec.image;
  auto session = (*manager)->Start(std::move(spec));
  if (!session.ok()) {
    // A runtime may word a missing image its own way (OpenShell's would pull
    // one from a registry): for the default image, which only `image build`
    // makes, one sentence on how to get it says more.
    if (!runtime.ExplainsMissingImage() && image == sandbox::DefaultAgentImage()) {
      if (absl::Status held = Image().status(); absl::IsNotFound(held)) {
        return absl::FailedPreconditionError(held.message());
      }
    }
    return NotPossible(session.status());
  }
  if (const auto& staged = (*session)->record().sign_in;
      staged && staged->files.empty() && !staged->missing.empty()) {
    node.notice(fmt::format(
        "no {} sign-in file on this host (looked for {}{}); the agent starts signed out", tool,
        staged->missing.front(), staged->missing.size() > 1 ? " and others" : ""));
  }
  // A runtime that cannot stream a terminal's input to a command without a
  // terminal gives it none, and says so.
  const std::string input_limit = runtime.TerminalInputLimit();
  const bool drop_input = !input_limit.empty() && request.terminal_input && !terminal;
  if (drop_input) node.notice(input_limit);
  launch.run =
      std::make_unique<SandboxedRun>(node.notice, *std::move(session), terminal, drop_input);
  return launch;
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

}  // namespace mojoup

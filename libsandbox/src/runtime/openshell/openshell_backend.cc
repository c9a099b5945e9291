#include "mojoup/sandbox/openshell_backend.h"

#include <signal.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "mojoup/sandbox/openshell_policy.h"
#include "runtime/openshell/codex_config.h"
#include "runtime/openshell/openshell_cli.h"
#include "runtime/openshell/openshell_exec.h"
#include "runtime/openshell/openshell_host.h"
#include "runtime/openshell/openshell_logs.h"
#include "runtime/openshell/openshell_remote.h"
#include "runtime/openshell/openshell_translate.h"

namespace mojoup::sandbox {
namespace {

using probe::SemVer;

// "/home" of "/home/alice/src/project".
std::string TopDirectory(const std::string& path) { return path.substr(0, path.find('/', 1)); }

// The session's steps, in OpenShell's terms: the CLI driver (OpenShellCli)
// runs each call, the translation (openshell_translate.h, openshell_policy.h)
// says what the session becomes, and the host side (openshell_host.h)
// checks the gateway's address and writes the session's files.
class OpenShellBackend final : public Backend {
 public:
  explicit OpenShellBackend(OpenShellBackendOptions options)
      : options_(std::move(options)), cli_(options_) {}

  std::string_view name() const override { return "openshell"; }

  std::string ProxyListen() const override {
    return ReachesProxy() ? options_.bridge_gateway + ":0" : std::string();
  }
  // No ProxyAddressInside: OpenShell sets its own proxy variables in the
  // sandbox, and ours would only mislead. API traffic reaches our proxy
  // through base URLs instead.

  // Without a terminal exec reads stdin whole before the command starts, but
  // never a terminal's.
  std::string TerminalInputLimit() const override {
    return "the openshell runtime streams input only to a command on a terminal; with output "
           "redirected the command gets none (pipe or redirect a file instead)";
  }

  absl::Status CheckCommand(const std::string& workdir,
                            const std::map<std::string, std::string>& environment,
                            const std::vector<std::string>& command) const override {
    return PlanOpenShellExec(workdir, environment, command, OpenShellStageDir()).status();
  }

  absl::StatusOr<std::string> Create(const SandboxSpec& spec) override {
    if (absl::Status checked = CheckSpec(spec); !checked.ok()) return checked;
    const std::string name = OpenShellSandboxName(spec.session);
    OpenShellPolicyOptions policy = OpenShellPolicyOptionsFor(spec, options_);
    if (!ReachesProxy()) policy.proxy_port = 0;
    if (options_.remote) {
      // The copy is written where nothing is yet, and OpenShell's Landlock
      // (hard_requirement) refuses a path that does not exist when a
      // command starts: the sandbox may write under the top directories of
      // the repository and the home, which the image must have (its
      // filesystem is the pod's own; nothing of this node is in it).
      policy.repo = TopDirectory(spec.repo);
      policy.home = TopDirectory(spec.home);
      // And the workspace, where what comes back is packed: the only place
      // `sandbox download` takes from (v0.0.111 crates/openshell-core/src/
      // driver_mounts.rs DEFAULT_WORKSPACE_ROOT, the Kubernetes driver's).
      policy.writable = {"/sandbox"};
    }
    if (absl::Status fits = CheckExecFits(spec, policy.proxy_port); !fits.ok()) return fits;
    TellCredentialMode(spec);
    auto policy_file = WriteOpenShellPolicy(spec, policy);
    if (!policy_file.ok()) return policy_file.status();
    auto providers = CreateProviders(spec, name);
    if (!providers.ok()) return providers.status();
    if (absl::Status made = CreateSandbox(spec, name, *policy_file, providers->names); !made.ok()) {
      return made;
    }
    if (absl::Status started = CheckStarted(name); !started.ok()) return started;
    if (absl::Status reached = CheckProxyReachable(name); !reached.ok()) return reached;
    auto environment = CommandEnvironment(spec, providers->variables, policy.proxy_port);
    if (!environment.ok()) {
      Remove(name).IgnoreError();
      return environment.status();
    }
    if (options_.remote) {
      auto copy = SendRepository(cli_, name, spec, options_.gateway);
      if (!copy.ok()) {
        Remove(name).IgnoreError();
        return copy.status();
      }
      std::lock_guard lock(copies_mu_);
      copies_[name] = *std::move(copy);
    }
    environment_[name] = *std::move(environment);
    workdir_[name] = spec.workdir;
    command_[name] = spec.command;
    return name;
  }

  absl::StatusOr<int> Run(const std::string& sandbox, const Stdio& stdio) override {
    return cli_.Exec(sandbox, workdir_[sandbox], environment_[sandbox], command_[sandbox], stdio);
  }

  absl::Status Signal(const std::string& sandbox, int signal) override {
    return cli_.SignalCommand(sandbox, signal);
  }

  absl::Status Resize(const std::string&, unsigned short, unsigned short) override {
    // With a terminal the CLI's interactive exec reads the size from the
    // terminal it shares with us and forwards it on SIGWINCH.
    if (pid_t pid = cli_.running(); pid > 0) ::kill(pid, SIGWINCH);
    return absl::OkStatus();
  }

  // OpenShell's sandbox proxy refuses what its policy does not list, at
  // once; its refusals reach the gateway's log, and `policy update` adds to
  // a live sandbox's policy.
  bool RefusesEgressItself() const override { return true; }

  absl::StatusOr<EgressRefusals> NewRefusals(const std::string& sandbox) override {
    auto output = cli_.SandboxLogs(sandbox, kLogLines, kLogTimeout);
    if (!output.ok()) return output.status();
    OpenShellDenialReader::Read read;
    {
      std::lock_guard lock(readers_mu_);
      read = readers_[sandbox].Next(*output, kLogLines);
    }
    EgressRefusals found;
    for (OpenShellDenial& denial : read.denials) {
      const bool policy = denial.engine == "opa";
      found.refusals.push_back({.method = std::move(denial.method),
                                .host = std::move(denial.host),
                                .port = denial.port,
                                .path = std::move(denial.path),
                                .by = "openshell",
                                // The error its 403 names (proxy.rs).
                                .code = policy ? "policy_denied" : "ssrf_denied",
                                .reason = std::move(denial.reason),
                                .program = denial.program == "-" ? "" : denial.program,
                                .unlisted = policy});
    }
    if (read.gap) {
      found.missed = fmt::format(
          "OpenShell's log of {} held {} new lines at once, so refusals before them may be "
          "missing",
          sandbox, kLogLines);
    }
    return found;
  }

  absl::StatusOr<std::string> AllowEgress(const std::string& sandbox, const std::string& host,
                                          std::uint16_t port) override {
    auto done = cli_.AddEndpoint(sandbox, host, port, kGrantWait);
    if (!done.ok()) return done.status();
    return fmt::format("OpenShell's policy for {} now allows {}:{} ({})", sandbox, host, port,
                       done->empty() ? "it said nothing more" : *done);
  }

  absl::StatusOr<std::string> BringBack(const std::string& sandbox) override {
    std::optional<RemoteCopy> copy;
    {
      std::lock_guard lock(copies_mu_);
      if (auto found = copies_.find(sandbox); found != copies_.end()) copy = found->second;
    }
    // A sandbox this process did not fill (a reaped one) has nothing of
    // ours to bring back that we could check against.
    if (!copy) return std::string();
    auto said = BringBackRepository(cli_, sandbox, *copy, options_.gateway);
    if (said.ok()) {
      std::lock_guard lock(copies_mu_);
      copies_.erase(sandbox);
    }
    return said;
  }

  absl::Status Remove(const std::string& sandbox) override {
    {
      std::lock_guard lock(readers_mu_);
      readers_.erase(sandbox);
    }
    {
      std::lock_guard lock(copies_mu_);
      copies_.erase(sandbox);
    }
    if (absl::Status deleted = cli_.DeleteSandbox(sandbox); !deleted.ok()) return deleted;
    return RemoveProviders(sandbox);
  }

  absl::StatusOr<std::vector<SandboxInfo>> List(
      const std::map<std::string, std::string>& labels) override {
    auto found = cli_.ListSandboxes(labels);
    if (!found.ok()) return found.status();
    // A session cut short between its providers and its sandbox left only
    // providers: they are found under the sandbox name they were made for,
    // so removing that name removes them.
    if (auto session = labels.find(std::string(kSessionLabel));
        session != labels.end() && found->empty() &&
        options_.version >= kOpenShellProviderEndpoints) {
      const std::string name = OpenShellSandboxName(session->second);
      auto providers = cli_.ProvidersOf(name);
      if (!providers.ok()) return providers.status();
      if (!providers->empty()) {
        SandboxInfo info;
        info.id = name;
        info.session = session->second;
        info.labels = labels;
        found->push_back(std::move(info));
      }
    }
    return found;
  }

 private:
  // Create's steps, in order.

  absl::Status CheckSpec(const SandboxSpec& spec) const {
    if (absl::Status user = CheckOpenShellUser(spec.uid, spec.gid, options_.version); !user.ok()) {
      return user;
    }
    if (spec.rules == nullptr)
      return absl::InvalidArgumentError("no network rules for the sandbox");
    if (spec.repo.empty() || spec.home.empty()) {
      return absl::InvalidArgumentError("the sandbox spec names no repository and home");
    }
    return absl::OkStatus();
  }

  // What the command's exec cannot carry, even staged, is refused before
  // anything is made. Its environment here still holds what providers
  // would take over, so it is never smaller than the exec's.
  static absl::Status CheckExecFits(const SandboxSpec& spec, std::uint16_t proxy_port) {
    return PlanOpenShellExec(spec.workdir, OpenShellCommandEnvironment(spec, {}, proxy_port),
                             spec.command, OpenShellStageDir())
        .status();
  }

  absl::Status CreateSandbox(const SandboxSpec& spec, const std::string& name,
                             const std::string& policy_file,
                             const std::vector<std::string>& providers) {
    // A remote gateway gets no `docker` block: it would drop it without a
    // word (v0.0.111 crates/openshell-server/src/compute/mod.rs
    // select_driver_config), and nothing of this node can be bound there.
    OpenShellCreate create{
        .name = name,
        .image = spec.image,
        .policy_file = policy_file,
        .labels = spec.labels,
        .providers = providers,
        .driver_config = options_.remote ? std::string() : OpenShellDriverConfig(spec.mounts)};
    create.labels[std::string(kSessionLabel)] = spec.session;
    absl::Status created = cli_.CreateSandbox(create);
    if (created.ok()) return created;
    // A pod that cannot be scheduled, or a volume that is never bound, keeps
    // a sandbox provisioning: the create's deadline ends the wait.
    std::optional<std::string> phase;
    if (absl::IsDeadlineExceeded(created)) phase = cli_.SandboxPhase(name);
    absl::Status removed = Remove(name);  // whatever half of it exists
    if (!absl::IsDeadlineExceeded(created)) return created;
    return absl::DeadlineExceededError(fmt::format(
        "the OpenShell sandbox {} on {} was not ready within {} s (phase {}: a pod that cannot be "
        "scheduled or a volume that is not bound stays provisioning); {}",
        name, GatewayWords(options_.gateway),
        std::chrono::duration_cast<std::chrono::seconds>(options_.create_timeout).count(),
        phase.value_or("unknown"),
        removed.ok()
            ? "it was deleted"
            : fmt::format("it could not be deleted ({})", std::string(removed.message()))));
  }

  // The main process (`sleep infinity`) never ends on its own: Error, or
  // from 0.1.x Completed (NVIDIA/OpenShell#2884), means the sandbox is gone.
  absl::Status CheckStarted(const std::string& name) {
    const std::optional<std::string> phase = cli_.SandboxPhase(name);
    if (!phase || (*phase != "Error" && *phase != "Completed")) return absl::OkStatus();
    Remove(name).IgnoreError();
    return absl::UnavailableError(fmt::format(
        "the OpenShell sandbox {} went into phase {} as it started; see `openshell logs {}`", name,
        *phase, name));
  }

  // Sandboxes reach our proxy at host.openshell.internal: on a local
  // gateway always, on a remote one only at an address the operator gave.
  bool ReachesProxy() const { return !options_.remote || options_.host_address_configured; }

  // `run` says how the session's keys reach their APIs.
  void TellCredentialMode(const SandboxSpec& spec) const {
    if (!spec.notice || spec.credentials.empty()) return;
    if (ReachesProxy()) {
      spec.notice(fmt::format(
          "Credentials: through this node's proxy at {} by base URL, and OpenShell's providers "
          "for keys no base URL carries; the sandbox holds stand-ins only",
          options_.bridge_gateway));
      return;
    }
    spec.notice(fmt::format(
        "Credentials: OpenShell's providers only, in {}'s store; the base-URL mode is off because "
        "its sandboxes cannot reach this node (set node.sandbox.openshell_host_address to an "
        "address they route back to, to turn it on)",
        GatewayWords(options_.gateway)));
  }

  absl::Status CheckProxyReachable(const std::string& name) {
    if (!options_.host_address_of || options_.remote) return absl::OkStatus();
    absl::Status reached = CheckOpenShellHostAddress(
        options_.host_address_of(name), options_.bridge_gateway, options_.host_address_configured);
    if (!reached.ok()) Remove(name).IgnoreError();
    return reached;
  }

  static absl::StatusOr<std::map<std::string, std::string>> CommandEnvironment(
      const SandboxSpec& spec, const std::vector<std::string>& provided, std::uint16_t proxy_port) {
    std::map<std::string, std::string> environment =
        OpenShellCommandEnvironment(spec, provided, proxy_port);
    if (proxy_port != 0 && spec.tool == "codex") {
      absl::Status written = WriteCodexConfig(spec, OpenShellProxyUrl(proxy_port));
      if (!written.ok()) return written;
    }
    return environment;
  }

  struct Providers {
    std::vector<std::string> names;      // --provider NAME for the create
    std::vector<std::string> variables;  // the credentials they carry
  };

  // Sentences for the user when the gateway cannot hold `wanted` safely;
  // none when it can.
  std::vector<std::string> ProvidersRefused(const std::vector<const SandboxCredential*>& wanted) {
    std::vector<std::string> told;
    // The gateway and its sandboxes' supervisor resolve the placeholders:
    // the older of the CLI and the gateway decides.
    std::optional<SemVer> gateway = cli_.GatewayVersion();
    if (!gateway) {
      for (const SandboxCredential* credential : wanted) {
        told.push_back(fmt::format(
            "the OpenShell gateway did not say its version, so {} cannot be handed to one of its "
            "providers; the sandbox gets a stand-in for it only",
            credential->name));
      }
      return told;
    }
    const SemVer oldest = std::min(*gateway, options_.version);
    if (oldest < kOpenShellProviderEndpoints) {
      for (const SandboxCredential* credential : wanted) {
        told.push_back(fmt::format(
            "OpenShell {} would place {} on any host, not only on {}, so the sandbox gets a "
            "stand-in for it only; upgrade OpenShell to {} or later",
            oldest.ToString(), credential->name, absl::StrJoin(credential->hosts, ", "),
            kOpenShellProviderEndpoints.ToString()));
      }
    }
    return told;
  }

  // OpenShell's providers carry the credentials the session's proxy cannot
  // (Copilot's and OpenCode's keys, a GitHub token for an agent's git): one
  // provider per profile, named <sandbox>-<profile>, holding the
  // real values. The sandbox gets OpenShell's placeholders. A credential no
  // profile carries safely keeps its stand-in, and the user is told.
  absl::StatusOr<Providers> CreateProviders(const SandboxSpec& spec, const std::string& name) {
    Providers made;
    std::vector<const SandboxCredential*> wanted;
    for (const SandboxCredential& credential : spec.credentials) {
      if (!ReachesProxy() || !OpenShellProxyCarries(spec.tool, credential.name)) {
        wanted.push_back(&credential);
      }
    }
    if (wanted.empty()) return made;
    auto tell = [&spec](const std::string& text) {
      if (spec.notice) spec.notice(text);
    };
    if (std::vector<std::string> refused = ProvidersRefused(wanted); !refused.empty()) {
      for (const std::string& text : refused) tell(text);
      return made;
    }
    auto profiles = cli_.ProviderProfiles();
    if (!profiles.ok()) return profiles.status();
    std::map<std::string, std::vector<const SandboxCredential*>> by_profile;
    for (const SandboxCredential* credential : wanted) {
      const OpenShellProviderProfile* profile =
          OpenShellProfileFor(*profiles, *credential, *spec.rules);
      if (profile == nullptr) {
        tell(fmt::format(
            "OpenShell has no provider profile that places {} only on {} and only on hosts the "
            "policy allows, so the sandbox gets a stand-in for it only; import one with "
            "`openshell provider profile import`",
            credential->name, absl::StrJoin(credential->hosts, ", ")));
        continue;
      }
      by_profile[profile->id].push_back(credential);
    }
    for (const auto& [profile, credentials] : by_profile) {
      const std::string provider = name + "-" + profile;
      if (absl::Status created = cli_.CreateProvider(provider, profile, credentials);
          !created.ok()) {
        RemoveProviders(name).IgnoreError();
        return created;
      }
      made.names.push_back(provider);
      for (const SandboxCredential* credential : credentials) {
        made.variables.push_back(credential->name);
      }
    }
    return made;
  }

  // The providers of the sandbox, created by this or an earlier process.
  absl::Status RemoveProviders(const std::string& sandbox) {
    if (options_.version < kOpenShellProviderEndpoints) return absl::OkStatus();
    auto providers = cli_.ProvidersOf(sandbox);
    if (!providers.ok()) return providers.status();
    if (providers->empty()) return absl::OkStatus();
    return cli_.DeleteProviders(sandbox, *providers);
  }

  // How much of the gateway's log each read asks for, how long it may take,
  // and how long a grant may wait for the sandbox to load it.
  static constexpr int kLogLines = 200;
  static constexpr std::chrono::seconds kLogTimeout{5};
  static constexpr std::chrono::seconds kGrantWait{30};

  OpenShellBackendOptions options_;
  OpenShellCli cli_;
  std::mutex readers_mu_;
  std::map<std::string, OpenShellDenialReader> readers_;  // by sandbox
  std::map<std::string, std::map<std::string, std::string>> environment_;
  std::map<std::string, std::string> workdir_;
  std::map<std::string, std::vector<std::string>> command_;
  std::mutex copies_mu_;
  std::map<std::string, RemoteCopy> copies_;  // by sandbox, on a remote gateway
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> MakeOpenShellBackend(OpenShellBackendOptions options) {
  if (options.version < kMinOpenShellForSessions) {
    return absl::FailedPreconditionError(fmt::format(
        "OpenShell {} has no `status -o json` and `sandbox get -o json`, which sessions read; "
        "sessions need {} or later",
        options.version.ToString(), kMinOpenShellForSessions.ToString()));
  }
  if (options.bridge_gateway.empty() && !options.remote) {
    return absl::FailedPreconditionError(
        "no address for host.openshell.internal, so sandboxes could not reach the credential "
        "proxy; start the OpenShell gateway with its Docker driver, or set "
        "node.sandbox.openshell_host_address");
  }
  return std::unique_ptr<Backend>(new OpenShellBackend(std::move(options)));
}

}  // namespace mojoup::sandbox

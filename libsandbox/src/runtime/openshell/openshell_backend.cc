#include "mojoup/sandbox/openshell_backend.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <thread>

#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "fmt/format.h"
#include "mojoup/internal/bounded_json.h"
#include "mojoup/internal/host_port.h"
#include "mojoup/policy/tool_profiles.h"
#include "mojoup/sandbox/openshell_policy.h"

extern char** environ;

namespace mojoup::sandbox {
namespace {

using probe::CommandResult;
using probe::SemVer;

// What openshell prints with -o json is read as far as its runner keeps it.
constexpr internal::JsonBounds kCommandJson{.max_bytes = probe::kMaxCommandOutput};

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// validate_label_value (v0.0.111 crates/openshell-server/src/grpc/validation.rs):
// empty, or at most 63 of [A-Za-z0-9-_.] that start and end alphanumeric.
bool ValidLabelValue(const std::string& value) {
  if (value.empty()) return true;
  if (value.size() > 63 || !IsAlnum(value.front()) || !IsAlnum(value.back())) return false;
  for (char c : value) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// Sandbox names are DNS-1123 labels of at most 19 characters from v0.0.88
// (v0.0.111 crates/openshell-server/src/grpc/validation.rs validate_sandbox_spec,
// MAX_ROUTABLE_NAME_LEN in grpc/mod.rs). "mojoup-" leaves 12: the session id's
// first 12 when it is lowercase hex (the default ids), else 12 of its SHA-256.
std::string SandboxName(const std::string& session) {
  bool hex = session.size() >= 12;
  for (char c : session) hex = hex && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  return "mojoup-" + (hex ? session.substr(0, 12) : Sha256Hex(session).substr(0, 12));
}

// Whether the session's proxy carries `variable` for `tool`: a plain command
// reaches any bound host through MOJOUP_PROXY_URL; a tool with a base-URL
// setting gets a base URL for every variable some tool's base URL serves
// (OpenShellBaseUrls); Copilot and OpenCode have none, and their keys go to
// providers.
bool ProxyCarries(std::string_view tool, std::string_view variable) {
  if (tool.empty()) return true;
  const policy::ToolProfile* own = policy::FindToolProfile(tool);
  if (own == nullptr || own->base_url_variable.empty()) return false;
  for (const policy::ToolProfile& profile : policy::ToolProfiles()) {
    if (profile.base_url_variable.empty()) continue;
    for (const policy::ApiKeyVariable& key : profile.api_key_variables) {
      if (key.name == variable) return true;
    }
  }
  return false;
}

// One of `openshell provider list-profiles -o json` (v0.0.111
// crates/openshell-providers/src/profiles.rs ProviderTypeProfile, serialized
// by profiles_to_json): the env_vars of its credentials and its endpoints.
struct ProviderProfile {
  std::string id;
  std::vector<std::string> variables;
  std::vector<std::string> hosts;
  std::vector<std::uint16_t> ports;  // each endpoint's, 443 when it names none
};

std::vector<ProviderProfile> ParseProfiles(const std::string& json) {
  std::vector<ProviderProfile> profiles;
  rapidjson::Document doc;
  if (!internal::ParseBoundedJson(json, doc, "the provider profiles", kCommandJson).ok() ||
      !doc.IsArray()) {
    return profiles;
  }
  for (const auto& item : doc.GetArray()) {
    if (!item.IsObject() || !item.HasMember("id") || !item["id"].IsString()) continue;
    ProviderProfile profile;
    profile.id = item["id"].GetString();
    if (item.HasMember("credentials") && item["credentials"].IsArray()) {
      for (const auto& credential : item["credentials"].GetArray()) {
        if (!credential.IsObject() || !credential.HasMember("env_vars") ||
            !credential["env_vars"].IsArray()) {
          continue;
        }
        for (const auto& variable : credential["env_vars"].GetArray()) {
          if (variable.IsString()) profile.variables.push_back(variable.GetString());
        }
      }
    }
    if (item.HasMember("endpoints") && item["endpoints"].IsArray()) {
      for (const auto& endpoint : item["endpoints"].GetArray()) {
        if (endpoint.IsObject() && endpoint.HasMember("host") && endpoint["host"].IsString()) {
          profile.hosts.push_back(endpoint["host"].GetString());
          const bool has_port = endpoint.HasMember("port") && endpoint["port"].IsUint() &&
                                endpoint["port"].GetUint() > 0 &&
                                endpoint["port"].GetUint() < 65536;
          profile.ports.push_back(has_port ? static_cast<std::uint16_t>(endpoint["port"].GetUint())
                                           : 443);
        }
      }
    }
    profiles.push_back(std::move(profile));
  }
  return profiles;
}

// The profile that may carry `credential`: it names the variable, has
// endpoints, and every endpoint is a host the credential is bound to and
// one the policy allows, so OpenShell never places the key anywhere our
// policy would not send it. A gateway with providers_v2_enabled also opens
// a profile's endpoints to the sandbox (compose_effective_policy, v0.0.92
// and v0.0.111 crates/openshell-server/src/grpc/policy.rs): they are never
// more than the policy allows.
const ProviderProfile* ProfileFor(const std::vector<ProviderProfile>& profiles,
                                  const SandboxCredential& credential,
                                  const policy::NetworkRules& rules) {
  for (const ProviderProfile& profile : profiles) {
    if (profile.hosts.empty() || std::find(profile.variables.begin(), profile.variables.end(),
                                           credential.name) == profile.variables.end()) {
      continue;
    }
    bool inside = true;
    for (std::size_t i = 0; i < profile.hosts.size(); ++i) {
      const std::string& host = profile.hosts[i];
      inside = inside &&
               std::find(credential.hosts.begin(), credential.hosts.end(), host) !=
                   credential.hosts.end() &&
               rules.RuleOn(host, profile.ports[i]).allowed;
    }
    if (inside) return &profile;
  }
  return nullptr;
}

// Where the command's process id is kept inside the sandbox, for `stop`.
constexpr std::string_view kCommandPidFile = "/tmp/.mojoup-command.pid";

// The shell the session's command runs under. OpenShell's exec passes no
// signal on: the CLI forwards none and ExecSandboxInput carries only start,
// stdin and resize (v0.0.111 crates/openshell-cli/src/run.rs,
// proto/openshell.proto). And it reports a command a signal killed as exit 1
// (crates/openshell-supervisor-process/src/ssh.rs, status.code()
// .unwrap_or(1)). So the command runs as the child of a shell that stays:
// the child leaves its pid where Signal finds it, then becomes the command;
// the shell exits as sh reports the command's end, 128 + the signal for one
// that killed it. The shell's traps keep it alive through a signal meant for
// the command (a terminal's ^C reaches both) and, being traps, are not
// inherited; its own stderr, where it would print "Terminated", is
// /dev/null, while the command's is the session's.
std::string CommandWrapper() {
  return fmt::format(
      "trap : INT TERM HUP QUIT; exec 3>&2 2>/dev/null; "
      "/bin/sh -c 'exec 2>&3 3>&-; echo $$ > {}; exec \"$@\"' sh \"$@\"",
      kCommandPidFile);
}

std::string Selector(const std::map<std::string, std::string>& labels) {
  std::string selector;
  for (const auto& [name, value] : labels) {
    if (!selector.empty()) selector += ',';
    selector += name + "=" + OpenShellLabelValue(value);
  }
  return selector;
}

std::string DriverConfig(const std::vector<BindMount>& mounts) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("docker");
  w.StartObject();
  w.Key("mounts");
  w.StartArray();
  for (const BindMount& mount : mounts) {
    w.StartObject();
    w.Key("type");
    w.String("bind");
    w.Key("source");
    w.String(mount.source);
    w.Key("target");
    w.String(mount.target);
    w.Key("read_only");
    w.Bool(mount.read_only);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  w.EndObject();
  return buffer.GetString();
}

class OpenShellBackend final : public Backend {
 public:
  explicit OpenShellBackend(OpenShellBackendOptions options) : options_(std::move(options)) {
    if (options_.commands == nullptr) own_runner_ = probe::MakeSystemCommandRunner();
    runner_ = options_.commands != nullptr ? options_.commands : own_runner_.get();
  }

  std::string_view name() const override { return "openshell"; }

  std::string ProxyListen() const override { return options_.bridge_gateway + ":0"; }
  // No ProxyAddressInside: OpenShell sets its own proxy variables in the
  // sandbox, and ours would only mislead. API traffic reaches our proxy
  // through base URLs instead.

  // Without a terminal exec reads stdin whole before the command starts, but
  // never a terminal's.
  std::string TerminalInputLimit() const override {
    return "the openshell runtime streams input only to a command on a terminal; with output "
           "redirected the command gets none (pipe or redirect a file instead)";
  }

  absl::StatusOr<std::string> Create(const SandboxSpec& spec) override {
    if (absl::Status checked = CheckSpec(spec); !checked.ok()) return checked;
    const std::string name = SandboxName(spec.session);
    const OpenShellPolicyOptions policy = PolicyOptionsFor(spec);
    auto policy_file = WritePolicy(spec, policy);
    if (!policy_file.ok()) return policy_file.status();
    auto providers = CreateProviders(spec, name);
    if (!providers.ok()) return providers.status();
    if (absl::Status made = CreateSandbox(spec, name, *policy_file, providers->names); !made.ok()) {
      return made;
    }
    if (absl::Status started = CheckStarted(name); !started.ok()) return started;
    if (absl::Status reached = CheckProxyReachable(name); !reached.ok()) return reached;
    auto environment = CommandEnvironment(spec, providers->variables, policy.proxy_port);
    if (!environment.ok()) return environment.status();
    environment_[name] = *std::move(environment);
    workdir_[name] = spec.workdir;
    command_[name] = spec.command;
    return name;
  }

  absl::StatusOr<int> Run(const std::string& sandbox, const Stdio& stdio) override {
    // With a terminal on stdin, `--tty` is OpenShell's interactive exec: input
    // and window changes stream.
    std::vector<std::string> argv = {
        options_.path, "sandbox",        "exec", "-n", sandbox, stdio.tty ? "--tty" : "--no-tty",
        "--workdir",   workdir_[sandbox]};
    // Without it exec runs `/bin/bash -lc`, which sources the login files of
    // the image and the staged home (v0.0.111
    // crates/openshell-supervisor-process/src/ssh.rs).
    if (options_.version >= kOpenShellNoLoginShell) argv.push_back("--no-login-shell");
    for (const auto& [name, value] : environment_[sandbox]) {
      argv.push_back("--env");
      argv.push_back(name + "=" + value);
    }
    argv.insert(argv.end(), {"--", "/bin/sh", "-c", CommandWrapper(), "sh"});
    argv.insert(argv.end(), command_[sandbox].begin(), command_[sandbox].end());

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    const int in = stdio.in >= 0 ? stdio.in : null_fd;
    posix_spawn_file_actions_adddup2(&actions, in, 0);
    posix_spawn_file_actions_adddup2(&actions, stdio.out >= 0 ? stdio.out : null_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, stdio.err >= 0 ? stdio.err : null_fd, 2);
    // The CLI starts it with the session's signals blocked (they are read by
    // one thread); the exec must get them, and its own defaults.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none;
    sigemptyset(&none);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGPIPE}) {
      sigaddset(&defaults, signal);
    }
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<char*> args;
    for (std::string& arg : argv) args.push_back(arg.data());
    args.push_back(nullptr);
    pid_t pid = 0;
    int rc = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), environ);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    if (null_fd >= 0) ::close(null_fd);
    if (rc != 0) {
      return absl::UnavailableError(
          fmt::format("cannot run {}: {}", options_.path, std::strerror(rc)));
    }
    running_ = pid;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    running_ = 0;
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
  }

  absl::Status Signal(const std::string& sandbox, int signal) override {
    // Not to the CLI, which passes no signal on (see CommandWrapper) and
    // whose end leaves the command running: to the command, by the pid it
    // left, from a second exec. Signalling every process (`kill -1`) would
    // end the sandbox's main process too, which leaves the sandbox in phase
    // Error. A command just starting may not have left its pid yet: wait
    // for it, up to 5 seconds.
    std::vector<std::string> argv = {options_.path, "sandbox", "exec", "-n", sandbox, "--no-tty"};
    if (options_.version >= kOpenShellNoLoginShell) argv.push_back("--no-login-shell");
    argv.insert(argv.end(), {"--", "/bin/sh", "-c",
                             fmt::format("i=0; while [ ! -s {0} ] && [ $i -lt 50 ]; do sleep 0.1; "
                                         "i=$((i+1)); done; kill -{1} \"$(cat {0})\"",
                                         kCommandPidFile, signal)});
    CommandResult sent = runner_->Run(argv, options_.call_timeout);
    if (sent.Succeeded()) return absl::OkStatus();
    return Explain("signal the command in the sandbox " + sandbox, sent);
  }

  absl::Status Resize(const std::string&, unsigned short, unsigned short) override {
    // With a terminal the CLI's interactive exec reads the size from the
    // terminal it shares with us and forwards it on SIGWINCH.
    if (pid_t pid = running_; pid > 0) ::kill(pid, SIGWINCH);
    return absl::OkStatus();
  }

  absl::Status Remove(const std::string& sandbox) override {
    CommandResult deleted =
        runner_->Run({options_.path, "sandbox", "delete", sandbox}, options_.call_timeout);
    if (!deleted.Succeeded() && !(deleted.outcome == CommandResult::Outcome::kExited &&
                                  deleted.err.find("not found") != std::string::npos)) {
      return Explain("delete the sandbox " + sandbox, deleted);
    }
    return RemoveProviders(sandbox);
  }

  absl::StatusOr<std::vector<SandboxInfo>> List(
      const std::map<std::string, std::string>& labels) override {
    CommandResult listed = runner_->Run(
        {options_.path, "sandbox", "list", "--selector", Selector(labels), "-o", "json"},
        options_.call_timeout);
    if (!listed.Succeeded()) return Explain("list sandboxes", listed);
    rapidjson::Document doc;
    if (!internal::ParseBoundedJson(listed.out, doc, "the sandbox list", kCommandJson).ok() ||
        !doc.IsArray()) {
      return absl::InternalError("`openshell sandbox list -o json` did not print a JSON array");
    }
    std::vector<SandboxInfo> found;
    for (const auto& item : doc.GetArray()) {
      if (!item.IsObject() || !item.HasMember("name") || !item["name"].IsString()) continue;
      SandboxInfo info;
      info.id = item["name"].GetString();
      if (item.HasMember("labels") && item["labels"].IsObject()) {
        for (const auto& label : item["labels"].GetObject()) {
          if (label.value.IsString()) info.labels[label.name.GetString()] = label.value.GetString();
        }
      }
      info.session = info.labels[std::string(kSessionLabel)];
      info.running = item.HasMember("phase") && item["phase"].IsString() &&
                     std::string_view(item["phase"].GetString()) == "Ready";
      found.push_back(std::move(info));
    }
    // A session cut short between its providers and its sandbox left only
    // providers: they are found under the sandbox name they were made for,
    // so removing that name removes them.
    if (auto session = labels.find(std::string(kSessionLabel));
        session != labels.end() && found.empty() &&
        options_.version >= kOpenShellProviderEndpoints) {
      const std::string name = SandboxName(session->second);
      auto providers = ProvidersOf(name);
      if (!providers.ok()) return providers.status();
      if (!providers->empty()) {
        SandboxInfo info;
        info.id = name;
        info.session = session->second;
        info.labels = labels;
        found.push_back(std::move(info));
      }
    }
    return found;
  }

 private:
  // Create's steps, in order.

  absl::Status CheckSpec(const SandboxSpec& spec) const {
    if (absl::Status user = CheckUser(spec.uid, spec.gid); !user.ok()) return user;
    if (spec.rules == nullptr)
      return absl::InvalidArgumentError("no network rules for the sandbox");
    if (spec.repo.empty() || spec.home.empty()) {
      return absl::InvalidArgumentError("the sandbox spec names no repository and home");
    }
    return absl::OkStatus();
  }

  OpenShellPolicyOptions PolicyOptionsFor(const SandboxSpec& spec) const {
    OpenShellPolicyOptions policy;
    policy.repo = spec.repo;
    policy.home = spec.home;
    // The policy grants the repository, the home and /tmp itself.
    for (const std::string& dir : spec.writable) {
      if (dir != spec.repo && dir != spec.home && dir != "/tmp") policy.writable.push_back(dir);
    }
    policy.uid = spec.uid;
    policy.gid = spec.gid;
    if (auto proxy = internal::SplitHostPort(spec.proxy_address, 0)) {
      policy.proxy_port = proxy->port;
    }
    if (options_.version < kOpenShellHostAliasAllowed) {
      policy.proxy_allowed_ip = options_.bridge_gateway;
    }
    return policy;
  }

  // The session's rules as OpenShell's policy file, in the session's
  // directory; returns its path.
  static absl::StatusOr<std::string> WritePolicy(const SandboxSpec& spec,
                                                 const OpenShellPolicyOptions& policy) {
    OpenShellPolicy translated = TranslateToOpenShell(*spec.rules, policy);
    // Refused here, before anything exists, rather than by the gateway
    // with an InvalidArgument that names no rule of ours.
    if (!translated.refused.empty()) return absl::InvalidArgumentError(translated.refused);
    const std::string policy_file = spec.session_dir + "/openshell-policy.yaml";
    std::ofstream file(policy_file, std::ios::trunc);
    file << translated.yaml;
    if (!file) return absl::PermissionDeniedError(fmt::format("cannot write {}", policy_file));
    return policy_file;
  }

  absl::Status CreateSandbox(const SandboxSpec& spec, const std::string& name,
                             const std::string& policy_file,
                             const std::vector<std::string>& providers) {
    std::vector<std::string> argv = {options_.path,
                                     "sandbox",
                                     "create",
                                     "--name",
                                     name,
                                     "--from",
                                     QualifiedImageReference(spec.image),
                                     "--policy",
                                     policy_file};
    std::map<std::string, std::string> labels = spec.labels;
    labels[std::string(kSessionLabel)] = spec.session;
    for (const auto& [label, value] : labels) {
      argv.push_back("--label");
      argv.push_back(label + "=" + OpenShellLabelValue(value));
    }
    for (const std::string& provider : providers) {
      argv.push_back("--provider");
      argv.push_back(provider);
    }
    argv.push_back("--driver-config-json");
    argv.push_back(DriverConfig(spec.mounts));
    // The main process must outlive every exec.
    if (options_.version < kOpenShellCreateCommandIsMain) {
      argv.insert(argv.end(), {"--", "true"});
    } else {
      argv.insert(argv.end(), {"--detach", "--", "sleep", "infinity"});
    }
    CommandResult created = runner_->Run(argv, options_.create_timeout);
    if (created.Succeeded()) return absl::OkStatus();
    Remove(name).IgnoreError();  // whatever half of it exists
    return Explain("create the sandbox", created);
  }

  // The main process (`sleep infinity`) never ends on its own: Error, or
  // from 0.1.x Completed (NVIDIA/OpenShell#2884), means the sandbox is gone.
  absl::Status CheckStarted(const std::string& name) {
    CommandResult got =
        runner_->Run({options_.path, "sandbox", "get", name, "-o", "json"}, options_.call_timeout);
    rapidjson::Document doc;
    if (!got.Succeeded() ||
        !internal::ParseBoundedJson(got.out, doc, "the sandbox", kCommandJson).ok() ||
        !doc.IsObject() || !doc.HasMember("phase") || !doc["phase"].IsString()) {
      return absl::OkStatus();
    }
    const std::string_view phase = doc["phase"].GetString();
    if (phase != "Error" && phase != "Completed") return absl::OkStatus();
    Remove(name).IgnoreError();
    return absl::UnavailableError(fmt::format(
        "the OpenShell sandbox {} went into phase {} as it started; see `openshell logs {}`", name,
        phase, name));
  }

  // The driver maps host.openshell.internal per gateway (host_gateway_ip,
  // host-gateway): the proxy listens where the bridge's gateway is, so a
  // sandbox that would look elsewhere cannot reach it.
  absl::Status CheckProxyReachable(const std::string& name) {
    if (!options_.host_address_of) return absl::OkStatus();
    std::optional<std::string> mapped = options_.host_address_of(name);
    // `host-gateway` is the daemon's own host address, which only the
    // operator can name: a configured address is taken on trust.
    const bool trusted = options_.host_address_configured && mapped == "host-gateway";
    if (!mapped || *mapped == options_.bridge_gateway || trusted) return absl::OkStatus();
    Remove(name).IgnoreError();
    in_addr address{};
    const bool ip = inet_pton(AF_INET, mapped->c_str(), &address) == 1;
    return absl::FailedPreconditionError(fmt::format(
        "OpenShell maps {} to \"{}\" in its sandboxes, not to {} where the credential proxy "
        "listens; {}",
        kOpenShellHostAlias, *mapped, options_.bridge_gateway,
        ip ? fmt::format("set node.sandbox.openshell_host_address to {} (the gateway's "
                         "host_gateway_ip) and run again",
                         *mapped)
           : "set node.sandbox.openshell_host_address to an address of this host that the "
             "sandboxes reach"));
  }

  // What the command's exec gets: the session's environment, with
  // OpenShell's placeholders for what its providers carry and base URLs that
  // reach our proxy (at proxy_port of host.openshell.internal; 0: none).
  static absl::StatusOr<std::map<std::string, std::string>> CommandEnvironment(
      const SandboxSpec& spec, const std::vector<std::string>& provided, std::uint16_t proxy_port) {
    std::map<std::string, std::string> environment = spec.environment;
    // A provider's credential is OpenShell's placeholder in the sandbox; our
    // stand-in would hide it.
    for (const std::string& variable : provided) environment.erase(variable);
    // OpenShell's proxy terminates TLS, and its supervisor points the child
    // at its own CA bundle through SSL_CERT_FILE, REQUESTS_CA_BUNDLE,
    // CURL_CA_BUNDLE, GIT_SSL_CAINFO, NODE_EXTRA_CA_CERTS and DENO_CERT
    // (crates/openshell-supervisor-process/src/child_env.rs, v0.0.111). Exec
    // puts `--env` pairs before the command as K=V, so ours would win
    // (build_remote_exec_command, crates/openshell-server/src/grpc/sandbox.rs)
    // and every HTTPS host would fail its certificate check. Our proxy's CA
    // is of no use here: the sandbox reaches it only by plain-http base URLs.
    for (std::string_view name : policy::kCommonCaVariables) environment.erase(std::string(name));
    for (std::string_view name : policy::kExtraCaVariables) environment.erase(std::string(name));
    for (const policy::ToolProfile& profile : policy::ToolProfiles()) {
      for (std::string_view name : profile.ca_variables) environment.erase(std::string(name));
    }
    if (proxy_port == 0) return environment;
    const std::string proxy = fmt::format("http://{}:{}", kOpenShellHostAlias, proxy_port);
    // Not for a provider's credential: its placeholder resolves only on its
    // profile's endpoints, never at our proxy.
    const auto urls = OpenShellBaseUrls(proxy, spec.tool, environment);
    for (const auto& [variable, url] : urls) environment[variable] = url;
    // For anything else: $MOJOUP_PROXY_URL/<host>/<path> reaches https://<host>/<path>.
    environment["MOJOUP_PROXY_URL"] = proxy;
    if (spec.tool == "codex") {
      if (absl::Status written = WriteCodexConfig(spec, proxy); !written.ok()) return written;
    }
    return environment;
  }

  // The policy runs the command as the user's uid and primary gid, and a
  // release refuses a numeric id below its MIN_SANDBOX_UID for either
  // (run_as_user and run_as_group alike: crates/openshell-policy/src/lib.rs,
  // 1000 at v0.0.92 to v0.0.109, 1 from v0.0.110).
  absl::Status CheckUser(uid_t uid, gid_t gid) const {
    if (uid == 0) {
      return absl::FailedPreconditionError(
          "OpenShell does not run sandboxes as root (uid 0); run mojoup-node as the user whose "
          "agent it is");
    }
    const SemVer needed = uid >= 1000 ? kOpenShellNumericUser : kOpenShellAnyUser;
    if (options_.version < needed) {
      return absl::FailedPreconditionError(
          fmt::format("OpenShell {} cannot run a sandbox as uid {}; that needs {} or later",
                      options_.version.ToString(), uid, needed.ToString()));
    }
    if (gid == 0) {
      return absl::FailedPreconditionError(
          "OpenShell does not run sandboxes with primary group gid 0 (root); run mojoup-node "
          "under a primary group of its own");
    }
    if (gid < 1000 && options_.version < kOpenShellAnyUser) {
      return absl::FailedPreconditionError(fmt::format(
          "OpenShell {} cannot run a sandbox with primary group gid {} (below 1000); that needs "
          "{} or later, or a primary group of 1000 or above",
          options_.version.ToString(), gid, kOpenShellAnyUser.ToString()));
    }
    return absl::OkStatus();
  }

  // The gateway's own version, from `status -o json` (v0.0.111
  // crates/openshell-cli/src/commands/gateway.rs: `version` when connected).
  std::optional<SemVer> GatewayVersion() {
    CommandResult status =
        runner_->Run({options_.path, "status", "-o", "json"}, options_.call_timeout);
    if (!status.Succeeded()) return std::nullopt;
    rapidjson::Document doc;
    if (!internal::ParseBoundedJson(status.out, doc, "the gateway's status", kCommandJson).ok() ||
        !doc.IsObject() || !doc.HasMember("version") || !doc["version"].IsString()) {
      return std::nullopt;
    }
    return probe::ParseSemVer(doc["version"].GetString());
  }

  struct Providers {
    std::vector<std::string> names;      // --provider NAME for the create
    std::vector<std::string> variables;  // the credentials they carry
  };

  // OpenShell's providers carry the credentials the session's proxy cannot
  // (Copilot's and OpenCode's keys, a GitHub token for an agent's git): one
  // provider per profile, named <sandbox>-<profile>, holding the
  // real values, which reach the CLI through its environment (never its
  // command line). The sandbox gets OpenShell's placeholders. A credential no
  // profile carries safely keeps its stand-in, and the user is told.
  absl::StatusOr<Providers> CreateProviders(const SandboxSpec& spec, const std::string& name) {
    Providers made;
    std::vector<const SandboxCredential*> wanted;
    for (const SandboxCredential& credential : spec.credentials) {
      if (!ProxyCarries(spec.tool, credential.name)) wanted.push_back(&credential);
    }
    if (wanted.empty()) return made;
    auto tell = [&spec](const std::string& text) {
      if (spec.notice) spec.notice(text);
    };
    // The gateway and its sandboxes' supervisor resolve the placeholders:
    // the older of the CLI and the gateway decides.
    std::optional<SemVer> gateway = GatewayVersion();
    if (!gateway) {
      for (const SandboxCredential* credential : wanted) {
        tell(fmt::format(
            "the OpenShell gateway did not say its version, so {} cannot be handed to one of its "
            "providers; the sandbox gets a stand-in for it only",
            credential->name));
      }
      return made;
    }
    const SemVer oldest = std::min(*gateway, options_.version);
    if (oldest < kOpenShellProviderEndpoints) {
      for (const SandboxCredential* credential : wanted) {
        tell(fmt::format(
            "OpenShell {} would place {} on any host, not only on {}, so the sandbox gets a "
            "stand-in for it only; upgrade OpenShell to {} or later",
            oldest.ToString(), credential->name, absl::StrJoin(credential->hosts, ", "),
            kOpenShellProviderEndpoints.ToString()));
      }
      return made;
    }
    CommandResult listed = runner_->Run({options_.path, "provider", "list-profiles", "-o", "json"},
                                        options_.call_timeout);
    if (!listed.Succeeded()) return Explain("list its provider profiles", listed);
    const std::vector<ProviderProfile> profiles = ParseProfiles(listed.out);
    std::map<std::string, std::vector<const SandboxCredential*>> by_profile;
    for (const SandboxCredential* credential : wanted) {
      const ProviderProfile* profile = ProfileFor(profiles, *credential, *spec.rules);
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
      std::vector<std::string> argv = {options_.path, "provider", "create", "--name",
                                       provider,      "--type",   profile};
      std::vector<std::string> environment;
      for (const SandboxCredential* credential : credentials) {
        argv.insert(argv.end(), {"--credential", credential->name});
        environment.push_back(credential->name + "=" + credential->value);
      }
      CommandResult created = runner_->RunWithEnvironment(argv, environment, options_.call_timeout);
      if (!created.Succeeded()) {
        RemoveProviders(name).IgnoreError();
        return Explain(fmt::format("create the provider {}", provider), created);
      }
      made.names.push_back(provider);
      for (const SandboxCredential* credential : credentials) {
        made.variables.push_back(credential->name);
      }
    }
    return made;
  }

  // The providers of the sandbox NAME (<NAME>-<profile>), created by this or
  // an earlier process: every page of `provider list --names` (100 a page
  // by default, v0.0.111 main.rs ProviderCommands::List).
  absl::StatusOr<std::vector<std::string>> ProvidersOf(const std::string& sandbox) {
    constexpr int kPage = 100;
    constexpr int kMaxPages = 1000;
    std::vector<std::string> names;
    const std::string prefix = sandbox + "-";
    for (int page = 0; page < kMaxPages; ++page) {
      CommandResult listed =
          runner_->Run({options_.path, "provider", "list", "--names", "--limit",
                        std::to_string(kPage), "--offset", std::to_string(page * kPage)},
                       options_.call_timeout);
      if (!listed.Succeeded()) return Explain("list its providers", listed);
      int lines = 0;
      std::size_t start = 0;
      while (start < listed.out.size()) {
        std::size_t end = listed.out.find('\n', start);
        if (end == std::string::npos) end = listed.out.size();
        std::string line = listed.out.substr(start, end - start);
        start = end + 1;
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (line.empty()) continue;
        ++lines;
        if (line.rfind(prefix, 0) == 0) names.push_back(line);
      }
      if (lines < kPage) return names;
    }
    return absl::ResourceExhaustedError(fmt::format(
        "OpenShell lists more than {} providers; the providers of {} could not all be looked for",
        kPage * kMaxPages, sandbox));
  }

  absl::Status RemoveProviders(const std::string& sandbox) {
    if (options_.version < kOpenShellProviderEndpoints) return absl::OkStatus();
    auto providers = ProvidersOf(sandbox);
    if (!providers.ok()) return providers.status();
    if (providers->empty()) return absl::OkStatus();
    std::vector<std::string> argv = {options_.path, "provider", "delete"};
    argv.insert(argv.end(), providers->begin(), providers->end());
    // A provider still attached to a sandbox being deleted is refused
    // (v0.0.111 grpc/provider.rs): try again until the call's deadline.
    const auto deadline = std::chrono::steady_clock::now() + options_.call_timeout;
    for (;;) {
      CommandResult deleted = runner_->Run(argv, options_.call_timeout);
      if (deleted.Succeeded()) return absl::OkStatus();
      if (deleted.err.find("attached to sandbox") == std::string::npos ||
          std::chrono::steady_clock::now() >= deadline) {
        return Explain("delete the providers of " + sandbox, deleted);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  // Codex takes its base URL from config.toml (openai_base_url), not the
  // environment. The file goes into the session's staging home, which is the
  // sandbox's home, unless the staging already has one.
  static absl::Status WriteCodexConfig(const SandboxSpec& spec, const std::string& proxy) {
    for (const BindMount& mount : spec.mounts) {
      if (mount.target != spec.home) continue;
      const std::string dir = mount.source + "/.codex";
      const std::string file = dir + "/config.toml";
      if (::access(file.c_str(), F_OK) == 0) return absl::OkStatus();
      ::mkdir(dir.c_str(), 0700);
      std::ofstream out(file, std::ios::trunc);
      out << "# Written by mojoup-node: API calls go through the session's credential proxy.\n"
          << "openai_base_url = \"" << proxy << "/api.openai.com/v1\"\n";
      if (!out) return absl::PermissionDeniedError(fmt::format("cannot write {}", file));
      return absl::OkStatus();
    }
    return absl::OkStatus();
  }

  absl::Status Explain(const std::string& what, const CommandResult& result) const {
    if (result.outcome == CommandResult::Outcome::kTimedOut) {
      return absl::DeadlineExceededError(fmt::format(
          "OpenShell did not {} in time; is the gateway healthy (`openshell status`)?", what));
    }
    if (result.outcome == CommandResult::Outcome::kNotStarted) {
      return absl::UnavailableError(
          fmt::format("cannot run {}: {}", options_.path, std::strerror(result.spawn_error)));
    }
    const std::string said = OpenShellErrorMessage(result.err.empty() ? result.out : result.err);
    if (std::optional<std::string> refusal = probe::ExplainGatewayRefusal(said)) {
      if (!refusal->empty() && refusal->back() == '.') refusal->pop_back();
      return absl::FailedPreconditionError(*refusal);
    }
    if (said.find("authenticat") != std::string::npos ||
        said.find("Unauthenticated") != std::string::npos) {
      return absl::PermissionDeniedError(fmt::format(
          "OpenShell could not {}: the gateway refused our credentials; sign in again ({})", what,
          said));
    }
    if (said.find("onnect") != std::string::npos || said.find("unreachable") != std::string::npos) {
      return absl::UnavailableError(
          fmt::format("OpenShell could not {}: the gateway is not reachable ({}); start it with "
                      "`systemctl --user start openshell-gateway`",
                      what, said));
    }
    return absl::UnavailableError(fmt::format("OpenShell could not {}: {}", what,
                                              said.empty() ? "it printed nothing" : said));
  }

  OpenShellBackendOptions options_;
  std::unique_ptr<probe::CommandRunner> own_runner_;  // when none is lent
  probe::CommandRunner* runner_;
  std::map<std::string, std::map<std::string, std::string>> environment_;
  std::map<std::string, std::string> workdir_;
  std::map<std::string, std::vector<std::string>> command_;
  std::atomic<pid_t> running_{0};
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> MakeOpenShellBackend(OpenShellBackendOptions options) {
  if (options.version < kMinOpenShellForSessions) {
    return absl::FailedPreconditionError(fmt::format(
        "OpenShell {} has no `status -o json` and `sandbox get -o json`, which sessions read; "
        "sessions need {} or later",
        options.version.ToString(), kMinOpenShellForSessions.ToString()));
  }
  if (options.bridge_gateway.empty()) {
    return absl::FailedPreconditionError(
        "no address for host.openshell.internal, so sandboxes could not reach the credential "
        "proxy; start the OpenShell gateway with its Docker driver, or set "
        "node.sandbox.openshell_host_address");
  }
  return std::unique_ptr<Backend>(new OpenShellBackend(std::move(options)));
}

std::string OpenShellLabelValue(const std::string& value) {
  if (ValidLabelValue(value)) return value;
  return "h" + Sha256Hex(value).substr(0, 16);
}

std::string QualifiedImageReference(const std::string& image) {
  std::string name = image;
  std::string digest;
  if (auto at = name.find('@'); at != std::string::npos) {
    digest = name.substr(at);
    name.resize(at);
  }
  const auto slash = name.find('/');
  const std::string first = name.substr(0, slash);
  const bool registry =
      slash != std::string::npos && (first.find('.') != std::string::npos ||
                                     first.find(':') != std::string::npos || first == "localhost");
  if (!registry) name = (slash == std::string::npos ? "docker.io/library/" : "docker.io/") + name;
  const auto last_slash = name.rfind('/');
  if (digest.empty() && name.find(':', last_slash) == std::string::npos) name += ":latest";
  return name + digest;
}

namespace {

// Rust's Debug form of a string, from the opening quote: its text, and where
// it ended (npos when it did not).
std::string Unquote(std::string_view text, std::size_t& end) {
  std::string out;
  for (std::size_t i = 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      end = i;
      return out;
    }
    if (c != '\\' || i + 1 >= text.size()) {
      out += c;
      continue;
    }
    const char next = text[++i];
    out += next == 'n' ? '\n' : next == 't' ? '\t' : next == 'r' ? '\r' : next;
  }
  end = std::string_view::npos;
  return out;
}

// A line of a miette report without its frame: "Error:", "×"/"x", "│"/"|",
// "├─▶"/"╰─▶"/"`->"/"|->" and the indentation.
std::string_view Unframed(std::string_view line) {
  auto starts = [&line](std::string_view prefix) {
    if (line.substr(0, prefix.size()) != prefix) return false;
    line.remove_prefix(prefix.size());
    return true;
  };
  bool more = true;
  while (more) {
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    more = starts("Error:") || starts("×") || starts("│") || starts("├─▶") || starts("╰─▶") ||
           starts("`->") || starts("|->") || starts("|") || starts("x ");
  }
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
  return line;
}

}  // namespace

std::string OpenShellErrorMessage(std::string_view text) {
  // miette wraps at 80 columns at spaces: the report's lines, unframed and
  // joined with a space, are the message again. Its "help:" lines are advice
  // about the CLI, not the error.
  std::string joined;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = Unframed(text.substr(start, end - start));
    start = end + 1;
    if (line.empty()) continue;
    if (line.substr(0, 5) == "help:") break;
    if (!joined.empty()) joined += ' ';
    joined += line;
  }
  // A gateway's refusal is a tonic Status: keep its message.
  // tonic 0.14 (v0.0.111 Cargo.lock): `code: '<description>', message: "..."`;
  // earlier: `status: <Code>, message: "...", details: ...`.
  if (auto at = joined.find("message: \""); at != std::string::npos) {
    std::size_t end = 0;
    std::string message = Unquote(std::string_view(joined).substr(at + 9), end);
    if (!message.empty()) return message;
  }
  return joined;
}

std::map<std::string, std::string> OpenShellBaseUrls(
    const std::string& proxy, const std::string& tool,
    const std::map<std::string, std::string>& environment) {
  std::map<std::string, std::string> urls;
  for (const policy::ToolProfile& profile : policy::ToolProfiles()) {
    if (profile.base_url_variable.empty()) continue;
    bool wanted = profile.name == tool;
    for (const policy::ApiKeyVariable& key : profile.api_key_variables) {
      wanted = wanted || environment.count(std::string(key.name)) > 0;
    }
    if (wanted) {
      urls[std::string(profile.base_url_variable)] =
          fmt::format("{}/{}", proxy, profile.base_url_upstream);
    }
  }
  return urls;
}

}  // namespace mojoup::sandbox

#include "runtime/openshell/openshell_cli.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <thread>

#include "fmt/format.h"
#include "mojoup/internal/atomic_file.h"
#include "mojoup/internal/fd.h"
#include "mojoup/internal/json_codec.h"
#include "mojoup/internal/sha256.h"
#include "mojoup/internal/spawn.h"
#include "mojoup/probe/openshell_cli.h"
#include "runtime/openshell/openshell_exec.h"

namespace mojoup::sandbox {
namespace {

namespace json = internal::json;
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

// What is read of the CLI's JSON. Its answer is not ours to refuse: an entry
// of another shape is skipped (json::OrNull), a member of another type is as
// if absent (Lenient).
struct ProfileEndpoint {
  std::string host;
  std::uint16_t port = 0;  // 0: none named
};
struct ProfileCredential {
  std::vector<std::optional<std::string>> env_vars;
};
struct ListedProfile {
  std::string id;
  std::vector<std::optional<ProfileCredential>> credentials;
  std::vector<std::optional<ProfileEndpoint>> endpoints;
};
struct ListedSandbox {
  std::string name;
  std::map<std::string, std::optional<std::string>> labels;
  std::string phase;
};
struct SandboxGot {
  std::string phase;
};
struct GatewayStatus {
  std::string version;
};

constexpr auto kListedProfile = json::OrNull<ListedProfile>(json::Message<ListedProfile>(
    json::Field("id", &ListedProfile::id),
    json::Optional("credentials", &ListedProfile::credentials,
                   json::OrNull<ProfileCredential>(json::Message<ProfileCredential>(json::Field(
                       "env_vars", &ProfileCredential::env_vars, json::OrNull<std::string>()))))
        .Lenient(),
    json::Optional("endpoints", &ListedProfile::endpoints,
                   json::OrNull<ProfileEndpoint>(json::Message<ProfileEndpoint>(
                       json::Field("host", &ProfileEndpoint::host),
                       json::Optional("port", &ProfileEndpoint::port).Lenient())))
        .Lenient()));
constexpr auto kListedSandbox = json::OrNull<ListedSandbox>(json::Message<ListedSandbox>(
    json::Field("name", &ListedSandbox::name),
    json::Optional("labels", &ListedSandbox::labels, json::OrNull<std::string>()).Lenient(),
    json::Optional("phase", &ListedSandbox::phase).Lenient()));
constexpr auto kSandboxGot = json::Message<SandboxGot>(json::Field("phase", &SandboxGot::phase));
constexpr auto kGatewayStatus =
    json::Message<GatewayStatus>(json::Field("version", &GatewayStatus::version));

// The JSON a command printed, read with `codec`; nullopt when it failed or
// printed something of another shape.
template <typename T, typename Codec>
std::optional<T> ReadOutput(const CommandResult& result, const Codec& codec,
                            std::string_view what) {
  if (!result.Succeeded()) return std::nullopt;
  auto read = json::Parse<T>(result.out, codec, what, kCommandJson);
  if (!read.ok()) return std::nullopt;
  return *std::move(read);
}

std::string Selector(const std::map<std::string, std::string>& labels) {
  std::string selector;
  for (const auto& [name, value] : labels) {
    if (!selector.empty()) selector += ',';
    selector += name + "=" + OpenShellLabelValue(value);
  }
  return selector;
}

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

// Sandbox names are DNS-1123 labels of at most 19 characters from v0.0.88
// (v0.0.111 crates/openshell-server/src/grpc/validation.rs validate_sandbox_spec,
// MAX_ROUTABLE_NAME_LEN in grpc/mod.rs). "mojoup-" leaves 12: the session id's
// first 12 when it is lowercase hex (the default ids), else 12 of its SHA-256.
std::string OpenShellSandboxName(const std::string& session) {
  bool hex = session.size() >= 12;
  for (char c : session) hex = hex && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  return "mojoup-" + (hex ? session.substr(0, 12) : internal::Sha256Hex(session).substr(0, 12));
}

OpenShellCli::OpenShellCli(const OpenShellBackendOptions& options)
    : path_(options.path),
      gateway_(options.gateway),
      version_(options.version),
      create_timeout_(options.create_timeout),
      call_timeout_(options.call_timeout) {
  if (options.commands == nullptr) own_runner_ = probe::MakeSystemCommandRunner();
  runner_ = options.commands != nullptr ? options.commands : own_runner_.get();
}

// `-g NAME` is a global flag of the CLI (v0.0.111 crates/openshell-cli/src/
// main.rs Cli::gateway, `global = true`): first, before the command.
std::vector<std::string> OpenShellCli::Argv(std::initializer_list<std::string> words) const {
  std::vector<std::string> argv = {path_};
  if (!gateway_.empty()) argv.insert(argv.end(), {"-g", gateway_});
  argv.insert(argv.end(), words.begin(), words.end());
  return argv;
}

absl::Status OpenShellCli::CreateSandbox(const OpenShellCreate& create) {
  std::vector<std::string> argv =
      Argv({"sandbox", "create", "--name", create.name, "--from",
            QualifiedImageReference(create.image), "--policy", create.policy_file});
  for (const auto& [label, value] : create.labels) {
    argv.push_back("--label");
    argv.push_back(label + "=" + OpenShellLabelValue(value));
  }
  for (const std::string& provider : create.providers) {
    argv.push_back("--provider");
    argv.push_back(provider);
  }
  if (!create.driver_config.empty()) {
    argv.push_back("--driver-config-json");
    argv.push_back(create.driver_config);
  }
  // The main process must outlive every exec.
  if (version_ < kOpenShellCreateCommandIsMain) {
    argv.insert(argv.end(), {"--", "true"});
  } else {
    argv.insert(argv.end(), {"--detach", "--", "sleep", "infinity"});
  }
  // The CLI waits for Ready for OPENSHELL_PROVISION_TIMEOUT seconds (v0.0.111
  // crates/openshell-cli/src/run.rs sandbox_create): it is told our deadline,
  // so it gives up first and says so.
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(create_timeout_).count();
  CommandResult created = runner_->RunWithEnvironment(
      argv, {fmt::format("OPENSHELL_PROVISION_TIMEOUT={}", std::max<long long>(1, seconds))},
      create_timeout_ + std::chrono::seconds(10));
  if (created.Succeeded()) return absl::OkStatus();
  if (created.err.find("provisioning timed out") != std::string::npos) {
    created.outcome = CommandResult::Outcome::kTimedOut;
  }
  return Explain("create the sandbox", created);
}

std::optional<std::string> OpenShellCli::SandboxPhase(const std::string& name) {
  CommandResult got = runner_->Run(Argv({"sandbox", "get", name, "-o", "json"}), call_timeout_);
  auto read = ReadOutput<SandboxGot>(got, kSandboxGot, "the sandbox");
  if (!read) return std::nullopt;
  return read->phase;
}

absl::Status OpenShellCli::DeleteSandbox(const std::string& name) {
  CommandResult deleted = runner_->Run(Argv({"sandbox", "delete", name}), call_timeout_);
  if (!deleted.Succeeded() && !(deleted.outcome == CommandResult::Outcome::kExited &&
                                deleted.err.find("not found") != std::string::npos)) {
    return Explain("delete the sandbox " + name, deleted);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SandboxInfo>> OpenShellCli::ListSandboxes(
    const std::map<std::string, std::string>& labels) {
  CommandResult listed = runner_->Run(
      Argv({"sandbox", "list", "--selector", Selector(labels), "-o", "json"}), call_timeout_);
  if (!listed.Succeeded()) return Explain("list sandboxes", listed);
  auto items = ReadOutput<std::vector<std::optional<ListedSandbox>>>(listed, kListedSandbox,
                                                                     "the sandbox list");
  if (!items) {
    return absl::InternalError("`openshell sandbox list -o json` did not print a JSON array");
  }
  std::vector<SandboxInfo> found;
  for (const auto& item : *items) {
    if (!item) continue;
    SandboxInfo info;
    info.id = item->name;
    for (const auto& [name, value] : item->labels) {
      if (value) info.labels[name] = *value;
    }
    info.session = info.labels[std::string(kSessionLabel)];
    info.running = item->phase == "Ready";
    found.push_back(std::move(info));
  }
  return found;
}

// v0.0.111 crates/openshell-cli/src/commands/gateway.rs: `version` when
// connected.
std::optional<SemVer> OpenShellCli::GatewayVersion() {
  CommandResult status = runner_->Run(Argv({"status", "-o", "json"}), call_timeout_);
  auto read = ReadOutput<GatewayStatus>(status, kGatewayStatus, "the gateway's status");
  if (!read) return std::nullopt;
  return probe::ParseSemVer(read->version);
}

absl::StatusOr<std::vector<OpenShellProviderProfile>> OpenShellCli::ProviderProfiles() {
  CommandResult listed =
      runner_->Run(Argv({"provider", "list-profiles", "-o", "json"}), call_timeout_);
  if (!listed.Succeeded()) return Explain("list its provider profiles", listed);
  std::vector<OpenShellProviderProfile> profiles;
  auto items = ReadOutput<std::vector<std::optional<ListedProfile>>>(listed, kListedProfile,
                                                                     "the provider profiles");
  for (const auto& item : items.value_or(std::vector<std::optional<ListedProfile>>{})) {
    if (!item) continue;
    OpenShellProviderProfile& profile = profiles.emplace_back();
    profile.id = item->id;
    for (const auto& credential : item->credentials) {
      if (!credential) continue;
      for (const auto& variable : credential->env_vars) {
        if (variable) profile.variables.push_back(*variable);
      }
    }
    for (const auto& endpoint : item->endpoints) {
      if (!endpoint) continue;
      profile.hosts.push_back(endpoint->host);
      profile.ports.push_back(endpoint->port > 0 ? endpoint->port : 443);
    }
  }
  return profiles;
}

absl::Status OpenShellCli::CreateProvider(
    const std::string& name, const std::string& profile,
    const std::vector<const SandboxCredential*>& credentials) {
  std::vector<std::string> argv = Argv({"provider", "create", "--name", name, "--type", profile});
  std::vector<std::string> environment;
  for (const SandboxCredential* credential : credentials) {
    argv.insert(argv.end(), {"--credential", credential->name});
    environment.push_back(credential->name + "=" + credential->value);
  }
  CommandResult created = runner_->RunWithEnvironment(argv, environment, call_timeout_);
  if (created.Succeeded()) return absl::OkStatus();
  return Explain(fmt::format("create the provider {}", name), created);
}

// Every page of `provider list --names` (100 a page by default, v0.0.111
// main.rs ProviderCommands::List).
absl::StatusOr<std::vector<std::string>> OpenShellCli::ProvidersOf(const std::string& sandbox) {
  constexpr int kPage = 100;
  constexpr int kMaxPages = 1000;
  std::vector<std::string> names;
  const std::string prefix = sandbox + "-";
  for (int page = 0; page < kMaxPages; ++page) {
    CommandResult listed =
        runner_->Run(Argv({"provider", "list", "--names", "--limit", std::to_string(kPage),
                           "--offset", std::to_string(page * kPage)}),
                     call_timeout_);
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

absl::Status OpenShellCli::DeleteProviders(const std::string& sandbox,
                                           const std::vector<std::string>& names) {
  std::vector<std::string> argv = Argv({"provider", "delete"});
  argv.insert(argv.end(), names.begin(), names.end());
  // A provider still attached to a sandbox being deleted is refused
  // (v0.0.111 grpc/provider.rs): try again until the call's deadline.
  const auto deadline = std::chrono::steady_clock::now() + call_timeout_;
  for (;;) {
    CommandResult deleted = runner_->Run(argv, call_timeout_);
    if (deleted.Succeeded()) return absl::OkStatus();
    if (deleted.err.find("attached to sandbox") == std::string::npos ||
        std::chrono::steady_clock::now() >= deadline) {
      return Explain("delete the providers of " + sandbox, deleted);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// Not to the CLI, which passes no signal on (see CommandWrapper) and whose
// end leaves the command running: to the command, by the pid it left.
// Signalling every process (`kill -1`) would end the sandbox's main process
// too, which leaves the sandbox in phase Error. A command just starting may
// not have left its pid yet: wait for it, up to 5 seconds.
absl::Status OpenShellCli::SignalCommand(const std::string& sandbox, int signal) {
  std::vector<std::string> argv = Argv({"sandbox", "exec", "-n", sandbox, "--no-tty"});
  if (version_ >= kOpenShellNoLoginShell) argv.push_back("--no-login-shell");
  argv.insert(argv.end(), {"--", "/bin/sh", "-c",
                           fmt::format("i=0; while [ ! -s {0} ] && [ $i -lt 50 ]; do sleep 0.1; "
                                       "i=$((i+1)); done; kill -{1} \"$(cat {0})\"",
                                       kOpenShellCommandPidFile, signal)});
  CommandResult sent = runner_->Run(argv, call_timeout_);
  if (sent.Succeeded()) return absl::OkStatus();
  return Explain("signal the command in the sandbox " + sandbox, sent);
}

// What the gateway would refuse is staged first (openshell_exec.h): an
// exec whose stdin, read whole by the CLI, is the staged script.
absl::Status OpenShellCli::Stage(const std::string& sandbox, const std::string& stage_dir,
                                 const std::string& script) {
  internal::Fd input(::memfd_create("mojoup-stage", MFD_CLOEXEC));
  if (!input.ok()) {
    return absl::InternalError(fmt::format("cannot hold what is staged for the sandbox {}: {}",
                                           sandbox, std::strerror(errno)));
  }
  if (absl::Status written = internal::WriteAll(input, script, "the staged script");
      !written.ok()) {
    return written;
  }
  ::lseek(input.get(), 0, SEEK_SET);
  std::vector<std::string> argv = Argv({"sandbox", "exec", "-n", sandbox, "--no-tty"});
  if (version_ >= kOpenShellNoLoginShell) argv.push_back("--no-login-shell");
  argv.push_back("--");
  for (std::string& word : OpenShellStageCommand(stage_dir)) argv.push_back(std::move(word));
  internal::SpawnOptions options;
  options.argv = std::move(argv);
  options.environment = internal::CurrentEnvironment();
  options.in = internal::Stream::Descriptor(input.get());
  options.out = internal::Stream::Capture();
  options.err = internal::Stream::Capture();
  options.group = internal::SpawnOptions::Group::kGroup;
  auto child = internal::Spawn(options);
  CommandResult staged;
  if (!child.ok()) {
    staged.spawn_error = internal::SpawnErrno(child.status());
  } else {
    internal::ChildExit done = child->Wait(std::chrono::steady_clock::now() + call_timeout_);
    staged.outcome = done.timed_out ? CommandResult::Outcome::kTimedOut
                     : done.signal  ? CommandResult::Outcome::kSignaled
                                    : CommandResult::Outcome::kExited;
    staged.exit_code = done.exit_code;
    staged.signal = done.signal;
    staged.out = std::move(done.out);
    staged.err = std::move(done.err);
  }
  if (staged.Succeeded()) return absl::OkStatus();
  return Explain("stage the command's large arguments and environment in the sandbox " + sandbox,
                 staged);
}

absl::StatusOr<int> OpenShellCli::Exec(const std::string& sandbox, const std::string& workdir,
                                       const std::map<std::string, std::string>& environment,
                                       const std::vector<std::string>& command,
                                       const Stdio& stdio) {
  const std::string stage_dir = OpenShellStageDir();
  auto request = PlanOpenShellExec(workdir, environment, command, stage_dir);
  if (!request.ok()) return request.status();
  if (!request->staged.empty()) {
    if (absl::Status staged = Stage(sandbox, stage_dir, request->staged); !staged.ok()) {
      return staged;
    }
  }
  // With a terminal on stdin, `--tty` is OpenShell's interactive exec: input
  // and window changes stream.
  std::vector<std::string> argv =
      Argv({"sandbox", "exec", "-n", sandbox, stdio.tty ? "--tty" : "--no-tty"});
  if (!request->workdir.empty()) argv.insert(argv.end(), {"--workdir", request->workdir});
  // Without it exec runs `/bin/bash -lc`, which sources the login files of
  // the image and the staged home (v0.0.111
  // crates/openshell-supervisor-process/src/ssh.rs).
  if (version_ >= kOpenShellNoLoginShell) argv.push_back("--no-login-shell");
  for (const auto& [name, value] : request->environment) {
    argv.push_back("--env");
    argv.push_back(name + "=" + value);
  }
  argv.push_back("--");
  argv.insert(argv.end(), request->command.begin(), request->command.end());

  internal::SpawnOptions options;
  options.argv = std::move(argv);
  options.environment = internal::CurrentEnvironment();
  options.in = internal::Stream::DescriptorOrNull(stdio.in);
  options.out = internal::Stream::DescriptorOrNull(stdio.out);
  options.err = internal::Stream::DescriptorOrNull(stdio.err);
  // The CLI starts it with the session's signals blocked (they are read by
  // one thread); the exec must get them, and its own defaults.
  options.default_signals = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGPIPE};
  auto child = internal::Spawn(options);
  if (!child.ok()) {
    return absl::UnavailableError(fmt::format("cannot run {}: {}", path_,
                                              std::strerror(internal::SpawnErrno(child.status()))));
  }
  running_ = child->pid();
  const int code = child->Wait().ShellCode();
  running_ = 0;
  return code;
}

absl::Status OpenShellCli::Upload(const std::string& name, const std::string& local,
                                  const std::string& dest, std::chrono::milliseconds timeout) {
  CommandResult sent =
      runner_->Run({path_, "sandbox", "upload", name, local, dest, "--no-git-ignore"}, timeout);
  if (sent.Succeeded()) return absl::OkStatus();
  // tar's complaints come a line per file: the first few say why.
  constexpr std::size_t kSaid = 600;
  for (std::string* text : {&sent.err, &sent.out}) {
    if (text->size() > kSaid) *text = text->substr(0, kSaid) + " ...";
  }
  return Explain(fmt::format("copy {} into the sandbox {} at {}", local, name, dest), sent);
}

// v0.0.111 crates/openshell-cli/src/ssh.rs resolve_sandbox_source_path
// ("sandbox source path '...' does not exist"), sandbox_sync_down_file.
absl::Status OpenShellCli::Download(const std::string& name, const std::string& path,
                                    const std::string& dest, std::uint64_t max_bytes,
                                    std::chrono::milliseconds timeout) {
  CommandResult got = runner_->Run({"prlimit", fmt::format("--fsize={}", max_bytes), "--", path_,
                                    "sandbox", "download", name, path, dest + "/"},
                                   timeout);
  if (got.Succeeded()) return absl::OkStatus();
  if (got.outcome == CommandResult::Outcome::kSignaled && got.signal == SIGXFSZ) {
    return absl::ResourceExhaustedError(
        fmt::format("{} in the sandbox {} is larger than {} bytes, so it was not brought back",
                    path, name, max_bytes));
  }
  if (got.outcome == CommandResult::Outcome::kExited &&
      got.err.find("does not exist") != std::string::npos) {
    return absl::NotFoundError(fmt::format("{} is not in the sandbox {}", path, name));
  }
  return Explain(fmt::format("copy {} out of the sandbox {}", path, name), got);
}

CommandResult OpenShellCli::RunIn(const std::string& name, const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout) {
  std::vector<std::string> full = {path_, "sandbox", "exec", "-n", name, "--no-tty"};
  if (version_ >= kOpenShellNoLoginShell) full.push_back("--no-login-shell");
  full.push_back("--");
  full.insert(full.end(), argv.begin(), argv.end());
  return runner_->Run(full, timeout);
}

// v0.0.111 crates/openshell-cli/src/main.rs Commands::Logs, run.rs
// sandbox_logs (one-shot: GetSandboxLogs).
absl::StatusOr<std::string> OpenShellCli::SandboxLogs(const std::string& name, int lines,
                                                      std::chrono::milliseconds timeout) {
  CommandResult read = runner_->Run(
      Argv({"logs", name, "-n", std::to_string(lines), "--source", "sandbox"}), timeout);
  if (!read.Succeeded()) return Explain("give the sandbox's log", read);
  return read.out;
}

// v0.0.111 crates/openshell-cli/src/run.rs sandbox_policy_update: it prints
// to stderr, exits 124 when the revision did not load before --timeout and
// 1 when it failed to load; policy_update.rs parse_add_endpoint_spec splits
// the endpoint at every ':', so an IPv6 address cannot be one. A rule
// without binaries admits no program (data/sandbox-policy.rego
// binary_allowed): every program, as the session's own rules, is "/**".
absl::StatusOr<std::string> OpenShellCli::AddEndpoint(const std::string& name,
                                                      const std::string& host, std::uint16_t port,
                                                      std::chrono::seconds wait) {
  if (host.find(':') != std::string::npos) {
    return absl::InvalidArgumentError(fmt::format(
        "OpenShell's policy update cannot name the IPv6 address {}, so it was not allowed", host));
  }
  CommandResult updated = runner_->Run(
      Argv({"policy", "update", name, "--add-endpoint", fmt::format("{}:{}", host, port),
            "--binary", "/**", "--wait", "--timeout", std::to_string(wait.count())}),
      wait + call_timeout_);
  // Its last line says what became of the revision.
  std::string_view said = updated.err;
  while (!said.empty() && (said.back() == '\n' || said.back() == '\r')) said.remove_suffix(1);
  said = said.substr(said.rfind('\n') == std::string_view::npos ? 0 : said.rfind('\n') + 1);
  // Its mark ("✓", "·", "✗"), and any colour, goes.
  std::string last;
  for (char c : said) {
    if (static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f) last += c;
  }
  const std::size_t word = last.find_first_not_of(" [0123456789;m");
  last = word == std::string::npos ? "" : last.substr(word);
  if (updated.Succeeded()) return last;
  if (updated.outcome == CommandResult::Outcome::kExited && updated.exit_code == 124) {
    return absl::DeadlineExceededError(
        fmt::format("OpenShell's sandbox {} did not load the policy allowing {}:{} within {} s",
                    name, host, port, wait.count()));
  }
  if (updated.outcome == CommandResult::Outcome::kExited && updated.exit_code == 1 &&
      last.find("failed to load") != std::string::npos) {
    return absl::UnavailableError(fmt::format("OpenShell's {}", last));
  }
  return Explain(fmt::format("allow {}:{} in the sandbox {}", host, port, name), updated);
}

absl::Status OpenShellCli::Explain(const std::string& what, const CommandResult& result) const {
  if (result.outcome == CommandResult::Outcome::kTimedOut) {
    return absl::DeadlineExceededError(fmt::format(
        "OpenShell did not {} in time; is the gateway healthy (`openshell status`)?", what));
  }
  if (result.outcome == CommandResult::Outcome::kNotStarted) {
    return absl::UnavailableError(
        fmt::format("cannot run {}: {}", path_, std::strerror(result.spawn_error)));
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
  return absl::UnavailableError(
      fmt::format("OpenShell could not {}: {}", what, said.empty() ? "it printed nothing" : said));
}

std::string OpenShellLabelValue(const std::string& value) {
  if (ValidLabelValue(value)) return value;
  return "h" + internal::Sha256Hex(value).substr(0, 16);
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

}  // namespace mojoup::sandbox

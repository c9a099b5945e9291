// mojoup-node run | status | stop: sessions in sandboxes.
#include "mojoup/sandbox/session.h"

#include <pwd.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <iostream>
#include <set>
#include <thread>

#include "commands.h"
#include "fmt/format.h"
#include "mojoup/policy/decision.h"
#include "mojoup/policy/effective_policy.h"
#include "mojoup/policy/network_rules.h"
#include "mojoup/policy/node_config.h"
#include "mojoup/probe/openshell_cli.h"
#include "mojoup/probe/probe.h"
#include "mojoup/sandbox/native_backend.h"
#include "mojoup/sandbox/openshell_backend.h"
#include "mojoup/sandbox/policy_watch.h"

namespace mojoup::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kRunUsage =
    "mojoup-node run [--repo DIR] [--tool NAME] [--credential NAME[=HOST,...]]...\n"
    "                [--resolve HOST:PORT:ADDR]... [--upstream-ca FILE] [--audit FILE]\n"
    "                [--accept-policy] -- COMMAND [ARG...]";

// Wakes the forwarder when it is done (ignored by default, never forwarded).
constexpr int kWake = SIGURG;

// The signals a session's owner passes on to the command, SIGWINCH, and the
// forwarder's own wake-up.
sigset_t SessionSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, kWake}) sigaddset(&set, signal);
  return set;
}

// Waits for the session signals on a thread of its own until destroyed.
class SignalForwarder {
 public:
  template <class OnSignal>
  explicit SignalForwarder(OnSignal on_signal)
      : thread_([this, on_signal] {
          sigset_t set = SessionSignals();
          while (!done_) {
            int signal = 0;
            if (sigwait(&set, &signal) == 0 && signal != kWake) on_signal(signal);
          }
        }) {}
  ~SignalForwarder() {
    done_ = true;
    pthread_kill(thread_.native_handle(), kWake);
    thread_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// The terminal in raw mode while the sandbox owns it; restored on scope exit.
class RawTerminal {
 public:
  explicit RawTerminal(int fd) : fd_(fd) {
    if (tcgetattr(fd_, &saved_) != 0) return;
    termios raw = saved_;
    cfmakeraw(&raw);
    active_ = tcsetattr(fd_, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) tcsetattr(fd_, TCSANOW, &saved_);
  }

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

std::string HomeDir() {
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') return home;
  if (const passwd* entry = getpwuid(getuid()); entry != nullptr && entry->pw_dir != nullptr) {
    return entry->pw_dir;
  }
  return "/";
}

// Runs the command as an ordinary process (the decision was "unsandboxed").
int RunUnsandboxed(const std::vector<std::string>& command, const std::string& workdir) {
  sigset_t set = SessionSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  pid_t child = fork();
  if (child == 0) {
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    if (chdir(workdir.c_str()) != 0) _exit(126);
    std::vector<char*> argv;
    for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::cerr << kProgram << " run: cannot run " << command[0] << ": " << std::strerror(errno)
              << "\n";
    _exit(errno == ENOENT ? 127 : 126);
  }
  if (child < 0)
    return Fail("run", fmt::format("cannot start a process: {}", std::strerror(errno)), 1);
  int status = 0;
  {
    SignalForwarder forward([child](int signal) {
      if (signal != SIGWINCH) kill(child, signal);
    });
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

// The bridge OpenShell's Docker driver puts sandboxes on: its gateway is
// host.openshell.internal inside them.
std::string OpenShellBridgeGateway(const probe::DockerEndpoint& endpoint) {
  auto reply =
      probe::MakeDockerApi()->Get(endpoint, "/v1.40/networks/openshell", std::chrono::seconds(5));
  if (reply.failure != probe::DockerReply::Failure::kNone || reply.status != 200) return {};
  rapidjson::Document doc;
  doc.Parse(reply.body.c_str());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("IPAM") || !doc["IPAM"].IsObject() ||
      !doc["IPAM"].HasMember("Config") || !doc["IPAM"]["Config"].IsArray()) {
    return {};
  }
  for (const auto& config : doc["IPAM"]["Config"].GetArray()) {
    if (config.IsObject() && config.HasMember("Gateway") && config["Gateway"].IsString()) {
      return config["Gateway"].GetString();
    }
  }
  return {};
}

// The backend of the node's runtime (node.sandbox.runtime, default openshell).
std::unique_ptr<sandbox::Backend> RuntimeBackend(const policy::NodeConfig& config,
                                                 std::string& error) {
  auto kernel = probe::MakeSystemKernel();
  auto endpoint = probe::ResolveDockerEndpoint(*kernel);
  if (!endpoint.ok()) {
    error = std::string(endpoint.status().message());
    return nullptr;
  }
  if (config.Get("node.sandbox.runtime").value_or("openshell") == "native") {
    return sandbox::MakeNativeBackend(*endpoint);
  }
  std::optional<std::string> path =
      probe::FindOpenShell(*kernel, config.Get("node.sandbox.openshell_path"));
  if (!path) {
    error = "the OpenShell CLI `openshell` is not on PATH (node.sandbox.runtime is openshell)";
    return nullptr;
  }
  auto runner = probe::MakeSystemCommandRunner();
  probe::CommandResult version =
      probe::OpenShellCli(*runner, *path).Version(std::chrono::seconds(5));
  std::optional<probe::SemVer> parsed =
      version.Succeeded() ? probe::ParseSemVer(version.out) : std::nullopt;
  if (!parsed) {
    error = fmt::format("`{} --version` gave no version", *path);
    return nullptr;
  }
  sandbox::OpenShellBackendOptions options;
  options.path = *path;
  options.version = *parsed;
  options.bridge_gateway = OpenShellBridgeGateway(*endpoint);
  auto backend = sandbox::MakeOpenShellBackend(std::move(options));
  if (!backend.ok()) {
    error = std::string(backend.status().message());
    return nullptr;
  }
  return std::move(*backend);
}

sandbox::SessionManagerOptions ManagerOptions(sandbox::Backend* backend) {
  sandbox::SessionManagerOptions options;
  options.state_dir = sandbox::DefaultStateDir();
  options.backend = backend;
  options.supervisor = sandbox::FindSupervisor("/proc/self/exe");
  return options;
}

// Where the first word of `args` that is not a flag nor a flag's value is:
// where a command starts when its `--` was forgotten. args.size() when none.
std::size_t FirstCommandWord(const std::vector<std::string>& args) {
  static const std::set<std::string, std::less<>> kTakesValue = {
      "--repo", "--tool", "--credential", "--resolve", "--upstream-ca", "--audit", "--config"};
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.empty() || arg.front() != '-') return i;
    if (kTakesValue.count(arg) > 0) ++i;
  }
  return args.size();
}

// `unreachable`: also say why the backend could not be asked (for commands
// that print no verdict of their own).
void PrintReap(const sandbox::ReapReport& reap, bool unreachable = false) {
  if (unreachable && !reap.unreachable.empty()) {
    std::cerr << kProgram << ": " << reap.unreachable << "\n";
  }
  for (const std::string& id : reap.sessions) {
    std::cerr << kProgram << ": cleaned up session " << id << ", whose owner is gone\n";
  }
  for (const std::string& notice : reap.notices) std::cerr << kProgram << ": " << notice << "\n";
  for (const std::string& error : reap.errors) std::cerr << kProgram << ": " << error << "\n";
}

// Whether the policy of `repo` may be used: not when a sandboxed session may
// have written it, unless the user says the change is theirs (--accept-policy,
// or yes on a terminal). nullopt: go on; else the exit code.
std::optional<int> CheckPolicyProvenance(const std::string& repo, bool accept) {
  sandbox::PolicyWatch watch(sandbox::DefaultStateDir());
  std::optional<sandbox::PolicyChange> change = watch.Check(repo);
  if (!change) return std::nullopt;
  if (!accept && isatty(0) && isatty(2)) {
    std::cerr << kProgram << ": " << change->Sentence() << ".\n"
              << "The agent may have written it. Use this policy, as yours? [y/N] " << std::flush;
    std::string answer;
    std::getline(std::cin, answer);
    accept = answer == "y" || answer == "Y" || answer == "yes" || answer == "YES";
  }
  if (!accept) {
    return Fail("run",
                fmt::format("{}, so the agent may have written it and it is not used; if the "
                            "change is yours, run again with --accept-policy",
                            change->Sentence()),
                kExitNotPossible);
  }
  if (absl::Status accepted = watch.Accept(repo); !accepted.ok()) {
    return Fail("run", accepted, kExitNotPossible);
  }
  std::cerr << kProgram << ": the policy of " << repo << " is accepted as yours\n";
  return std::nullopt;
}

void PrintWriteBack(const sandbox::WriteBackReport& report) {
  for (const std::string& path : report.written) {
    std::cerr << kProgram << ": the agent refreshed " << path << "; it is written back\n";
  }
  for (const sandbox::KeptAside& kept : report.kept_aside) {
    std::cerr << kProgram << ": " << kept.host_path << " was not written back: " << kept.why
              << "; the sandbox's copy is kept at " << kept.aside_path << "\n";
  }
  for (const std::string& error : report.errors) std::cerr << kProgram << ": " << error << "\n";
}

}  // namespace

int Run(std::vector<std::string> args) {
  std::vector<std::string> command;
  if (auto dash = std::find(args.begin(), args.end(), "--"); dash != args.end()) {
    command.assign(dash + 1, args.end());
    args.erase(dash, args.end());
  } else if (std::size_t first = FirstCommandWord(args); first < args.size()) {
    // `run sh -c true`: cxxopts would complain of an option -c.
    std::string words;
    for (std::size_t i = first; i < args.size(); ++i) words += (words.empty() ? "" : " ") + args[i];
    return Fail("run", fmt::format("\"{}\" looks like the command to run; put it after --: "
                                   "mojoup-node run [flags] -- {}",
                                   args[first], words));
  }
  cxxopts::Options options("mojoup-node run",
                           "Run COMMAND in a sandbox for this repository, as policy decides.");
  options.add_options()("repo", "the repository (default: the current directory)",
                        cxxopts::value<std::string>())(
      "tool", "the agent tool: its service hosts are allowed, its sign-in files staged",
      cxxopts::value<std::string>())(
      "credential", "NAME[=HOST,...]: keep $NAME outside, hand the sandbox a stand-in",
      cxxopts::value<std::vector<std::string>>())(
      "resolve", "HOST:PORT:ADDR: the proxy connects to ADDR for HOST:PORT",
      cxxopts::value<std::vector<std::string>>())(
      "upstream-ca", "PEM file of extra CAs to trust upstream", cxxopts::value<std::string>())(
      "audit", "append the proxy's decisions, one JSON line each, to FILE",
      cxxopts::value<std::string>())(
      "accept-policy",
      "use the repository's policy although it changed while a sandboxed session ran: the "
      "change is yours")("config", "node config file", cxxopts::value<std::string>());
  cxxopts::ParseResult parsed;
  if (auto stop = Parse(options, std::string(kRunUsage), std::move(args), parsed)) return *stop;
  if (command.empty()) return Fail("run", "give the command to run after --");
  int failed = kExitUsage;
  auto config = LoadConfig("run", parsed, failed);
  if (!config) return failed;
  auto tool = ToolFlag("run", parsed);
  if (!tool) return kExitUsage;

  std::error_code ec;
  const std::string asked = parsed.count("repo") ? parsed["repo"].as<std::string>() : ".";
  const fs::path workdir = fs::canonical(asked, ec);
  if (ec || !fs::is_directory(workdir)) {
    return Fail("run", fmt::format("--repo {}: not a directory", asked));
  }
  const std::string repo = fs::canonical(policy::FindRepoRoot(workdir.string()), ec).string();
  if (auto refused = CheckPolicyProvenance(repo, parsed.count("accept-policy") > 0)) {
    return *refused;
  }
  auto effective = policy::LoadEffectivePolicy(policy::PolicyPathsFor(workdir.string(), *config));
  if (!effective.ok()) return Fail("run", effective.status());

  // Everything the sandbox path needs is checked before anything is started.
  sandbox::SessionSpec spec;
  spec.proxy.rules = policy::NetworkRules::Build(*effective, *tool);
  const sandbox::Getenv getenv = sandbox::SystemGetenv();
  if (parsed.count("credential")) {
    for (const std::string& item : parsed["credential"].as<std::vector<std::string>>()) {
      if (absl::Status added = sandbox::AddCredential(item, *config, getenv, spec.proxy.vault);
          !added.ok()) {
        return Fail("run", added);
      }
    }
  }
  if (parsed.count("resolve")) {
    for (const std::string& item : parsed["resolve"].as<std::vector<std::string>>()) {
      if (absl::Status pinned = sandbox::AddPin(item, spec.proxy.pins); !pinned.ok()) {
        return Fail("run", pinned);
      }
    }
  }
  if (parsed.count("upstream-ca")) {
    spec.proxy.upstream_ca = parsed["upstream-ca"].as<std::string>();
    if (std::string problem = UpstreamCaProblem(spec.proxy.upstream_ca); !problem.empty()) {
      return Fail("run", problem);
    }
  }
  if (parsed.count("audit")) {
    spec.proxy.audit_file = parsed["audit"].as<std::string>();
    if (std::string problem = NewFileProblem("--audit", spec.proxy.audit_file); !problem.empty()) {
      return Fail("run", problem);
    }
  }

  const std::string user = policy::CurrentUserName();
  // The probe and the reaping of earlier sessions' leftovers go side by side.
  auto probing = std::async(std::launch::async, [&config] {
    return probe::ProbeSystem(policy::ProbeOptionsFor(*config));
  });
  std::string backend_error;
  std::unique_ptr<sandbox::Backend> backend = RuntimeBackend(*config, backend_error);
  std::optional<sandbox::SessionManager> manager;
  if (backend) {
    manager.emplace(ManagerOptions(backend.get()));
    PrintReap(manager->Reap());
  }
  probe::Report report = probing.get();
  policy::Decision decision = policy::Decide(report.verdict, *config, *effective, user);
  std::cerr << kProgram << ": " << decision.reason << "\n";
  if (decision.result == policy::Decision::Result::kRefused) return kExitNotPossible;
  if (decision.result == policy::Decision::Result::kUnsandboxed) {
    return RunUnsandboxed(command, workdir.string());
  }

  auto image = config->Get("node.sandbox.image");
  if (!image) {
    return Fail("run",
                "no sandbox image is set; set one with `mojoup-node config set node.sandbox.image "
                "IMAGE`",
                kExitNotPossible);
  }
  if (!backend) return Fail("run", backend_error, kExitNotPossible);
  const bool native = backend->name() == "native";
  if (native && manager->options().supervisor.empty()) {
    return Fail("run",
                "mojoup-sandbox-init is not installed beside mojoup-node (bin/ or "
                "../libexec/mojoup/); reinstall mojoup-node",
                kExitNotPossible);
  }

  spec.user = user;
  spec.uid = getuid();
  spec.gid = getgid();
  spec.home = HomeDir();
  spec.repo = repo;
  spec.workdir = workdir.string();
  spec.tool = *tool;
  spec.command = command;
  spec.image = *image;
  spec.cpus = policy::SandboxCpus(*config);
  spec.tty = native && isatty(0) && isatty(1);
  if (const char* term = std::getenv("TERM"); spec.tty && term != nullptr) {
    spec.environment["TERM"] = term;
  }

  if (!native && (*tool == "copilot" || *tool == "opencode")) {
    std::cerr << kProgram << ": " << *tool << " has no base-URL setting, so with the openshell "
              << "runtime its API keys cannot go through the credential proxy: it gets "
              << "stand-ins only; use its sign-in, or the native runtime\n";
  }
  // Signals wait for the forwarder; threads started from here on inherit the mask.
  sigset_t signals = SessionSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto session = manager->Start(std::move(spec));
  if (!session.ok()) return Fail("run", session.status(), kExitNotPossible);
  if (const auto& staged = (*session)->record().sign_in;
      staged && staged->files.empty() && !staged->missing.empty()) {
    std::cerr << kProgram << ": no " << *tool << " sign-in file on this host (looked for "
              << staged->missing.front() << (staged->missing.size() > 1 ? " and others" : "")
              << "); the agent starts signed out\n";
  }

  sandbox::Stdio stdio;
  stdio.tty = native && isatty(0) && isatty(1);
  if (!native && isatty(0)) {
    // OpenShell's exec reads stdin whole before it starts the command.
    std::cerr << kProgram << ": the openshell runtime cannot stream a terminal's input; the "
              << "command gets none (pipe or redirect a file instead)\n";
    stdio.in = -1;
  }
  winsize size{};
  if (stdio.tty && ioctl(1, TIOCGWINSZ, &size) == 0) {
    stdio.rows = size.ws_row;
    stdio.columns = size.ws_col;
  }
  absl::StatusOr<int> code;
  {
    std::optional<RawTerminal> raw;
    if (stdio.tty) raw.emplace(0);
    sandbox::Session& running = **session;
    int interrupts = 0;
    SignalForwarder forward([&running, &interrupts](int signal) {
      if (signal == SIGWINCH) {
        winsize now{};
        if (ioctl(1, TIOCGWINSZ, &now) == 0) running.Resize(now.ws_row, now.ws_col).IgnoreError();
        return;
      }
      // A second interrupt means now: take the sandbox away.
      if (++interrupts > 1) {
        running.Signal(SIGKILL).IgnoreError();
      } else {
        running.Signal(signal).IgnoreError();
      }
    });
    code = running.Run(stdio);
  }
  sandbox::CloseReport closed = (*session)->Close();
  PrintWriteBack(closed.sign_in);
  for (const std::string& message : closed.notices)
    std::cerr << kProgram << ": " << message << "\n";
  for (const std::string& message : closed.errors) std::cerr << kProgram << ": " << message << "\n";
  if (!code.ok()) return Fail("run", code.status(), kExitNotPossible);
  return *code;
}

int Status(std::vector<std::string> args) {
  cxxopts::Options options("mojoup-node status",
                           "Whether this node can sandbox agents, and the sessions in sandboxes.");
  options.add_options()("json", "print one JSON object (schema mojoup.status/v1)")(
      "config", "node config file", cxxopts::value<std::string>());
  cxxopts::ParseResult parsed;
  if (auto stop =
          Parse(options, "mojoup-node status [--json] [--config FILE]", std::move(args), parsed)) {
    return *stop;
  }
  int failed = kExitUsage;
  auto config = LoadConfig("status", parsed, failed);
  if (!config) return failed;
  probe::Report report = probe::ProbeSystem(policy::ProbeOptionsFor(*config));

  std::string error;
  std::unique_ptr<sandbox::Backend> backend = RuntimeBackend(*config, error);
  std::vector<sandbox::SessionRecord> sessions;
  if (backend) {
    sandbox::SessionManager manager(ManagerOptions(backend.get()));
    PrintReap(manager.Reap());
    auto listed = manager.List();
    if (!listed.ok()) return Fail("status", listed.status(), kExitNotPossible);
    sessions = std::move(*listed);
  } else {
    std::cerr << kProgram << ": cannot look for leftovers: " << error << "\n";
  }

  if (parsed.count("json")) {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    w.StartObject();
    w.Key("schema");
    w.String("mojoup.status/v1");
    w.Key("can_sandbox");
    w.Bool(report.verdict.can_sandbox);
    w.Key("verdict");
    w.String(report.verdict.Line());
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
    std::cout << buffer.GetString() << "\n";
    return kExitOk;
  }
  std::cout << report.verdict.Line() << "\n";
  if (sessions.empty()) {
    std::cout << "No sessions in sandboxes.\n";
    return kExitOk;
  }
  std::cout << fmt::format("{:<17} {:<10} {:<12} {:<8} {:<8} {:<20} {:>7}  {}\n", "SESSION", "USER",
                           "TOOL", "RUNTIME", "STATE", "STARTED", "PID", "REPOSITORY");
  for (const sandbox::SessionRecord& session : sessions) {
    std::cout << fmt::format("{:<17} {:<10} {:<12} {:<8} {:<8} {:<20} {:>7}  {}\n", session.id,
                             session.user, session.tool.empty() ? "-" : session.tool,
                             session.runtime, session.state, session.started_at, session.pid,
                             session.repo);
  }
  return kExitOk;
}

int Stop(std::vector<std::string> args) {
  cxxopts::Options options("mojoup-node stop",
                           "Stop sessions and remove their sandboxes and staging.");
  options.add_options()("all", "stop every session on this node")("config", "node config file",
                                                                  cxxopts::value<std::string>());
  cxxopts::ParseResult parsed;
  if (auto stop = Parse(options, "mojoup-node stop ID | --all", std::move(args), parsed, {"id"})) {
    return *stop;
  }
  std::vector<std::string> ids;
  if (parsed.count("positional")) ids = parsed["positional"].as<std::vector<std::string>>();
  if (parsed.count("all") == 0 && ids.size() != 1) {
    return Fail("stop", "give one session ID, or --all");
  }
  if (parsed.count("all") > 0 && !ids.empty())
    return Fail("stop", "give a session ID or --all, not both");
  int failed = kExitUsage;
  auto config = LoadConfig("stop", parsed, failed);
  if (!config) return failed;
  std::string error;
  std::unique_ptr<sandbox::Backend> backend = RuntimeBackend(*config, error);
  if (!backend) return Fail("stop", error, kExitNotPossible);
  sandbox::SessionManager manager(ManagerOptions(backend.get()));
  PrintReap(manager.Reap(), true);
  if (parsed.count("all")) {
    auto listed = manager.List();
    if (!listed.ok()) return Fail("stop", listed.status(), kExitNotPossible);
    for (const sandbox::SessionRecord& record : *listed) ids.push_back(record.id);
  }
  int exit_code = kExitOk;
  for (const std::string& id : ids) {
    auto stopped = manager.Stop(id);
    if (!stopped.ok()) {
      std::cerr << kProgram << " stop: " << stopped.status().message() << "\n";
      exit_code = kExitNotPossible;
      continue;
    }
    PrintWriteBack(stopped->sign_in);
    for (const std::string& message : stopped->notices) {
      std::cerr << kProgram << ": " << message << "\n";
    }
    if (!stopped->errors.empty()) {
      // Not stopped as asked: say what is left and why, and do not claim it.
      for (const std::string& message : stopped->errors) {
        std::cerr << kProgram << " stop: " << id << ": " << message << "\n";
      }
      exit_code = kExitNotPossible;
      continue;
    }
    std::cout << "stopped " << id << "\n";
  }
  return exit_code;
}

}  // namespace mojoup::cli

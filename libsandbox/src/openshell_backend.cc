#include "mojoup/sandbox/openshell_backend.h"

#include <fcntl.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>

#include "file_util.h"
#include "fmt/format.h"
#include "mojoup/internal/host_port.h"
#include "mojoup/policy/tool_profiles.h"
#include "mojoup/sandbox/openshell_policy.h"

extern char** environ;

namespace mojoup::sandbox {
namespace {

using probe::CommandResult;
using probe::SemVer;

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

bool ValidLabelValue(const std::string& value) {
  if (value.size() > 63) return false;
  for (char c : value) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
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
  explicit OpenShellBackend(OpenShellBackendOptions options)
      : options_(std::move(options)), runner_(probe::MakeSystemCommandRunner()) {}

  std::string_view name() const override { return "openshell"; }

  std::string ProxyListen() const override { return options_.bridge_gateway + ":0"; }

  absl::StatusOr<std::string> Create(const SandboxSpec& spec) override {
    if (absl::Status user = CheckUser(spec.uid); !user.ok()) return user;
    if (spec.rules == nullptr) return absl::InvalidArgumentError("no network rules for the sandbox");
    const std::string name = "mojoup-" + spec.session;
    // SessionManager lists the places to write as repository, home, /tmp,
    // then any others (a worktree's main git directory).
    if (spec.writable.size() < 2) {
      return absl::InvalidArgumentError("the sandbox spec names no repository and home");
    }
    OpenShellPolicyOptions policy;
    policy.repo = spec.writable[0];
    policy.home = spec.writable[1];
    for (std::size_t i = 2; i < spec.writable.size(); ++i) {
      if (spec.writable[i] != "/tmp") policy.writable.push_back(spec.writable[i]);
    }
    policy.uid = spec.uid;
    policy.gid = spec.gid;
    if (auto proxy = internal::SplitHostPort(spec.proxy_address, 0)) {
      policy.proxy_port = proxy->port;
    }
    if (options_.version < SemVer{0, 0, 53}) policy.proxy_allowed_ip = options_.bridge_gateway;
    OpenShellPolicy translated = TranslateToOpenShell(*spec.rules, policy);
    const std::string policy_file = spec.session_dir + "/openshell-policy.yaml";
    {
      std::ofstream file(policy_file, std::ios::trunc);
      file << translated.yaml;
      if (!file) {
        return absl::PermissionDeniedError(fmt::format("cannot write {}", policy_file));
      }
    }

    std::vector<std::string> argv = {options_.path, "sandbox", "create", "--name", name,
                                     "--from", spec.image, "--policy", policy_file};
    std::map<std::string, std::string> labels = spec.labels;
    labels["mojoup.session"] = spec.session;
    for (const auto& [label, value] : labels) {
      argv.push_back("--label");
      argv.push_back(label + "=" + OpenShellLabelValue(value));
    }
    argv.push_back("--driver-config-json");
    argv.push_back(DriverConfig(spec.mounts));
    // From v0.0.111 a trailing command is the sandbox's main process, and
    // its exit puts the sandbox in phase Error.
    if (options_.version < SemVer{0, 0, 111}) {
      argv.insert(argv.end(), {"--", "true"});
    } else {
      argv.insert(argv.end(), {"--detach", "--", "sleep", "infinity"});
    }
    CommandResult created = runner_->Run(argv, options_.create_timeout);
    if (!created.Succeeded()) {
      Remove(name).IgnoreError();  // whatever half of it exists
      return Explain("create the sandbox", created);
    }
    CommandResult got = runner_->Run({options_.path, "sandbox", "get", name, "-o", "json"},
                                     options_.call_timeout);
    rapidjson::Document doc;
    doc.Parse(got.out.c_str());
    if (got.Succeeded() && !doc.HasParseError() && doc.IsObject() && doc.HasMember("phase") &&
        doc["phase"].IsString() && std::string_view(doc["phase"].GetString()) == "Error") {
      Remove(name).IgnoreError();
      return absl::UnavailableError(
          fmt::format("the OpenShell sandbox {} went into phase Error; see `openshell logs {}`",
                      name, name));
    }
    // OpenShell sets its own proxy variables in the sandbox; ours would only
    // mislead. API traffic reaches our proxy through base URLs instead.
    std::map<std::string, std::string> environment = spec.environment;
    for (const char* variable : {"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"}) {
      environment.erase(variable);
    }
    if (policy.proxy_port != 0) {
      const std::string proxy =
          fmt::format("http://{}:{}", kOpenShellHostAlias, policy.proxy_port);
      for (auto& [variable, url] : OpenShellBaseUrls(proxy, spec.tool, spec.environment)) {
        environment[variable] = url;
      }
      // For anything else: $MOJOUP_PROXY_URL/<host>/<path> reaches https://<host>/<path>.
      environment["MOJOUP_PROXY_URL"] = proxy;
      if (spec.tool == "codex") {
        if (absl::Status written = WriteCodexConfig(spec, proxy); !written.ok()) return written;
      }
    }
    environment_[name] = std::move(environment);
    workdir_[name] = spec.workdir;
    command_[name] = spec.command;
    return name;
  }

  absl::StatusOr<int> Run(const std::string& sandbox, const Stdio& stdio) override {
    std::vector<std::string> argv = {options_.path, "sandbox",   "exec", "-n",
                                     sandbox,       "--no-tty", "--workdir", workdir_[sandbox]};
    for (const auto& [name, value] : environment_[sandbox]) {
      argv.push_back("--env");
      argv.push_back(name + "=" + value);
    }
    argv.push_back("--");
    argv.insert(argv.end(), command_[sandbox].begin(), command_[sandbox].end());

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    const int in = stdio.in >= 0 ? stdio.in : null_fd;
    posix_spawn_file_actions_adddup2(&actions, in, 0);
    posix_spawn_file_actions_adddup2(&actions, stdio.out >= 0 ? stdio.out : null_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, stdio.err >= 0 ? stdio.err : null_fd, 2);
    std::vector<char*> args;
    for (std::string& arg : argv) args.push_back(arg.data());
    args.push_back(nullptr);
    pid_t pid = 0;
    int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
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
    // The session's own exec passes it on; from any other process (`stop`),
    // the signal goes to every process of the sandbox's user inside it.
    if (pid_t pid = running_; pid > 0) {
      ::kill(pid, signal);
      return absl::OkStatus();
    }
    CommandResult sent = runner_->Run({options_.path, "sandbox", "exec", "-n", sandbox, "--no-tty",
                                       "--", "kill", "-" + std::to_string(signal), "-1"},
                                      options_.call_timeout);
    if (sent.outcome == CommandResult::Outcome::kExited) return absl::OkStatus();
    return Explain("signal the sandbox " + sandbox, sent);
  }

  absl::Status Resize(const std::string&, unsigned short, unsigned short) override {
    return absl::OkStatus();  // exec runs without a terminal
  }

  absl::Status Remove(const std::string& sandbox) override {
    CommandResult deleted =
        runner_->Run({options_.path, "sandbox", "delete", sandbox}, options_.call_timeout);
    if (deleted.Succeeded() || (deleted.outcome == CommandResult::Outcome::kExited &&
                                deleted.err.find("not found") != std::string::npos)) {
      return absl::OkStatus();
    }
    return Explain("delete the sandbox " + sandbox, deleted);
  }

  absl::StatusOr<std::vector<SandboxInfo>> List(
      const std::map<std::string, std::string>& labels) override {
    CommandResult listed = runner_->Run(
        {options_.path, "sandbox", "list", "--selector", Selector(labels), "-o", "json"},
        options_.call_timeout);
    if (!listed.Succeeded()) return Explain("list sandboxes", listed);
    rapidjson::Document doc;
    doc.Parse(listed.out.c_str());
    if (doc.HasParseError() || !doc.IsArray()) {
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
      info.session = info.labels["mojoup.session"];
      info.running = item.HasMember("phase") && item["phase"].IsString() &&
                     std::string_view(item["phase"].GetString()) == "Ready";
      found.push_back(std::move(info));
    }
    return found;
  }

 private:
  absl::Status CheckUser(uid_t uid) const {
    // process.run_as_user: numeric from v0.0.76 (>= 1000), any uid >= 1 from v0.0.110.
    if (uid == 0) {
      return absl::FailedPreconditionError(
          "OpenShell does not run sandboxes as root (uid 0); run mojoup-node as the user whose "
          "agent it is");
    }
    const SemVer needed = uid >= 1000 ? SemVer{0, 0, 76} : SemVer{0, 0, 110};
    if (options_.version < needed) {
      return absl::FailedPreconditionError(fmt::format(
          "OpenShell {} cannot run a sandbox as uid {}; that needs {} or later",
          options_.version.ToString(), uid, needed.ToString()));
    }
    return absl::OkStatus();
  }

  // Codex takes its base URL from config.toml (openai_base_url), not the
  // environment. The file goes into the session's staging home, which is the
  // sandbox's home, unless the staging already has one.
  static absl::Status WriteCodexConfig(const SandboxSpec& spec, const std::string& proxy) {
    const std::string& home = spec.writable[1];
    for (const BindMount& mount : spec.mounts) {
      if (mount.target != home) continue;
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
    const std::string err = result.err + result.out;
    if (result.outcome == CommandResult::Outcome::kTimedOut) {
      return absl::DeadlineExceededError(
          fmt::format("OpenShell did not {} in time; is the gateway healthy (`openshell status`)?",
                      what));
    }
    if (result.outcome == CommandResult::Outcome::kNotStarted) {
      return absl::UnavailableError(
          fmt::format("cannot run {}: {}", options_.path, std::strerror(result.spawn_error)));
    }
    if (err.find("enable_bind_mounts") != std::string::npos) {
      return absl::FailedPreconditionError(
          "The OpenShell gateway does not allow bind mounts: set enable_bind_mounts = true under "
          "[openshell.drivers.docker] in the gateway's config and restart the gateway");
    }
    if (err.find("authenticat") != std::string::npos || err.find("Unauthenticated") != std::string::npos) {
      return absl::PermissionDeniedError(fmt::format(
          "OpenShell could not {}: the gateway refused our credentials; sign in again ({})", what,
          FirstLine(err)));
    }
    if (err.find("onnect") != std::string::npos || err.find("unreachable") != std::string::npos) {
      return absl::UnavailableError(fmt::format(
          "OpenShell could not {}: the gateway is not reachable ({}); start it with "
          "`systemctl --user start openshell-gateway`",
          what, FirstLine(err)));
    }
    return absl::UnavailableError(
        fmt::format("OpenShell could not {}: {}", what, FirstLine(err)));
  }

  OpenShellBackendOptions options_;
  std::unique_ptr<probe::CommandRunner> runner_;
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
        "the `openshell` Docker network is missing, so sandboxes could not reach the credential "
        "proxy; start the OpenShell gateway with its Docker driver");
  }
  return std::unique_ptr<Backend>(new OpenShellBackend(std::move(options)));
}

std::string OpenShellLabelValue(const std::string& value) {
  if (ValidLabelValue(value)) return value;
  return "h" + Sha256Hex(value).substr(0, 16);
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

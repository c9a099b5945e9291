// `policy update` (an endpoint added to a live sandbox's policy) and `logs`
// (the gateway's log lines of a sandbox), as far as the openshell runtime
// uses them, from v0.0.92 (whose sources these match) to v0.0.111.
//
// The gateway's policy revisions live in the install directory (every
// sandbox's NetworkRules' lines, by version); revision 1 is what the
// sandbox was created with, read from its supervisor's --network argument.
// A new revision reaches the sandbox's supervisor at once (an exec of
// `openshell-sandbox policy`), where the real supervisor polls the gateway
// for it; its proxy judges every later connection by it.

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "fake_openshell.h"
#include "fmt/format.h"
#include "mojoup/internal/sha256.h"
#include "runtime/native/stream_pump.h"

namespace mojoup::fake_openshell {
namespace {

constexpr std::string_view kUpdateUsage = "openshell policy update [OPTIONS] [NAME]";
constexpr std::string_view kLogsUsage = "openshell logs [OPTIONS] [NAME]";

// What the supervisor logs for the gateway (sandbox_proxy.h kLogPrefix).
constexpr std::string_view kLogPrefix = "openshell-log ";

struct Revision {
  unsigned version = 1;
  std::string rules;  // NetworkRules' lines
};

// The gateway's revisions, every sandbox's ("sandbox ID VERSION", its
// lines, "end"), rewritten in place under its lock: the install directory
// may not be writable by the user under test (InstallFakeOpenShellSandbox
// makes both files).
std::string StorePath(const Context& ctx) { return ctx.dir + "/fake-openshell-policies.txt"; }

// The --network argument the supervisor was started with (create.cc).
std::optional<std::string> CreatedRules(Docker& docker, const Sandbox& sandbox,
                                        std::string& error) {
  DockerReply reply = docker.Call("GET", "/containers/" + sandbox.container + "/json");
  if (!Answered(reply, {200})) {
    error = "inspect the sandbox's container: " + DockerReplyProblem(reply);
    return std::nullopt;
  }
  rapidjson::Document info;
  info.Parse(reply.body.c_str());
  if (info.HasParseError() || !info.IsObject() || !info.HasMember("Config") ||
      !info["Config"].IsObject() || !info["Config"].HasMember("Cmd") ||
      !info["Config"]["Cmd"].IsArray()) {
    error = "the sandbox's container has no command";
    return std::nullopt;
  }
  const auto& cmd = info["Config"]["Cmd"].GetArray();
  for (rapidjson::SizeType i = 0; i + 1 < cmd.Size(); ++i) {
    if (cmd[i].IsString() && cmd[i + 1].IsString() &&
        std::string(cmd[i].GetString()) == "--network") {
      return std::string(cmd[i + 1].GetString());
    }
  }
  return std::string("policies 0\n");
}

std::map<std::string, Revision> LoadRevisions(const std::string& path) {
  std::map<std::string, Revision> revisions;
  std::ifstream file(path);
  Revision* open = nullptr;
  for (std::string line; std::getline(file, line);) {
    std::istringstream words(line);
    std::string word, id;
    unsigned version = 0;
    if (open == nullptr && (words >> word >> id >> version) && word == "sandbox") {
      open = &revisions[id];
      *open = Revision{version, ""};
    } else if (open != nullptr && line == "end") {
      open = nullptr;
    } else if (open != nullptr) {
      open->rules += line + "\n";
    }
  }
  return revisions;
}

bool SaveRevisions(const std::string& path, const std::map<std::string, Revision>& revisions) {
  std::ofstream out(path, std::ios::trunc);
  for (const auto& [id, revision] : revisions) {
    out << "sandbox " << id << " " << revision.version << "\n" << revision.rules << "end\n";
  }
  return static_cast<bool>(out);
}

// generated_rule_name (v0.0.111 crates/openshell-policy/src/merge.rs).
std::string GeneratedRuleName(const std::string& host, std::uint16_t port) {
  std::string name;
  for (char c : host) {
    if (c == '.' || c == '-') c = '_';
    if (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_') name += c;
  }
  return fmt::format("allow_{}_{}", name, port);
}

struct EndpointSpec {
  std::string host;
  std::uint16_t port = 0;
};

// parse_add_endpoint_spec, parse_host, parse_port (v0.0.111
// crates/openshell-cli/src/policy_update.rs); the access, protocol,
// enforcement and options segments are not modelled.
std::optional<int> ParseEndpoint(const std::string& spec, EndpointSpec& endpoint) {
  std::vector<std::string> parts;
  std::istringstream split(spec + ":");
  for (std::string part; std::getline(split, part, ':');) parts.push_back(part);
  if (parts.size() < 2 || parts.size() > 6) {
    return PrintError(fmt::format(
        "--add-endpoint expects host:port[:access[:protocol[:enforcement[:options]]]], got '{}'",
        spec));
  }
  if (parts.size() > 2) return NotModelled("an --add-endpoint with more than host:port");
  const std::string host = Trim(parts[0]);
  if (host.empty()) {
    return PrintError(fmt::format("--add-endpoint has an empty host segment in '{}'", spec));
  }
  if (std::any_of(host.begin(), host.end(),
                  [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; })) {
    return PrintError(fmt::format("--add-endpoint host must not contain whitespace in '{}'", spec));
  }
  if (host.find('/') != std::string::npos) {
    return PrintError(fmt::format("--add-endpoint host must not contain '/' in '{}'", spec));
  }
  const std::string port = Trim(parts[1]);
  if (port.empty()) {
    return PrintError(fmt::format("--add-endpoint has an empty port segment in '{}'", spec));
  }
  const std::optional<std::uint32_t> number = NumericId(port);
  if (!number) {
    return PrintError(fmt::format(
        "--add-endpoint port segment must be a base-10 integer, got '{}' in '{}'", port, spec));
  }
  if (*number == 0 || *number > 65535) {
    return PrintError(fmt::format(
        "--add-endpoint port must be in the range 1-65535, got '{}' in '{}'", *number, spec));
  }
  endpoint.host = host;
  endpoint.port = static_cast<std::uint16_t>(*number);
  return std::nullopt;
}

// merge_policy's AddRule (v0.0.111 crates/openshell-policy/src/merge.rs
// add_rule), as NetworkRules' lines show it: a rule admits programs by its
// binaries, and only one with "/**" shows as "allow" lines. An endpoint some
// rule already allows to every program leaves the policy as it was; else
// the rule (a new entry when its name is new) gains it.
bool Merge(Revision& revision, const std::string& rule, const EndpointSpec& endpoint,
           bool every_program) {
  std::istringstream lines(revision.rules);
  int policies = 0;
  bool rule_exists = false;
  std::string kept;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("policies ")) {
      policies = std::atoi(line.c_str() + 9);
      continue;
    }
    std::istringstream words(line);
    std::string kind, key, host, port;
    words >> kind >> key >> host >> port;
    if (kind == "allow" && host == endpoint.host && port == std::to_string(endpoint.port) &&
        every_program) {
      return false;
    }
    rule_exists = rule_exists || key == rule;
    kept += line + "\n";
  }
  if (every_program) kept += fmt::format("allow {} {} {}\n", rule, endpoint.host, endpoint.port);
  revision.rules = fmt::format("policies {}\n", policies + (rule_exists ? 0 : 1)) + kept;
  return true;
}

// The new revision reaches the sandbox's supervisor; "" when it loaded,
// else why not.
std::string Deliver(Docker& docker, const Sandbox& sandbox, const std::string& rules) {
  std::string error;
  std::optional<int> code =
      RunInSandbox(docker, sandbox.container, {kSupervisorPath, "policy", "--network", rules, "--"},
                   "", 30, error);
  if (!code) return error;
  return *code == 0 ? "" : fmt::format("the supervisor exited with {}", *code);
}

// sandbox_policy_update's answer once the revision is submitted (v0.0.111
// crates/openshell-cli/src/run.rs): with --wait, a status poll each second
// up to --timeout, exit 124 at the deadline and 1 when it failed to load.
int Submitted(const Revision& revision, const std::string& hash, bool wait, unsigned timeout,
              const std::string& load_error) {
  std::fputs(fmt::format("✓ Policy version {} submitted (hash: {})\n", revision.version,
                         hash.substr(0, 12))
                 .c_str(),
             stderr);
  if (!wait) return 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
  if (std::chrono::steady_clock::now() >= deadline) {
    std::fputs(
        fmt::format("✗ Timeout waiting for policy version {} to load\n", revision.version).c_str(),
        stderr);
    return kTimedOutExit;
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  if (!load_error.empty()) {
    std::fputs(fmt::format("✗ Policy version {} failed to load: {}\n", revision.version, load_error)
                   .c_str(),
               stderr);
    return 1;
  }
  std::fputs(fmt::format("✓ Policy version {} loaded (active version: {})\n", revision.version,
                         revision.version)
                 .c_str(),
             stderr);
  return 0;
}

int ApplyUpdate(const Context& ctx, Docker& docker, const Sandbox& sandbox,
                const std::vector<EndpointSpec>& endpoints,
                const std::vector<std::string>& binaries, const std::string& rule_name, bool wait,
                unsigned timeout) {
  // One update at a time per install, as the gateway serializes them.
  const int lock = ::open((StorePath(ctx) + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (lock >= 0) ::flock(lock, LOCK_EX);
  struct Unlock {
    int fd;
    ~Unlock() {
      if (fd >= 0) ::close(fd);
    }
  } unlock{lock};
  std::map<std::string, Revision> revisions = LoadRevisions(StorePath(ctx));
  std::string error;
  auto found = revisions.find(sandbox.id);
  if (found == revisions.end()) {
    auto rules = CreatedRules(docker, sandbox, error);
    if (!rules) return PrintError(GrpcError("Internal", error));
    found = revisions.emplace(sandbox.id, Revision{1, *rules}).first;
  }
  const Revision* current = &found->second;
  const bool every_program = std::find(binaries.begin(), binaries.end(), "/**") != binaries.end();
  Revision next = *current;
  bool changed = false;
  for (const EndpointSpec& endpoint : endpoints) {
    const std::string rule =
        Trim(rule_name).empty() ? GeneratedRuleName(endpoint.host, endpoint.port) : Trim(rule_name);
    changed = Merge(next, rule, endpoint, every_program) || changed;
  }
  if (!changed) {
    std::fputs(fmt::format("· Policy unchanged (version {}, hash: {})\n", current->version,
                           internal::Sha256Hex(current->rules).substr(0, 12))
                   .c_str(),
               stderr);
    return 0;
  }
  next.version = current->version + 1;
  found->second = next;
  if (!SaveRevisions(StorePath(ctx), revisions)) {
    return PrintError(GrpcError("Internal", "cannot store the policy"));
  }
  const std::string load_error = Deliver(docker, sandbox, next.rules);
  return Submitted(next, internal::Sha256Hex(next.rules), wait, timeout, load_error);
}

// One line the sandbox pushed (sandbox_proxy.h PushLog): SandboxLogLine's
// timestamp_ms, level, target and message, source "sandbox", no fields.
struct LogLine {
  long long timestamp_ms = 0;
  std::string level, target, message;
};

// The gateway's buffer of the sandbox's lines, oldest first: the last 2000
// (v0.0.111 crates/openshell-server/src/tracing_bus.rs, its per-sandbox
// ring), read from the supervisor's stderr.
std::optional<std::deque<LogLine>> PushedLines(Docker& docker, const Sandbox& sandbox,
                                               std::string& error) {
  DockerReply reply =
      docker.Call("GET", "/containers/" + sandbox.container + "/logs?stdout=0&stderr=1");
  if (!Answered(reply, {200})) {
    error = "read the sandbox's log: " + DockerReplyProblem(reply);
    return std::nullopt;
  }
  std::string text;
  sandbox::FrameSplitter frames;
  frames.Feed(reply.body.data(), reply.body.size(),
              [&](unsigned char, const char* data, std::size_t size) { text.append(data, size); });
  std::deque<LogLine> lines;
  std::istringstream split(text);
  for (std::string line; std::getline(split, line);) {
    if (!line.starts_with(kLogPrefix)) continue;
    std::istringstream words(line.substr(kLogPrefix.size()));
    LogLine pushed;
    if (!(words >> pushed.timestamp_ms >> pushed.level >> pushed.target)) continue;
    words.get();
    std::getline(words, pushed.message);
    lines.push_back(std::move(pushed));
    if (lines.size() > 2000) lines.pop_front();
  }
  return lines;
}

// print_log_line (v0.0.111 crates/openshell-cli/src/run.rs), for a line
// without fields.
std::string Printed(const LogLine& line) {
  return fmt::format("[{}.{:03}] [{:<7}] [{:<5}] [{}] {}\n", line.timestamp_ms / 1000,
                     line.timestamp_ms % 1000, "sandbox", line.level, line.target, line.message);
}

}  // namespace

// sandbox_logs' one-shot mode (v0.0.111 crates/openshell-cli/src/run.rs):
// the last -n lines (200 by default) of the sources asked for ("all", the
// default, is every source). Only the sandbox's own lines are modelled, not
// the gateway's; --tail, --since and --level are not.
int Logs(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{.usage = kLogsUsage,
                        .flags = {{.name = "n", .short_name = 'n', .takes_value = true},
                                  {.name = "source", .takes_value = true},
                                  {.name = "tail", .modelled = false},
                                  {.name = "since", .takes_value = true, .modelled = false},
                                  {.name = "level", .takes_value = true, .modelled = false}},
                        .max_positionals = 1};
  Args args;
  if (auto code = Parse(argv, 2, grammar, ctx.version, args)) return *code;
  int exit_code = 0;
  auto count = ParseCount(args, "n", grammar.usage, 200, exit_code);
  if (!count) return exit_code;
  const std::vector<std::string> sources = args.All("source");
  const bool sandbox_lines =
      sources.empty() || std::any_of(sources.begin(), sources.end(), [](const std::string& s) {
        return s == "all" || s == "sandbox";
      });
  std::optional<Docker> docker;
  Sandbox sandbox;
  if (auto code = FindNamedSandbox(ctx, args, docker, sandbox)) return *code;
  std::string error;
  auto lines = PushedLines(*docker, sandbox, error);
  if (!lines) return PrintError(GrpcError("Internal", error));
  if (!sandbox_lines) return 0;
  const std::size_t first = lines->size() > *count ? lines->size() - *count : 0;
  std::string out;
  for (std::size_t i = first; i < lines->size(); ++i) out += Printed((*lines)[i]);
  Print(out);
  return 0;
}

int PolicyUpdate(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{
      .usage = kUpdateUsage,
      .flags = {{.name = "add-endpoint", .takes_value = true},
                {.name = "binary", .takes_value = true},
                {.name = "rule-name", .takes_value = true},
                {.name = "wait"},
                {.name = "timeout", .takes_value = true},
                {.name = "remove-endpoint", .takes_value = true, .modelled = false},
                {.name = "add-allow", .takes_value = true, .modelled = false},
                {.name = "add-deny", .takes_value = true, .modelled = false},
                {.name = "remove-rule", .takes_value = true, .modelled = false},
                {.name = "dry-run", .modelled = false}},
      .max_positionals = 1};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  int exit_code = 0;
  auto timeout = ParseCount(args, "timeout", grammar.usage, 60, exit_code);
  if (!timeout) return exit_code;
  const std::vector<std::string> binaries = args.All("binary");
  const std::vector<std::string> specs = args.All("add-endpoint");
  // build_policy_update_plan's checks (policy_update.rs).
  if (std::any_of(binaries.begin(), binaries.end(),
                  [](const std::string& b) { return Trim(b).empty(); })) {
    return PrintError("--binary values must not be empty");
  }
  if (!binaries.empty() && specs.empty()) {
    return PrintError("--binary can only be used with --add-endpoint");
  }
  if (args.Has("rule-name") && specs.size() != 1) {
    return PrintError(specs.empty() ? "--rule-name can only be used with --add-endpoint"
                                    : "--rule-name is only supported when exactly one "
                                      "--add-endpoint is provided");
  }
  std::vector<EndpointSpec> endpoints(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (auto code = ParseEndpoint(specs[i], endpoints[i])) return *code;
  }
  std::optional<Docker> docker;
  Sandbox sandbox;
  if (auto code = FindNamedSandbox(ctx, args, docker, sandbox)) return *code;
  return ApplyUpdate(ctx, *docker, sandbox, endpoints, binaries, args.Last("rule-name"),
                     args.Has("wait"), *timeout);
}

}  // namespace mojoup::fake_openshell

// fake-openshell: a stand-in for NVIDIA OpenShell's `openshell` CLI whose
// sandboxes are real containers on the local dockerd (Engine API /v1.40).
//
// It reads its options from fake-openshell.json beside the name it was
// started by (see mojoup/sandbox/testing/fake_openshell_sandbox.h), appends
// its argv to openshell-calls.jsonl there, and then answers as the configured
// release of the real CLI and gateway would. A flag that release lacks is a
// clap error (exit 2); a real command or flag this double does not model is
// refused with exit 2 and says so, rather than pretending.
//
// Grammar, by release (from the CLI's clap definitions, v0.0.37 to v0.0.111):
//   --version | -V
//   status [-o json]                       gateway info [-o json]
//   sandbox create [--name N] [--from IMAGE] [--policy FILE] [--label K=V]...
//                  [--driver-config-json JSON]  0.0.58+ (Docker mounts: 0.0.61+)
//                  [--env K=V]...               0.0.59+
//                  [-o table|json]              0.0.92+, not with a command
//                  [--detach]                   0.0.111+
//                  [--tty|--no-tty] [-- CMD...]
//   sandbox list [--selector k=v,...] [-o json] (0.0.44+) [--limit N]
//                [--offset N] [--ids|--names]
//   sandbox get NAME [-o json] (0.0.92+)
//   sandbox exec -n NAME [--workdir D] [--timeout SECS] [--tty|--no-tty]
//                [--env K=V]... (0.0.59+) [--] CMD...
//   sandbox delete NAME... | --all
//
// A sandbox is a container labelled openshell.ai/managed-by=openshell,
// openshell.ai/sandbox-name, openshell.ai/sandbox-id and
// openshell.ai/sandbox-namespace (one namespace per install directory, so
// fakes installed side by side are separate gateways). Its phase comes from
// the container's state (running: Ready, exited: Error, ...) unless the
// label fake-openshell.phase=Error pins it.
#include <fcntl.h>
#include <poll.h>
#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <compare>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "fmt/format.h"
#include "mojoup/internal/docker_api_version.h"
#include "mojoup/probe/docker_api.h"
#include "mojoup/probe/kernel.h"
#include "stream_pump.h"

namespace {

using mojoup::probe::DockerReply;
using mojoup::probe::DockerReplyProblem;
using StringMap = std::map<std::string, std::string>;

constexpr std::size_t kMaxStdin = 4 * 1024 * 1024;  // the CLI's MAX_STDIN_PAYLOAD
constexpr int kTimedOutExit = 124;

constexpr const char* kManagedBy = "openshell.ai/managed-by";
constexpr const char* kSandboxName = "openshell.ai/sandbox-name";
constexpr const char* kSandboxId = "openshell.ai/sandbox-id";
constexpr const char* kNamespace = "openshell.ai/sandbox-namespace";
constexpr const char* kWorkspace = "openshell.ai/sandbox-workspace";
// The double's own bookkeeping: the --label pairs as given (Docker labels mix
// them with ours) and a pinned phase.
constexpr const char* kUserLabels = "fake-openshell.labels";
constexpr const char* kPinnedPhase = "fake-openshell.phase";

// Where OpenShell keeps its own state inside a sandbox; mounts may not touch.
constexpr std::string_view kReservedRoots[] = {
    "/opt/openshell",         "/etc/openshell", "/etc/openshell-tls", "/run/openshell",
    "/run/openshell-sidecar", "/run/netns",     "/var/run/netns"};
// The workspace when the image declares no WORKDIR.
constexpr std::string_view kDefaultWorkspace = "/sandbox";

constexpr std::string_view kGatewayServer = "https://127.0.0.1:17670";

// ---------------------------------------------------------------------------
// Options, versions, output

struct Options {
  std::string version = "0.0.111";
  std::string gateway = "connected";
  bool enable_bind_mounts = true;
  std::string fail_create;
  bool phase_error = false;
  std::string network = "openshell";
};

struct Version {
  int major = 0;
  int minor = 0;
  int patch = 0;
  friend auto operator<=>(const Version&, const Version&) = default;
};

// "0.0.112-dev.6+gabc1234" reads as 0.0.112.
Version ParseVersion(std::string_view text) {
  Version version;
  int* parts[] = {&version.major, &version.minor, &version.patch};
  std::size_t at = 0;
  if (at < text.size() && text[at] == 'v') ++at;
  for (int* part : parts) {
    int value = 0;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
      value = value * 10 + (text[at] - '0');
      ++at;
    }
    *part = value;
    if (at >= text.size() || text[at] != '.') break;
    ++at;
  }
  return version;
}

constexpr Version Release(int patch) { return Version{0, 0, patch}; }

struct Context {
  Options options;
  Version version;
  std::string namespace_name;  // openshell.ai/sandbox-namespace of this install
};

void Print(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// The CLI reports errors through miette; without a terminal it draws "x".
int PrintError(std::string_view message) {
  std::fflush(stdout);
  fmt::print(stderr, "Error:   x {}\n", message);
  return 1;
}

// A Rust `{:?}` of a string.
std::string Quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

// How a gateway error (a tonic::Status) reaches the user.
std::string GrpcError(std::string_view code, std::string_view message) {
  return fmt::format(
      "status: {}, message: {}, details: [], metadata: MetadataMap {{ headers: {{}} }}", code,
      Quoted(message));
}

int ClapError(std::string_view message, std::string_view usage, std::string_view tip = {}) {
  std::string text = fmt::format("error: {}\n\n", message);
  if (!tip.empty()) text += fmt::format("  tip: {}\n\n", tip);
  text += fmt::format("Usage: {}\n\nFor more information, try '--help'.\n", usage);
  std::fputs(text.c_str(), stderr);
  return 2;
}

int NotModelled(std::string_view what) {
  fmt::print(stderr, "fake-openshell: {} is not implemented by this test double\n", what);
  return 2;
}

// ---------------------------------------------------------------------------
// Finding the install directory, logging the call, reading the options

// The directory of the `openshell` that was run: argv[0]'s, or where PATH
// found it. Not /proc/self/exe: that is the link's target, the build tree.
std::string ProgramDir(const std::string& argv0) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (argv0.find('/') != std::string::npos) {
    return fs::absolute(fs::path(argv0), ec).parent_path().string();
  }
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::stringstream entries(path);
    std::string entry;
    while (std::getline(entries, entry, ':')) {
      if (entry.empty()) entry = ".";
      const std::string candidate = entry + "/" + argv0;
      if (::access(candidate.c_str(), X_OK) == 0) {
        return fs::absolute(fs::path(entry), ec).string();
      }
    }
  }
  // What execve was given, when the caller's PATH search differed from ours.
  if (auto execfn = reinterpret_cast<const char*>(::getauxval(AT_EXECFN)); execfn != nullptr) {
    std::string name = execfn;
    if (name.find('/') != std::string::npos) {
      return fs::absolute(fs::path(name), ec).parent_path().string();
    }
  }
  return {};
}

void LogCall(const std::string& dir, const std::vector<std::string>& argv) {
  if (dir.empty()) return;
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartArray();
  for (const std::string& arg : argv) w.String(arg);
  w.EndArray();
  std::string line(buffer.GetString(), buffer.GetSize());
  line += '\n';
  const std::string path = dir + "/openshell-calls.jsonl";
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  // One write per line, so concurrent invocations do not interleave.
  [[maybe_unused]] ssize_t put = ::write(fd, line.data(), line.size());
  ::close(fd);
}

bool LoadOptions(const std::string& dir, Options& options, std::string& error) {
  const std::string path = dir + "/fake-openshell.json";
  std::ifstream in(path);
  if (!in) return true;  // no file: the defaults
  std::stringstream text;
  text << in.rdbuf();
  rapidjson::Document doc;
  doc.Parse(text.str().c_str());
  if (doc.HasParseError() || !doc.IsObject()) {
    error = path + " is not a JSON object";
    return false;
  }
  auto string = [&](const char* key, std::string& out) {
    if (doc.HasMember(key) && doc[key].IsString()) out = doc[key].GetString();
  };
  auto boolean = [&](const char* key, bool& out) {
    if (doc.HasMember(key) && doc[key].IsBool()) out = doc[key].GetBool();
  };
  string("version", options.version);
  string("gateway", options.gateway);
  boolean("enable_bind_mounts", options.enable_bind_mounts);
  string("fail_create", options.fail_create);
  boolean("phase_error", options.phase_error);
  string("network", options.network);
  return true;
}

// A short stable name for the install directory (FNV-1a).
std::string NamespaceFor(const std::string& dir) {
  std::error_code ec;
  std::string canonical = dir.empty() ? "" : std::filesystem::weakly_canonical(dir, ec).string();
  if (canonical.empty()) return "default";
  std::uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : canonical) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return fmt::format("fake-{:08x}", static_cast<std::uint32_t>(hash ^ (hash >> 32)));
}

std::string RandomHex(std::size_t digits) {
  std::random_device device;
  std::string out;
  while (out.size() < digits) out += fmt::format("{:08x}", device());
  out.resize(digits);
  return out;
}

std::string NewSandboxId() {
  std::string hex = RandomHex(32);
  return fmt::format("{}-{}-{}-{}-{}", hex.substr(0, 8), hex.substr(8, 4), hex.substr(12, 4),
                     hex.substr(16, 4), hex.substr(20));
}

// ---------------------------------------------------------------------------
// Arguments, the way clap reads them

struct FlagSpec {
  std::string_view name;  // the long name, without dashes
  char short_name = 0;
  bool takes_value = false;
  Version since{};
  bool modelled = true;
};

struct Grammar {
  std::string_view usage;
  std::vector<FlagSpec> flags;
  std::size_t max_positionals = 0;
  // exec: the first word that is not an option starts the command.
  bool command_at_first_positional = false;
};

struct Args {
  std::map<std::string, std::vector<std::string>, std::less<>> values;
  std::vector<std::string> positionals;
  std::vector<std::string> command;

  bool Has(std::string_view flag) const { return values.find(flag) != values.end(); }
  std::string Last(std::string_view flag) const {
    auto it = values.find(flag);
    return it == values.end() ? std::string() : it->second.back();
  }
  std::vector<std::string> All(std::string_view flag) const {
    auto it = values.find(flag);
    return it == values.end() ? std::vector<std::string>() : it->second;
  }
};

std::string Placeholder(std::string_view name) {
  std::string out;
  for (char c : name) {
    out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

// Returns the exit code of a grammar error, or nothing when `args` is filled.
std::optional<int> Parse(const std::vector<std::string>& argv, std::size_t first,
                         const Grammar& grammar, const Version& version, Args& args) {
  auto known = [&](auto match) -> const FlagSpec* {
    for (const FlagSpec& spec : grammar.flags) {
      if (match(spec) && version >= spec.since) return &spec;
    }
    return nullptr;
  };
  bool in_command = false;
  for (std::size_t i = first; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (in_command) {
      args.command.push_back(arg);
      continue;
    }
    if (arg == "--") {
      in_command = true;
      continue;
    }
    const FlagSpec* spec = nullptr;
    std::string shown = arg;
    std::string value;
    bool inline_value = false;
    if (arg.size() > 2 && arg.starts_with("--")) {
      std::string name = arg.substr(2);
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name.resize(eq);
        inline_value = true;
        shown = "--" + name;
      }
      spec = known([&](const FlagSpec& s) { return s.name == name; });
    } else if (arg.size() > 1 && arg[0] == '-') {
      spec = known([&](const FlagSpec& s) { return s.short_name == arg[1]; });
      shown = arg.substr(0, 2);
      if (arg.size() > 2) {
        value = arg.substr(arg[2] == '=' ? 3 : 2);
        inline_value = true;
      }
    } else {
      if (args.positionals.size() < grammar.max_positionals) {
        args.positionals.push_back(arg);
      } else if (grammar.command_at_first_positional) {
        in_command = true;
        args.command.push_back(arg);
      } else {
        return ClapError(fmt::format("unexpected argument '{}' found", arg), grammar.usage);
      }
      continue;
    }
    if (spec == nullptr) {
      return ClapError(fmt::format("unexpected argument '{}' found", shown), grammar.usage,
                       fmt::format("to pass '{}' as a value, use '-- {}'", shown, shown));
    }
    if (!spec->modelled) return NotModelled(fmt::format("`--{}`", spec->name));
    if (spec->takes_value) {
      if (!inline_value) {
        if (i + 1 >= argv.size()) {
          return ClapError(fmt::format("a value is required for '--{} <{}>' but none was supplied",
                                       spec->name, Placeholder(spec->name)),
                           grammar.usage);
        }
        value = argv[++i];
      }
    } else if (inline_value) {
      return ClapError(fmt::format("unexpected value '{}' for '--{}' found; no more were expected",
                                   value, spec->name),
                       grammar.usage);
    }
    args.values[std::string(spec->name)].push_back(value);
  }
  return std::nullopt;
}

// -o / --output: table (the default) or json.
std::optional<int> OutputFormat(const Args& args, std::string_view usage, std::string& format) {
  format = args.Has("output") ? args.Last("output") : "table";
  if (format == "table" || format == "json") return std::nullopt;
  if (format == "yaml") return NotModelled("`--output yaml`");
  return ClapError(fmt::format("invalid value '{}' for '--output <OUTPUT>'\n  [possible values: "
                               "table, json, yaml]",
                               format),
                   usage);
}

// ---------------------------------------------------------------------------
// The gateway

std::string StatusJson(const Context& ctx) {
  const std::string& state = ctx.options.gateway;
  auto body = [&](std::string_view status, std::string_view extra) {
    return fmt::format(
        "{{\n  \"gateway\": \"local\",\n  \"server\": \"{}\",\n  \"status\": \"{}\"{}\n}}\n",
        kGatewayServer, status, extra);
  };
  if (state == "connected") {
    return body("connected",
                fmt::format(",\n  \"version\": \"{}\",\n  \"authentication\": {{\"status\": "
                            "\"authenticated\", \"provider\": \"mTLS transport\"}}",
                            ctx.options.version));
  }
  if (state == "connected_http") {
    return body("connected_http",
                ",\n  \"http_status\": \"200 OK\",\n  \"authentication\": {\"status\": "
                "\"not_required\", \"mode\": \"gateway\"}");
  }
  if (state == "unauthenticated") {
    return body("connected",
                fmt::format(",\n  \"version\": \"{}\",\n  \"authentication\": {{\"status\": "
                            "\"failed\", \"error\": \"OIDC credentials are missing; run `openshell "
                            "gateway login local`\"}}",
                            ctx.options.version));
  }
  if (state == "error") {
    return body("error",
                ",\n  \"http_status\": \"503 Service Unavailable\",\n  \"error\": \"status: "
                "Unavailable, message: \\\"compute driver not ready\\\"\"");
  }
  if (state == "disconnected") {
    return body("disconnected",
                ",\n  \"http_status\": \"502 Bad Gateway\",\n  \"error\": \"transport error\"");
  }
  return "{\"status\": \"not_configured\"}\n";
}

void PrintUnreachable() {
  std::fputs(
      "Error:   x client error (Connect)\n  -> tcp connect error: Connection refused (os "
      "error 111)\n",
      stderr);
}

// Sandbox commands need a gateway that answers and accepts us.
std::optional<int> GatewayRefuses(const Context& ctx) {
  const std::string& state = ctx.options.gateway;
  if (state == "connected" || state == "connected_http") return std::nullopt;
  if (state == "unreachable") {
    return PrintError(
        fmt::format("failed to connect to gateway 'local' at {}: client error (Connect): "
                    "tcp connect error: Connection refused (os error 111)",
                    kGatewayServer));
  }
  if (state == "unauthenticated") {
    return PrintError(GrpcError(
        "Unauthenticated", "OIDC credentials are missing; run `openshell gateway login local`"));
  }
  if (state == "error") return PrintError(GrpcError("Unavailable", "compute driver not ready"));
  if (state == "disconnected") {
    return PrintError(GrpcError("Unavailable", "transport error: 502 Bad Gateway"));
  }
  if (state == "not_configured") {
    return PrintError("No active gateway. Set one with: openshell gateway select <name>");
  }
  return PrintError(fmt::format("fake-openshell: unknown gateway state '{}'", state));
}

int Status(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{.usage = "openshell status [OPTIONS]",
                        .flags = {{.name = "output", .short_name = 'o', .takes_value = true}}};
  Args args;
  if (auto code = Parse(argv, 2, grammar, ctx.version, args)) return *code;
  std::string format;
  if (auto code = OutputFormat(args, grammar.usage, format)) return *code;
  if (ctx.options.gateway == "unreachable") {
    PrintUnreachable();
    return 1;
  }
  if (format == "json") {
    Print(StatusJson(ctx));
    return 0;
  }
  if (ctx.options.gateway == "not_configured") {
    Print("Gateway Status\n\n  Status: No gateway configured.\n");
    return 0;
  }
  Print(fmt::format("Gateway Status\n\n  Gateway: local\n  Server: {}\n  Status: {}\n",
                    kGatewayServer, ctx.options.gateway));
  return 0;
}

int GatewayInfo(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{.usage = "openshell gateway info [OPTIONS]",
                        .flags = {{.name = "output", .short_name = 'o', .takes_value = true}}};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  std::string format;
  if (auto code = OutputFormat(args, grammar.usage, format)) return *code;
  if (ctx.options.gateway == "unreachable") {
    PrintUnreachable();
    return 1;
  }
  if (ctx.options.gateway != "error") {
    if (auto code = GatewayRefuses(ctx)) return *code;
  }
  const char* health = ctx.options.gateway == "error" ? "unhealthy" : "healthy";
  if (format == "json") {
    Print(
        fmt::format("{{\"status\": \"{}\", \"version\": \"{}\", \"compute_drivers\": "
                    "[\"docker\"]}}\n",
                    health, ctx.options.version));
  } else {
    Print(fmt::format("Gateway: local\n  Status: {}\n  Version: {}\n  Compute drivers: docker\n",
                      health, ctx.options.version));
  }
  return 0;
}

// ---------------------------------------------------------------------------
// Docker

std::string PercentEncode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

class Docker {
 public:
  Docker(mojoup::probe::DockerEndpoint endpoint, std::unique_ptr<mojoup::probe::DockerApi> api)
      : endpoint_(std::move(endpoint)), api_(std::move(api)) {}

  DockerReply Call(std::string_view method, const std::string& path, std::string_view body = {},
                   std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    return api_->Send(endpoint_, method, std::string(mojoup::internal::kDockerApiPrefix) + path,
                      body, timeout);
  }

  DockerReply Upgrade(const std::string& path, std::string_view body,
                      mojoup::probe::DockerStream& stream) {
    return api_->Upgrade(endpoint_, "POST", std::string(mojoup::internal::kDockerApiPrefix) + path,
                         body, std::chrono::seconds(60), stream);
  }

 private:
  mojoup::probe::DockerEndpoint endpoint_;
  std::unique_ptr<mojoup::probe::DockerApi> api_;
};

std::optional<Docker> ConnectDocker(std::string& error) {
  auto kernel = mojoup::probe::MakeSystemKernel();
  auto endpoint = mojoup::probe::ResolveDockerEndpoint(*kernel);
  if (!endpoint.ok()) {
    error = std::string(endpoint.status().message());
    return std::nullopt;
  }
  return Docker(*endpoint, mojoup::probe::MakeDockerApi());
}

bool Answered(const DockerReply& reply, std::initializer_list<int> statuses) {
  return reply.failure == DockerReply::Failure::kNone &&
         std::find(statuses.begin(), statuses.end(), reply.status) != statuses.end();
}

int DockerFailed(std::string_view what, const DockerReply& reply) {
  return PrintError(GrpcError("Internal", fmt::format("{}: {}", what, DockerReplyProblem(reply))));
}

int NoDocker(std::string_view why) {
  return PrintError(GrpcError("Unavailable", fmt::format("docker compute driver: {}", why)));
}

void WriteAllWaiting(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t put = ::write(fd, data, size);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0 && errno == EAGAIN) {
      pollfd wait{fd, POLLOUT, 0};
      ::poll(&wait, 1, -1);
      continue;
    }
    if (put <= 0) return;
    data += put;
    size -= static_cast<std::size_t>(put);
  }
}

// ---------------------------------------------------------------------------
// Sandboxes as containers

struct Sandbox {
  std::string container;
  std::string id;
  std::string name;
  StringMap labels;  // the user's --label pairs
  std::int64_t created = 0;
  std::string phase;
};

std::string PhaseOf(std::string_view state, bool pinned_error) {
  if (pinned_error) return "Error";
  if (state == "running") return "Ready";
  if (state == "created") return "Provisioning";
  if (state == "restarting") return "Starting";
  if (state == "paused") return "Stopped";
  if (state == "removing") return "Deleting";
  if (state == "exited" || state == "dead") return "Error";
  return "Unknown";
}

std::string FormatCreated(std::int64_t seconds) {
  std::time_t when = static_cast<std::time_t>(seconds);
  std::tm utc{};
  if (seconds <= 0 || ::gmtime_r(&when, &utc) == nullptr) return "-";
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", utc.tm_year + 1900, utc.tm_mon + 1,
                     utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
}

// This install's sandboxes whose Docker labels include every `match` pair,
// oldest first. Nothing when Docker does not answer (`error` says why).
std::optional<std::vector<Sandbox>> ListSandboxes(Docker& docker, const Context& ctx,
                                                  const std::vector<std::string>& match,
                                                  std::string& error) {
  rapidjson::StringBuffer filters;
  {
    rapidjson::Writer<rapidjson::StringBuffer> w(filters);
    w.StartObject();
    w.Key("label");
    w.StartArray();
    w.String(fmt::format("{}=openshell", kManagedBy));
    w.String(fmt::format("{}={}", kNamespace, ctx.namespace_name));
    for (const std::string& pair : match) w.String(pair);
    w.EndArray();
    w.EndObject();
  }
  DockerReply reply =
      docker.Call("GET", "/containers/json?all=1&filters=" + PercentEncode(filters.GetString()));
  if (!Answered(reply, {200})) {
    error = "list containers: " + DockerReplyProblem(reply);
    return std::nullopt;
  }
  rapidjson::Document body;
  body.Parse(reply.body.c_str());
  if (body.HasParseError() || !body.IsArray()) {
    error = "Docker's container list is not a JSON array";
    return std::nullopt;
  }
  std::vector<Sandbox> found;
  for (const auto& item : body.GetArray()) {
    if (!item.IsObject() || !item.HasMember("Id") || !item["Id"].IsString()) continue;
    StringMap docker_labels;
    if (item.HasMember("Labels") && item["Labels"].IsObject()) {
      for (const auto& label : item["Labels"].GetObject()) {
        if (label.value.IsString()) docker_labels[label.name.GetString()] = label.value.GetString();
      }
    }
    Sandbox sandbox;
    sandbox.container = item["Id"].GetString();
    sandbox.id = docker_labels[kSandboxId];
    sandbox.name = docker_labels[kSandboxName];
    if (item.HasMember("Created") && item["Created"].IsInt64()) {
      sandbox.created = item["Created"].GetInt64();
    }
    const std::string state =
        item.HasMember("State") && item["State"].IsString() ? item["State"].GetString() : "";
    sandbox.phase = PhaseOf(state, docker_labels[kPinnedPhase] == "Error");
    rapidjson::Document user;
    user.Parse(docker_labels[kUserLabels].c_str());
    if (!user.HasParseError() && user.IsObject()) {
      for (const auto& label : user.GetObject()) {
        if (label.value.IsString())
          sandbox.labels[label.name.GetString()] = label.value.GetString();
      }
    }
    found.push_back(std::move(sandbox));
  }
  std::sort(found.begin(), found.end(), [](const Sandbox& a, const Sandbox& b) {
    return std::tie(a.created, a.name) < std::tie(b.created, b.name);
  });
  return found;
}

// The sandbox called `name`; nothing if there is none (`error` stays empty)
// or Docker failed (`error` says why).
std::optional<Sandbox> FindSandbox(Docker& docker, const Context& ctx, const std::string& name,
                                   std::string& error) {
  auto found = ListSandboxes(docker, ctx, {fmt::format("{}={}", kSandboxName, name)}, error);
  if (!found || found->empty()) return std::nullopt;
  return found->front();
}

using JsonWriter = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

// sandbox_to_json as the release has it (serde_json sorts the keys); `get`
// adds the policy fields.
void WriteSandbox(JsonWriter& w, const Sandbox& sandbox, const Version& version, bool detail) {
  w.StartObject();
  if (version >= Release(84)) {
    w.Key("annotations");
    w.StartObject();
    w.EndObject();
  }
  w.Key("created_at");
  w.String(FormatCreated(sandbox.created));
  w.Key("current_policy_version");
  w.Int(0);
  w.Key("id");
  w.String(sandbox.id);
  w.Key("labels");
  w.StartObject();
  for (const auto& [key, value] : sandbox.labels) {
    w.Key(key.c_str());
    w.String(value);
  }
  w.EndObject();
  w.Key("name");
  w.String(sandbox.name);
  w.Key("phase");
  w.String(sandbox.phase);
  if (detail) {
    w.Key("policy");
    w.Null();
    w.Key("policy_source");
    w.String("sandbox");
  }
  w.Key("resource_version");
  w.Int(0);
  if (detail) {
    w.Key("revision");
    w.Null();
  }
  if (version >= Release(88)) {
    w.Key("workspace");
    w.String("default");
  }
  w.EndObject();
}

std::string SandboxJson(const Sandbox& sandbox, const Version& version, bool detail) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.SetIndent(' ', 2);
  WriteSandbox(w, sandbox, version, detail);
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

// ---------------------------------------------------------------------------
// Running a command in a sandbox

// POSIX single quotes, the way the gateway quotes each word before handing
// the command line to the sandbox's shell.
std::string ShellQuote(std::string_view word) {
  if (word.empty()) return "''";
  bool plain = std::all_of(word.begin(), word.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '/' || c == '-' || c == '_';
  });
  if (plain) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\"'\"'";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// The gateway runs `cd WORKDIR && K=V... CMD...` through the sandbox's shell
// (over SSH), not the argv directly: a missing workdir is the shell's error.
std::string RemoteCommandLine(const std::vector<std::string>& command, const StringMap& env,
                              const std::string& workdir) {
  std::vector<std::string> words;
  for (const auto& [key, value] : env) words.push_back(key + "=" + ShellQuote(value));
  for (const std::string& word : command) words.push_back(ShellQuote(word));
  std::string line;
  for (const std::string& word : words) {
    if (!line.empty()) line += ' ';
    line += word;
  }
  if (!workdir.empty()) line = "cd " + ShellQuote(workdir) + " && " + line;
  return line;
}

std::optional<std::string> CreateExec(Docker& docker, const std::string& container,
                                      const std::vector<std::string>& argv, bool stdin_attached,
                                      std::string& error) {
  rapidjson::StringBuffer body;
  {
    rapidjson::Writer<rapidjson::StringBuffer> w(body);
    w.StartObject();
    w.Key("AttachStdin");
    w.Bool(stdin_attached);
    w.Key("AttachStdout");
    w.Bool(true);
    w.Key("AttachStderr");
    w.Bool(true);
    w.Key("Tty");
    w.Bool(false);
    // No "User": an exec runs as the container's user, the policy's
    // run_as_user the sandbox was created with.
    w.Key("Cmd");
    w.StartArray();
    for (const std::string& word : argv) w.String(word);
    w.EndArray();
    w.EndObject();
  }
  DockerReply reply = docker.Call("POST", "/containers/" + container + "/exec", body.GetString());
  if (!Answered(reply, {201})) {
    error = "create exec: " + DockerReplyProblem(reply);
    return std::nullopt;
  }
  rapidjson::Document created;
  created.Parse(reply.body.c_str());
  if (created.HasParseError() || !created.IsObject() || !created.HasMember("Id") ||
      !created["Id"].IsString()) {
    error = "Docker's answer to exec create has no id";
    return std::nullopt;
  }
  return std::string(created["Id"].GetString());
}

// A command that outlived --timeout is killed with its process group (runc
// makes each exec a session leader): from the host when we may, else from
// inside the sandbox as its own user.
void KillExec(Docker& docker, const std::string& container, const std::string& exec_id) {
  DockerReply reply = docker.Call("GET", "/exec/" + exec_id + "/json");
  rapidjson::Document info;
  info.Parse(reply.body.c_str());
  if (!Answered(reply, {200}) || info.HasParseError() || !info.IsObject() ||
      !info.HasMember("Pid") || !info["Pid"].IsInt() || info["Pid"].GetInt() <= 0) {
    return;
  }
  const pid_t pid = info["Pid"].GetInt();
  if (::kill(-pid, SIGKILL) == 0 || ::kill(pid, SIGKILL) == 0) return;
  // Its pid inside the sandbox: the last NSpid entry.
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  std::string inner;
  while (std::getline(status, line)) {
    if (!line.starts_with("NSpid:")) continue;
    std::istringstream fields(line.substr(6));
    for (std::string field; fields >> field;) inner = field;
  }
  if (inner.empty()) return;
  std::string error;
  auto killer =
      CreateExec(docker, container,
                 {"/bin/sh", "-c", fmt::format("kill -9 -{0} 2>/dev/null || kill -9 {0}", inner)},
                 false, error);
  if (killer) docker.Call("POST", "/exec/" + *killer + "/start", R"({"Detach":true,"Tty":false})");
}

// Runs `argv` in the container with `input` as its whole stdin, its stdout
// and stderr copied to ours as they arrive. Returns its exit code (124 when
// `timeout_seconds` ran out), or nothing when Docker failed (`error`).
std::optional<int> RunInSandbox(Docker& docker, const std::string& container,
                                const std::vector<std::string>& argv, const std::string& input,
                                unsigned timeout_seconds, std::string& error) {
  auto exec_id = CreateExec(docker, container, argv, !input.empty(), error);
  if (!exec_id) return std::nullopt;
  mojoup::probe::DockerStream stream;
  DockerReply started =
      docker.Upgrade("/exec/" + *exec_id + "/start", R"({"Detach":false,"Tty":false})", stream);
  if (!Answered(started, {101, 200})) {
    error = "start exec: " + DockerReplyProblem(started);
    return std::nullopt;
  }
  const int fd = stream.fd;
  if (int flags = ::fcntl(fd, F_GETFL); flags >= 0 && (flags & O_NONBLOCK) != 0) {
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  std::thread feeder;
  if (!input.empty()) {
    feeder = std::thread([fd, &input] {
      WriteAllWaiting(fd, input.data(), input.size());
      ::shutdown(fd, SHUT_WR);  // the command sees end of file
    });
  }

  mojoup::sandbox::FrameSplitter frames;
  auto deliver = [](unsigned char which, const char* data, std::size_t size) {
    WriteAllWaiting(which == 2 ? STDERR_FILENO : STDOUT_FILENO, data, size);
  };
  frames.Feed(stream.pending.data(), stream.pending.size(), deliver);
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_seconds);
  bool timed_out = false;
  std::vector<char> buffer(64 * 1024);
  while (true) {
    int wait_ms = -1;
    if (timeout_seconds > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(std::min<std::int64_t>(left.count(), 1000));
    }
    pollfd ready{fd, POLLIN, 0};
    int polled = ::poll(&ready, 1, wait_ms);
    if (polled < 0 && errno == EINTR) continue;
    if (polled == 0) continue;
    ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    frames.Feed(buffer.data(), static_cast<std::size_t>(got), deliver);
  }
  if (timed_out) KillExec(docker, container, *exec_id);
  ::shutdown(fd, SHUT_RDWR);  // frees a feeder still writing to a command that quit reading
  if (feeder.joinable()) feeder.join();
  ::close(fd);
  if (timed_out) return kTimedOutExit;

  // The stream ends as the command exits; Docker records the code a moment later.
  for (int attempt = 0; attempt < 100; ++attempt) {
    DockerReply reply = docker.Call("GET", "/exec/" + *exec_id + "/json");
    if (!Answered(reply, {200})) {
      error = "inspect exec: " + DockerReplyProblem(reply);
      return std::nullopt;
    }
    rapidjson::Document info;
    info.Parse(reply.body.c_str());
    if (!info.HasParseError() && info.IsObject() && info.HasMember("Running") &&
        info["Running"].IsBool() && !info["Running"].GetBool() && info.HasMember("ExitCode") &&
        info["ExitCode"].IsInt()) {
      return info["ExitCode"].GetInt();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  error = "the command's exit code never arrived";
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// Validation the CLI and the gateway do

// --env KEY=VALUE pairs, checked as the CLI checks them. Empty `error` on success.
StringMap ParseEnv(const std::vector<std::string>& items, std::string& error) {
  StringMap env;
  for (const std::string& item : items) {
    auto eq = item.find('=');
    std::string key = item.substr(0, eq);
    if (eq == std::string::npos || key.empty()) {
      error = fmt::format("--env expects KEY=VALUE; got '{}'", item);
      return {};
    }
    bool valid = !std::isdigit(static_cast<unsigned char>(key[0])) &&
                 std::all_of(key.begin(), key.end(),
                             [](unsigned char c) { return std::isalnum(c) || c == '_'; });
    if (!valid) {
      error = fmt::format("--env key must match [A-Za-z_][A-Za-z0-9_]*; got '{}'", key);
      return {};
    }
    if (key.starts_with("OPENSHELL_")) {
      error = fmt::format("--env keys starting with OPENSHELL_ are reserved; got '{}'", key);
      return {};
    }
    env[key] = item.substr(eq + 1);
  }
  return env;
}

bool LabelChars(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.';
  });
}

bool AlnumAtEnds(std::string_view text) {
  return !text.empty() && std::isalnum(static_cast<unsigned char>(text.front())) &&
         std::isalnum(static_cast<unsigned char>(text.back()));
}

// Kubernetes label rules, which the gateway enforces. Empty when valid.
std::string LabelProblem(const std::string& key, const std::string& value) {
  std::string_view name = key;
  if (auto slash = key.find('/'); slash != std::string::npos) {
    std::string_view prefix = std::string_view(key).substr(0, slash);
    name = std::string_view(key).substr(slash + 1);
    bool dns = !prefix.empty() && prefix.size() <= 253 &&
               std::all_of(prefix.begin(), prefix.end(),
                           [](unsigned char c) {
                             return std::islower(c) || std::isdigit(c) || c == '-' || c == '.';
                           }) &&
               std::isalnum(static_cast<unsigned char>(prefix.front())) &&
               std::isalnum(static_cast<unsigned char>(prefix.back())) &&
               prefix.find("..") == std::string_view::npos;
    if (!dns) return fmt::format("label key prefix must be a DNS subdomain: '{}'", key);
  }
  if (key.size() > 253 || name.empty() || name.size() > 63 || !LabelChars(name) ||
      !AlnumAtEnds(name)) {
    return fmt::format(
        "label key name segment must be 1 to 63 characters of alphanumerics, '-', '_' or '.', "
        "starting and ending with an alphanumeric: '{}'",
        key);
  }
  if (!value.empty() && (value.size() > 63 || !LabelChars(value) || !AlnumAtEnds(value))) {
    return fmt::format(
        "label value must be at most 63 characters of alphanumerics, '-', '_' or '.', starting "
        "and ending with an alphanumeric: '{}'",
        value);
  }
  return {};
}

std::string Trim(std::string_view text) {
  auto begin = text.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  auto end = text.find_last_not_of(" \t\r");
  return std::string(text.substr(begin, end - begin + 1));
}

std::string Unquote(std::string text) {
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') &&
      text.back() == text.front()) {
    return text.substr(1, text.size() - 2);
  }
  return text;
}

struct ProcessIdentity {
  std::string user;   // run_as_user as written, "" when absent
  std::string group;  // run_as_group
};

// process.run_as_user / run_as_group from a policy YAML, by lines: the
// `process:` block's indented `key: value` entries.
ProcessIdentity ReadProcessIdentity(const std::string& yaml) {
  ProcessIdentity identity;
  std::istringstream lines(yaml);
  bool in_process = false;
  for (std::string line; std::getline(lines, line);) {
    if (auto hash = line.find(" #"); hash != std::string::npos) line.resize(hash);
    std::string trimmed = Trim(line);
    if (trimmed.empty() || trimmed.front() == '#') continue;
    if (line.front() != ' ' && line.front() != '\t') {
      in_process = trimmed.starts_with("process:");
      continue;
    }
    if (!in_process) continue;
    auto colon = trimmed.find(':');
    if (colon == std::string::npos) continue;
    std::string key = Trim(std::string_view(trimmed).substr(0, colon));
    std::string value = Unquote(Trim(std::string_view(trimmed).substr(colon + 1)));
    if (key == "run_as_user") identity.user = value;
    if (key == "run_as_group") identity.group = value;
  }
  return identity;
}

std::optional<std::uint32_t> NumericId(const std::string& text) {
  if (text.empty() || text.size() > 10 ||
      !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return std::nullopt;
  }
  std::uint64_t value = std::stoull(text);
  if (value >= 0xFFFFFFFFull) return std::nullopt;
  return static_cast<std::uint32_t>(value);
}

// What a release accepts for run_as_user / run_as_group: `sandbox` only
// before 0.0.76, a uid >= 1000 from 0.0.76, >= 1 from 0.0.110.
std::string IdentityProblem(std::string_view field, const std::string& value,
                            const Version& version) {
  if (value.empty() || value == "sandbox") return {};
  auto id = NumericId(value);
  if (version < Release(76)) {
    return fmt::format("policy validation failed: process.{} must be \"sandbox\"; got '{}'", field,
                       value);
  }
  const std::uint32_t least = version < Release(110) ? 1000 : 1;
  if (!id || *id < least) {
    return fmt::format(
        "policy validation failed: process.{} must be \"sandbox\" or a numeric id of at least {}; "
        "got '{}'",
        field, least, value);
  }
  return {};
}

struct Mount {
  std::string source;
  std::string target;
  bool read_only = true;  // the driver's default for binds
};

bool PathIsOrUnder(std::string_view path, std::string_view parent) {
  if (parent == "/") return path.starts_with("/");
  return path == parent ||
         (path.starts_with(parent) && path.size() > parent.size() && path[parent.size()] == '/');
}

// A container path as the driver accepts it: absolute, normalized, not "/",
// clear of OpenShell's own directories. Empty when valid; else why not.
std::string TargetProblem(const std::string& target, std::string& normalized) {
  if (target.empty()) return "mount target must not be empty";
  if (Trim(target) != target) return "mount target must not contain surrounding whitespace";
  if (target.front() != '/') return "mount target must be an absolute container path";
  std::vector<std::string> segments;
  std::stringstream parts(target.substr(1));
  for (std::string part; std::getline(parts, part, '/');) segments.push_back(part);
  for (std::size_t i = 0; i < segments.size(); ++i) {
    bool trailing = i + 1 == segments.size();
    if ((segments[i].empty() && !trailing) || segments[i] == "." || segments[i] == "..") {
      return "mount target must be normalized without empty, '.', or '..' path segments";
    }
  }
  normalized = target;
  while (normalized.size() > 1 && normalized.back() == '/') normalized.pop_back();
  if (normalized == "/") return "mount target must not be the container root";
  for (std::string_view reserved : kReservedRoots) {
    if (PathIsOrUnder(normalized, reserved) || PathIsOrUnder(reserved, normalized)) {
      return fmt::format("mount target '{}' conflicts with reserved OpenShell path '{}'", target,
                         reserved);
    }
  }
  return {};
}

// The Docker driver's block of --driver-config-json, checked as the gateway
// checks it. Returns the gateway's error line, or empty with `mounts` filled.
std::string ReadDockerMounts(const rapidjson::Value& config, bool enable_bind_mounts,
                             std::vector<Mount>& mounts) {
  if (!config.HasMember("docker")) return {};
  const rapidjson::Value& docker = config["docker"];
  if (!docker.IsObject()) {
    return GrpcError("InvalidArgument", "template.driver_config.docker must be an object");
  }
  for (const auto& member : docker.GetObject()) {
    if (std::string_view(member.name.GetString()) != "mounts") {
      return GrpcError(
          "InvalidArgument",
          fmt::format("invalid docker driver_config: unknown field `{}`", member.name.GetString()));
    }
  }
  if (!docker.HasMember("mounts")) return {};
  if (!docker["mounts"].IsArray()) {
    return GrpcError("InvalidArgument", "invalid docker driver_config: mounts must be an array");
  }
  for (const auto& entry : docker["mounts"].GetArray()) {
    if (!entry.IsObject() || !entry.HasMember("type") || !entry["type"].IsString()) {
      return GrpcError("InvalidArgument",
                       "invalid docker driver_config: each mount needs a string `type`");
    }
    const std::string type = entry["type"].GetString();
    if (type == "image") {
      return GrpcError("FailedPrecondition",
                       "invalid docker driver_config: docker image mounts are not supported");
    }
    if (type != "bind") {
      return fmt::format("fake-openshell: {} mounts are not implemented by this test double", type);
    }
    if (!enable_bind_mounts) {
      return GrpcError("FailedPrecondition",
                       "docker bind mounts require enable_bind_mounts = true in "
                       "[openshell.drivers.docker]");
    }
    Mount mount;
    for (const auto& field : entry.GetObject()) {
      const std::string_view key = field.name.GetString();
      if (key == "type") continue;
      if ((key == "source" || key == "target") && field.value.IsString()) {
        (key == "source" ? mount.source : mount.target) = field.value.GetString();
      } else if (key == "read_only" && field.value.IsBool()) {
        mount.read_only = field.value.GetBool();
      } else if (key != "selinux_label") {
        return GrpcError("InvalidArgument",
                         fmt::format("invalid docker driver_config: unknown or mistyped field "
                                     "`{}` in a bind mount",
                                     key));
      }
    }
    if (mount.source.empty() || mount.source.front() != '/') {
      return GrpcError("FailedPrecondition", "bind source must be an absolute host path");
    }
    std::string normalized;
    if (std::string problem = TargetProblem(mount.target, normalized); !problem.empty()) {
      return GrpcError("FailedPrecondition", problem);
    }
    for (const Mount& earlier : mounts) {
      if (earlier.target == normalized) {
        return GrpcError(
            "FailedPrecondition",
            fmt::format("duplicate docker driver_config mount target '{}'", normalized));
      }
    }
    mount.target = normalized;
    mounts.push_back(std::move(mount));
  }
  return {};
}

// ---------------------------------------------------------------------------
// sandbox create

// The bridge network's gateway address (host.openshell.internal), creating
// the network first when it is missing.
std::optional<std::string> NetworkGateway(Docker& docker, const std::string& network,
                                          std::string& error) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    DockerReply reply = docker.Call("GET", "/networks/" + PercentEncode(network));
    if (Answered(reply, {200})) {
      rapidjson::Document info;
      info.Parse(reply.body.c_str());
      if (info.HasParseError() || !info.IsObject()) break;
      if (!info.HasMember("Driver") || !info["Driver"].IsString() ||
          std::string_view(info["Driver"].GetString()) != "bridge") {
        error = fmt::format("Docker network '{}' must use the 'bridge' driver", network);
        return std::nullopt;
      }
      if (info.HasMember("IPAM") && info["IPAM"].IsObject() && info["IPAM"].HasMember("Config") &&
          info["IPAM"]["Config"].IsArray()) {
        for (const auto& config : info["IPAM"]["Config"].GetArray()) {
          if (config.IsObject() && config.HasMember("Gateway") && config["Gateway"].IsString() &&
              std::string_view(config["Gateway"].GetString()).find(':') == std::string::npos &&
              config["Gateway"].GetStringLength() > 0) {
            return std::string(config["Gateway"].GetString());
          }
        }
      }
      error = fmt::format("Docker bridge network '{}' has no IPv4 gateway", network);
      return std::nullopt;
    }
    if (!Answered(reply, {404}) || attempt > 0) {
      error = fmt::format("inspect Docker network '{}': {}", network, DockerReplyProblem(reply));
      return std::nullopt;
    }
    rapidjson::StringBuffer body;
    {
      rapidjson::Writer<rapidjson::StringBuffer> w(body);
      w.StartObject();
      w.Key("Name");
      w.String(network);
      w.Key("Driver");
      w.String("bridge");
      w.Key("Attachable");
      w.Bool(true);
      w.Key("CheckDuplicate");
      w.Bool(true);
      w.Key("Labels");
      w.StartObject();
      w.Key(kManagedBy);
      w.String("openshell");
      w.EndObject();
      w.EndObject();
    }
    DockerReply created = docker.Call("POST", "/networks/create", body.GetString());
    // 409: someone else created it meanwhile, which is as good.
    if (!Answered(created, {201, 409})) {
      error = fmt::format("create Docker network '{}': {}", network, DockerReplyProblem(created));
      return std::nullopt;
    }
  }
  error = fmt::format("Docker's description of network '{}' is not JSON", network);
  return std::nullopt;
}

struct ContainerSpec {
  std::string name;  // Docker's container name
  std::string image;
  std::vector<std::string> cmd;
  std::string user;
  std::vector<std::string> env;
  StringMap labels;
  std::vector<Mount> mounts;
  std::string network;
  std::string host_ip;  // host.openshell.internal
};

std::string ContainerBody(const ContainerSpec& spec) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  auto strings = [&](const std::vector<std::string>& items) {
    w.StartArray();
    for (const std::string& item : items) w.String(item);
    w.EndArray();
  };
  w.StartObject();
  w.Key("Image");
  w.String(spec.image);
  w.Key("Cmd");
  strings(spec.cmd);
  if (!spec.user.empty()) {
    w.Key("User");
    w.String(spec.user);
  }
  w.Key("Env");
  strings(spec.env);
  w.Key("Labels");
  w.StartObject();
  for (const auto& [key, value] : spec.labels) {
    w.Key(key.c_str());
    w.String(value);
  }
  w.EndObject();
  w.Key("HostConfig");
  w.StartObject();
  w.Key("NetworkMode");
  w.String(spec.network);
  w.Key("ExtraHosts");
  strings({"host.docker.internal:" + spec.host_ip, "host.openshell.internal:" + spec.host_ip});
  w.Key("CapDrop");
  strings({"ALL"});
  w.Key("SecurityOpt");
  strings({"no-new-privileges"});
  // Reaps what `sandbox exec` leaves behind, and keeps the main process off pid 1.
  w.Key("Init");
  w.Bool(true);
  w.Key("Mounts");
  w.StartArray();
  for (const Mount& mount : spec.mounts) {
    w.StartObject();
    w.Key("Type");
    w.String("bind");
    w.Key("Source");
    w.String(mount.source);
    w.Key("Target");
    w.String(mount.target);
    w.Key("ReadOnly");
    w.Bool(mount.read_only);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();  // HostConfig
  w.Key("NetworkingConfig");
  w.StartObject();
  w.Key("EndpointsConfig");
  w.StartObject();
  w.Key(spec.network.c_str());
  w.StartObject();
  w.EndObject();
  w.EndObject();
  w.EndObject();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

// The image's WORKDIR as the driver resolves the workspace; nothing when the
// image is not on this Docker.
std::optional<std::string> ImageWorkspace(Docker& docker, const std::string& image,
                                          DockerReply& reply) {
  reply = docker.Call("GET", "/images/" + image + "/json");
  if (!Answered(reply, {200})) return std::nullopt;
  rapidjson::Document info;
  info.Parse(reply.body.c_str());
  std::string workdir;
  if (!info.HasParseError() && info.IsObject() && info.HasMember("Config") &&
      info["Config"].IsObject() && info["Config"].HasMember("WorkingDir") &&
      info["Config"]["WorkingDir"].IsString()) {
    workdir = info["Config"]["WorkingDir"].GetString();
  }
  while (workdir.size() > 1 && workdir.back() == '/') workdir.pop_back();
  if (workdir.empty() || workdir == "/") return std::string(kDefaultWorkspace);
  return workdir;
}

int SandboxCreate(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{
      .usage = "openshell sandbox create [OPTIONS] [-- <COMMAND>...]",
      .flags = {
          {.name = "name", .takes_value = true},
          {.name = "from", .takes_value = true},
          {.name = "policy", .takes_value = true},
          {.name = "label", .takes_value = true, .since = Release(37)},
          {.name = "driver-config-json", .takes_value = true, .since = Release(58)},
          {.name = "env", .takes_value = true, .since = Release(59)},
          {.name = "output", .short_name = 'o', .takes_value = true, .since = Release(92)},
          {.name = "detach", .since = Release(111)},
          {.name = "tty"},
          {.name = "no-tty"},
          {.name = "auto-providers"},
          {.name = "no-auto-providers"},
          {.name = "no-credential-warnings", .since = Release(104)},
          // Real flags this double does not model.
          {.name = "provider", .takes_value = true, .modelled = false},
          {.name = "upload", .takes_value = true, .modelled = false},
          {.name = "no-git-ignore", .modelled = false},
          {.name = "keep", .modelled = false},
          {.name = "no-keep", .modelled = false},
          {.name = "editor", .takes_value = true, .modelled = false},
          {.name = "gpu", .modelled = false},
          {.name = "cpu", .takes_value = true, .since = Release(41), .modelled = false},
          {.name = "memory", .takes_value = true, .since = Release(41), .modelled = false},
          {.name = "forward", .takes_value = true, .modelled = false},
          {.name = "approval-mode", .takes_value = true, .since = Release(53), .modelled = false},
      }};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  std::string format;
  if (auto code = OutputFormat(args, grammar.usage, format)) return *code;
  if (args.Has("output") && !args.command.empty()) {
    return ClapError("the argument '--output <OUTPUT>' cannot be used with '[COMMAND]...'",
                     grammar.usage);
  }
  if (auto code = GatewayRefuses(ctx)) return *code;

  // What the CLI checks before it asks the gateway.
  StringMap labels;
  for (const std::string& item : args.All("label")) {
    auto eq = item.find('=');
    if (eq == std::string::npos) {
      return PrintError(fmt::format("invalid label format '{}', expected key=value", item));
    }
    labels[item.substr(0, eq)] = item.substr(eq + 1);
  }
  std::string error;
  StringMap env = ParseEnv(args.All("env"), error);
  if (!error.empty()) return PrintError(error);
  ProcessIdentity identity;
  if (args.Has("policy")) {
    const std::string path = args.Last("policy");
    std::ifstream in(path);
    if (!in) {
      return PrintError(
          fmt::format("failed to read sandbox policy file '{}': {}", path, std::strerror(errno)));
    }
    std::stringstream text;
    text << in.rdbuf();
    identity = ReadProcessIdentity(text.str());
  }
  rapidjson::Document driver_config;
  if (args.Has("driver-config-json")) {
    driver_config.Parse(args.Last("driver-config-json").c_str());
    if (driver_config.HasParseError()) {
      return PrintError("invalid --driver-config-json: not valid JSON");
    }
    if (!driver_config.IsObject()) return PrintError("--driver-config-json must be a JSON object");
  }

  // What the gateway and its Docker driver check.
  if (!ctx.options.fail_create.empty()) return PrintError(ctx.options.fail_create);
  for (const auto& [key, value] : labels) {
    if (std::string problem = LabelProblem(key, value); !problem.empty()) {
      return PrintError(GrpcError("InvalidArgument", problem));
    }
  }
  std::string problem = IdentityProblem("run_as_user", identity.user, ctx.version);
  if (problem.empty()) problem = IdentityProblem("run_as_group", identity.group, ctx.version);
  if (!problem.empty()) return PrintError(GrpcError("InvalidArgument", problem));
  // Releases before 0.0.61 pass the driver config on, but their Docker driver
  // ignores it: no mounts, no error.
  std::vector<Mount> mounts;
  if (ctx.version >= Release(61) && driver_config.IsObject()) {
    problem = ReadDockerMounts(driver_config, ctx.options.enable_bind_mounts, mounts);
    if (problem.starts_with("fake-openshell:")) {
      std::fputs((problem + "\n").c_str(), stderr);
      return 2;
    }
    if (!problem.empty()) return PrintError(problem);
  }
  if (!args.Has("from")) return NotModelled("`sandbox create` without --from (a default image)");
  const std::string image = args.Last("from");

  auto docker = ConnectDocker(error);
  if (!docker) return NoDocker(error);
  DockerReply reply;
  auto workspace = ImageWorkspace(*docker, image, reply);
  if (!workspace) {
    if (Answered(reply, {404})) {
      return PrintError(GrpcError("FailedPrecondition",
                                  fmt::format("docker image '{}' is not present locally (this test "
                                              "double does not pull)",
                                              image)));
    }
    return DockerFailed("inspect Docker image", reply);
  }
  for (const Mount& mount : mounts) {
    if (PathIsOrUnder(*workspace, mount.target)) {
      return PrintError(GrpcError(
          "FailedPrecondition",
          fmt::format("mount target '{}' is reserved for the OpenShell workspace", mount.target)));
    }
    struct stat info {};
    if (::stat(mount.source.c_str(), &info) != 0) {
      return PrintError(GrpcError(
          "FailedPrecondition", fmt::format("bind source path does not exist: {}", mount.source)));
    }
  }
  auto host_ip = NetworkGateway(*docker, ctx.options.network, error);
  if (!host_ip) return PrintError(GrpcError("Internal", error));

  const std::string name = args.Has("name") ? args.Last("name") : "sandbox-" + RandomHex(8);
  ContainerSpec spec;
  spec.name = fmt::format("openshell-{}-{}", ctx.namespace_name, name);
  spec.image = image;
  spec.network = ctx.options.network;
  spec.host_ip = *host_ip;
  spec.mounts = mounts;
  // From 0.0.111 a trailing command is the sandbox's main process: when it
  // ends, the container stops and the phase turns Error. Before, the sandbox
  // idles and the command runs once over SSH after Ready.
  const bool command_is_main = ctx.version >= Release(111) && !args.command.empty();
  spec.cmd = command_is_main ? args.command : std::vector<std::string>{"sleep", "infinity"};
  if (auto uid = NumericId(identity.user)) {
    auto gid = NumericId(identity.group);
    spec.user = gid ? fmt::format("{}:{}", *uid, *gid) : std::to_string(*uid);
  }
  for (const auto& [key, value] : env) spec.env.push_back(key + "=" + value);
  spec.labels = labels;
  {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    w.StartObject();
    for (const auto& [key, value] : labels) {
      w.Key(key.c_str());
      w.String(value);
    }
    w.EndObject();
    spec.labels[kUserLabels] = buffer.GetString();
  }
  spec.labels[kManagedBy] = "openshell";
  spec.labels[kSandboxName] = name;
  spec.labels[kSandboxId] = NewSandboxId();
  spec.labels[kNamespace] = ctx.namespace_name;
  spec.labels[kWorkspace] = "default";
  if (ctx.options.phase_error) spec.labels[kPinnedPhase] = "Error";

  reply = docker->Call("POST", "/containers/create?name=" + PercentEncode(spec.name),
                       ContainerBody(spec));
  if (Answered(reply, {409})) {
    return PrintError(
        fmt::format("sandbox '{}' already exists\n\nhint: delete it first with: openshell "
                    "sandbox delete <name>\n      or use a different name",
                    name));
  }
  if (Answered(reply, {400}))
    return PrintError(GrpcError("InvalidArgument", DockerReplyProblem(reply)));
  if (!Answered(reply, {201})) return DockerFailed("create Docker container", reply);
  rapidjson::Document created;
  created.Parse(reply.body.c_str());
  if (created.HasParseError() || !created.IsObject() || !created.HasMember("Id") ||
      !created["Id"].IsString()) {
    return PrintError(GrpcError("Internal", "Docker's answer to create has no container id"));
  }
  const std::string container = created["Id"].GetString();
  reply = docker->Call("POST", "/containers/" + container + "/start");
  if (!Answered(reply, {204, 304})) {
    docker->Call("DELETE", "/containers/" + container + "?force=1&v=1");
    return DockerFailed("start Docker container", reply);
  }

  if (format == "json") {
    std::fputs("Provisioning sandbox (structured output on stdout)...\n", stderr);
    auto sandbox = FindSandbox(*docker, ctx, name, error);
    if (!sandbox)
      return PrintError(GrpcError("Internal", error.empty() ? "sandbox vanished" : error));
    Print(SandboxJson(*sandbox, ctx.version, false));
    return 0;
  }
  Print(fmt::format("\nCreated sandbox: {}\n\n", name));
  if (!command_is_main && !args.command.empty()) {
    // Over SSH without a terminal the command's exit status is lost.
    auto code =
        RunInSandbox(*docker, container, {"/bin/sh", "-c", RemoteCommandLine(args.command, {}, "")},
                     "", 0, error);
    if (!code) return PrintError(GrpcError("Internal", error));
  }
  return 0;
}

// ---------------------------------------------------------------------------
// sandbox list | get | exec | delete

std::optional<int> ParseSelector(const std::string& selector, std::vector<std::string>& pairs) {
  std::stringstream items(selector);
  for (std::string item; std::getline(items, item, ',');) {
    std::string pair = Trim(item);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    if (eq == std::string::npos) {
      return PrintError(
          GrpcError("InvalidArgument",
                    fmt::format("invalid label selector: expected 'key=value', got '{}'", pair)));
    }
    std::string key = Trim(std::string_view(pair).substr(0, eq));
    std::string value = Trim(std::string_view(pair).substr(eq + 1));
    if (std::string problem = LabelProblem(key, value); !problem.empty()) {
      return PrintError(GrpcError("InvalidArgument", problem));
    }
    pairs.push_back(key + "=" + value);
  }
  return std::nullopt;
}

std::optional<unsigned> ParseCount(const Args& args, std::string_view flag, std::string_view usage,
                                   unsigned fallback, int& exit_code) {
  if (!args.Has(flag)) return fallback;
  const std::string text = args.Last(flag);
  auto number = NumericId(text);
  if (!number) {
    exit_code = ClapError(fmt::format("invalid value '{}' for '--{} <{}>': invalid digit found in "
                                      "string",
                                      text, flag, Placeholder(flag)),
                          usage);
    return std::nullopt;
  }
  return *number;
}

int SandboxList(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{
      .usage = "openshell sandbox list [OPTIONS]",
      .flags = {
          {.name = "limit", .takes_value = true},
          {.name = "offset", .takes_value = true},
          {.name = "ids"},
          {.name = "names"},
          {.name = "selector", .takes_value = true, .since = Release(37)},
          {.name = "output", .short_name = 'o', .takes_value = true, .since = Release(44)},
          {.name = "all-workspaces", .since = Release(88)},
      }};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  std::string format;
  if (auto code = OutputFormat(args, grammar.usage, format)) return *code;
  int exit_code = 0;
  auto limit = ParseCount(args, "limit", grammar.usage, 100, exit_code);
  if (!limit) return exit_code;
  auto offset = ParseCount(args, "offset", grammar.usage, 0, exit_code);
  if (!offset) return exit_code;
  if (auto code = GatewayRefuses(ctx)) return *code;
  std::vector<std::string> selector;
  if (auto code = ParseSelector(args.Last("selector"), selector)) return *code;

  std::string error;
  auto docker = ConnectDocker(error);
  if (!docker) return NoDocker(error);
  auto sandboxes = ListSandboxes(*docker, ctx, selector, error);
  if (!sandboxes) return PrintError(GrpcError("Internal", error));
  std::vector<Sandbox> page;
  for (std::size_t i = *offset; i < sandboxes->size() && page.size() < *limit; ++i) {
    page.push_back((*sandboxes)[i]);
  }

  if (args.Has("ids") || args.Has("names")) {
    for (const Sandbox& sandbox : page) Print((args.Has("ids") ? sandbox.id : sandbox.name) + "\n");
    return 0;
  }
  if (format == "json") {
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    w.SetIndent(' ', 2);
    w.StartArray();
    for (const Sandbox& sandbox : page) WriteSandbox(w, sandbox, ctx.version, false);
    w.EndArray();
    Print(std::string(buffer.GetString(), buffer.GetSize()) + "\n");
    return 0;
  }
  if (page.empty()) {
    Print("No sandboxes found.\n");
    return 0;
  }
  std::size_t width = 4;
  for (const Sandbox& sandbox : page) width = std::max(width, sandbox.name.size());
  std::string table = fmt::format("{:<{}}  {:<19}  {}\n", "NAME", width, "CREATED", "PHASE");
  for (const Sandbox& sandbox : page) {
    table += fmt::format("{:<{}}  {:<19}  {}\n", sandbox.name, width,
                         FormatCreated(sandbox.created), sandbox.phase);
  }
  Print(table);
  return 0;
}

int NotFound() { return PrintError(GrpcError("NotFound", "sandbox not found")); }

int SandboxGet(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{
      .usage = "openshell sandbox get [OPTIONS] [NAME]",
      .flags = {{.name = "output", .short_name = 'o', .takes_value = true, .since = Release(92)},
                {.name = "policy-only", .modelled = false}},
      .max_positionals = 1};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  std::string format;
  if (auto code = OutputFormat(args, grammar.usage, format)) return *code;
  if (auto code = GatewayRefuses(ctx)) return *code;
  if (args.positionals.empty()) {
    return PrintError("no sandbox name given and no last-used sandbox recorded");
  }
  std::string error;
  auto docker = ConnectDocker(error);
  if (!docker) return NoDocker(error);
  auto sandbox = FindSandbox(*docker, ctx, args.positionals[0], error);
  if (!error.empty()) return PrintError(GrpcError("Internal", error));
  if (!sandbox) return NotFound();
  if (format == "json") {
    Print(SandboxJson(*sandbox, ctx.version, true));
    return 0;
  }
  Print(fmt::format("Sandbox:\n\n  Id: {}\n  Name: {}\n  Created: {}\n  Phase: {}\n", sandbox->id,
                    sandbox->name, FormatCreated(sandbox->created), sandbox->phase));
  return 0;
}

// The CLI reads stdin whole before it starts the command, unless it is a
// terminal. Nothing when it is too much (`error` says so).
std::optional<std::string> ReadStdin(std::string& error) {
  std::string input;
  if (::isatty(STDIN_FILENO)) return input;
  std::vector<char> chunk(64 * 1024);
  while (input.size() <= kMaxStdin) {
    ssize_t got = ::read(STDIN_FILENO, chunk.data(), chunk.size());
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // end of file, or no stdin at all
    input.append(chunk.data(), static_cast<std::size_t>(got));
  }
  if (input.size() > kMaxStdin) {
    error = fmt::format(
        "stdin payload exceeds {} byte limit; pipe smaller inputs or use `sandbox upload`",
        kMaxStdin);
    return std::nullopt;
  }
  return input;
}

int SandboxExec(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{.usage = "openshell sandbox exec [OPTIONS] <COMMAND>...",
                        .flags = {{.name = "name", .short_name = 'n', .takes_value = true},
                                  {.name = "workdir", .takes_value = true},
                                  {.name = "timeout", .takes_value = true},
                                  {.name = "tty"},
                                  {.name = "no-tty"},
                                  {.name = "env", .takes_value = true, .since = Release(59)}},
                        .command_at_first_positional = true};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  if (args.command.empty()) {
    return ClapError("the following required arguments were not provided:\n  <COMMAND>...",
                     grammar.usage);
  }
  int exit_code = 0;
  auto timeout = ParseCount(args, "timeout", grammar.usage, 0, exit_code);
  if (!timeout) return exit_code;
  if (auto code = GatewayRefuses(ctx)) return *code;
  std::string error;
  StringMap env = ParseEnv(args.All("env"), error);
  if (!error.empty()) return PrintError(error);
  if (!args.Has("name"))
    return PrintError("no sandbox name given and no last-used sandbox recorded");
  const std::string name = args.Last("name");

  auto docker = ConnectDocker(error);
  if (!docker) return NoDocker(error);
  auto sandbox = FindSandbox(*docker, ctx, name, error);
  if (!error.empty()) return PrintError(GrpcError("Internal", error));
  if (!sandbox) return NotFound();
  if (sandbox->phase != "Ready") {
    return PrintError(
        fmt::format("sandbox '{}' is not ready (phase: {}); wait for it to reach Ready state", name,
                    sandbox->phase));
  }
  auto input = ReadStdin(error);
  if (!input) return PrintError(error);
  const std::string line = RemoteCommandLine(args.command, env, args.Last("workdir"));
  auto code =
      RunInSandbox(*docker, sandbox->container, {"/bin/sh", "-c", line}, *input, *timeout, error);
  if (!code) return PrintError(GrpcError("Unavailable", error));
  return *code;
}

int SandboxDelete(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{.usage = "openshell sandbox delete <NAME>...",
                        .flags = {{.name = "all"}},
                        .max_positionals = std::numeric_limits<std::size_t>::max()};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  if (args.Has("all") && !args.positionals.empty()) {
    return ClapError("the argument '--all' cannot be used with '<NAME>...'", grammar.usage);
  }
  if (!args.Has("all") && args.positionals.empty()) {
    return ClapError("the following required arguments were not provided:\n  <NAME>...",
                     grammar.usage);
  }
  if (auto code = GatewayRefuses(ctx)) return *code;
  std::string error;
  auto docker = ConnectDocker(error);
  if (!docker) return NoDocker(error);
  std::vector<std::string> names = args.positionals;
  if (args.Has("all")) {
    auto sandboxes = ListSandboxes(*docker, ctx, {}, error);
    if (!sandboxes) return PrintError(GrpcError("Internal", error));
    if (sandboxes->empty()) {
      Print("No sandboxes to delete.\n");
      return 0;
    }
    for (const Sandbox& sandbox : *sandboxes) names.push_back(sandbox.name);
  }
  // In order; the first that is missing ends the command, as in the CLI.
  for (const std::string& name : names) {
    auto sandbox = FindSandbox(*docker, ctx, name, error);
    if (!error.empty()) return PrintError(GrpcError("Internal", error));
    if (!sandbox) return NotFound();
    DockerReply reply =
        docker->Call("DELETE", "/containers/" + sandbox->container + "?force=1&v=1");
    if (!Answered(reply, {204, 404, 409})) return DockerFailed("remove Docker container", reply);
    Print(fmt::format("✓ Deleted sandbox {}\n", name));
  }
  return 0;
}

// ---------------------------------------------------------------------------

constexpr std::string_view kHelp =
    "OpenShell CLI (fake-openshell, a test double backed by Docker)\n\n"
    "Usage: openshell <COMMAND>\n\n"
    "Commands:\n"
    "  sandbox  create | list | get | exec | delete\n"
    "  status   Gateway status\n"
    "  gateway  info\n\n"
    "Options:\n"
    "  -V, --version  Print version\n"
    "  -h, --help     Print help\n";

int SandboxCommand(const Context& ctx, const std::vector<std::string>& argv) {
  if (argv.size() < 3) {
    std::fputs("Usage: openshell sandbox <COMMAND>\n", stderr);
    return 2;
  }
  const std::string& sub = argv[2];
  if (sub == "create") return SandboxCreate(ctx, argv);
  if (sub == "list") return SandboxList(ctx, argv);
  if (sub == "get") return SandboxGet(ctx, argv);
  if (sub == "exec") return SandboxExec(ctx, argv);
  if (sub == "delete") return SandboxDelete(ctx, argv);
  for (std::string_view real :
       {"stop", "start", "connect", "upload", "download", "ssh-config", "provider"}) {
    if (sub == real) return NotModelled(fmt::format("`sandbox {}`", sub));
  }
  return ClapError(fmt::format("unrecognized subcommand '{}'", sub), "openshell sandbox <COMMAND>");
}

int Run(const Context& ctx, const std::vector<std::string>& argv) {
  if (argv.size() < 2) {
    std::fputs(kHelp.data(), stderr);
    return 2;
  }
  const std::string& command = argv[1];
  if (command == "-V" || command == "--version") {
    Print(fmt::format("openshell {}\n", ctx.options.version));
    return 0;
  }
  if (command == "-h" || command == "--help") {
    Print(kHelp);
    return 0;
  }
  if (command == "status") return Status(ctx, argv);
  if (command == "sandbox") return SandboxCommand(ctx, argv);
  if (command == "gateway") {
    if (argv.size() >= 3 && argv[2] == "info") return GatewayInfo(ctx, argv);
    return NotModelled("`gateway` other than `gateway info`");
  }
  for (std::string_view real :
       {"forward", "service", "logs", "policy", "settings", "rule", "provider", "workspace",
        "whoami", "inference", "doctor", "term", "completions", "ssh-proxy"}) {
    if (command == real) return NotModelled(fmt::format("`{}`", command));
  }
  return ClapError(fmt::format("unrecognized subcommand '{}'", command),
                   "openshell [OPTIONS] <COMMAND>");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  if (args.empty()) args.emplace_back("openshell");
  const std::string dir = ProgramDir(args[0]);
  LogCall(dir, args);
  // A reader that goes away must not kill us mid-copy.
  ::signal(SIGPIPE, SIG_IGN);

  Context ctx;
  std::string error;
  if (!dir.empty() && !LoadOptions(dir, ctx.options, error)) {
    fmt::print(stderr, "fake-openshell: {}\n", error);
    return 2;
  }
  ctx.version = ParseVersion(ctx.options.version);
  ctx.namespace_name = NamespaceFor(dir);
  return Run(ctx, args);
}

// openshell.cli and openshell.gateway. The CLI's grammar and JSON: the
// design's FACTS.md, "OpenShell".
#include <rapidjson/document.h>
#include <unistd.h>

#include <future>
#include <regex>

#include "check_util.h"
#include "fmt/format.h"
#include "mojoup/probe/probe.h"

namespace mojoup::probe {
namespace {

using internal::FailedCheck;
using internal::FirstLine;
using internal::Pass;
using internal::Seconds;
using internal::Skip;
using internal::Warn;

constexpr std::string_view kStartGateway =
    "start the gateway with `systemctl --user enable --now openshell-gateway`";

bool IsExecutableFile(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

std::string StringField(const rapidjson::Value& object, const char* key) {
  if (!object.IsObject() || !object.HasMember(key) || !object[key].IsString()) return {};
  return object[key].GetString();
}

// "name at https://..." or whatever of it the JSON gave.
std::string GatewayName(const rapidjson::Value& status) {
  std::string name = StringField(status, "gateway");
  std::string server = StringField(status, "server");
  if (name.empty()) return server.empty() ? "" : " at " + server;
  return server.empty() ? " " + name : fmt::format(" {} at {}", name, server);
}

std::string Describe(const CommandResult& result) {
  switch (result.outcome) {
    case CommandResult::Outcome::kExited: {
      std::string said = FirstLine(result.err);
      if (said.empty()) said = FirstLine(result.out);
      return said.empty() ? fmt::format("exit {}", result.exit_code)
                          : fmt::format("exit {}: {}", result.exit_code, said);
    }
    case CommandResult::Outcome::kSignaled:
      return fmt::format("killed by signal {}", result.signal);
    case CommandResult::Outcome::kTimedOut:
      return "no answer";
    case CommandResult::Outcome::kNotStarted:
      return internal::ErrnoName(result.spawn_error);
  }
  return {};
}

// Judges `openshell status -o json`: its exit code and its `status` field.
Check Gateway(const OpenShellCli& cli, const CommandResult& result,
              std::chrono::milliseconds timeout) {
  if (result.outcome == CommandResult::Outcome::kTimedOut) {
    return FailedCheck(
        check_id::kOpenShellGateway,
        fmt::format("The OpenShell gateway did not answer within {}", Seconds(timeout)),
        "restart the gateway with `systemctl --user restart openshell-gateway`");
  }
  if (!result.Succeeded()) {
    return FailedCheck(check_id::kOpenShellGateway,
                       fmt::format("The OpenShell gateway is not reachable ({})", Describe(result)),
                       std::string(kStartGateway), fmt::format("`{} status -o json`", cli.path()));
  }
  rapidjson::Document doc;
  doc.Parse(result.out.c_str(), result.out.size());
  const std::string status = StringField(doc, "status");
  if (doc.HasParseError() || status.empty()) {
    return FailedCheck(check_id::kOpenShellGateway,
                       fmt::format("`openshell status -o json` printed no status ({})",
                                   FirstLine(result.out).substr(0, 80)),
                       "check that the OpenShell CLI is a release that supports `status -o json`");
  }
  const std::string where = GatewayName(doc);
  const std::string error = StringField(doc, "error");
  const std::string said = error.empty() ? "" : ": " + error;
  if (status == "connected" || status == "connected_http") {
    if (doc.HasMember("authentication") &&
        StringField(doc["authentication"], "status") == "failed") {
      std::string name = StringField(doc, "gateway");
      return FailedCheck(
          check_id::kOpenShellGateway,
          fmt::format("The OpenShell gateway{} does not accept this user's credentials "
                      "({})",
                      where, StringField(doc["authentication"], "error")),
          fmt::format("sign in with `openshell gateway login {}`",
                      name.empty() ? "<gateway>" : name));
    }
    std::string version = StringField(doc, "version");
    return Pass(check_id::kOpenShellGateway,
                fmt::format("The OpenShell gateway{} is {}", where,
                            status == "connected" ? "connected" : "connected over HTTP"),
                version.empty() ? "" : "gateway version " + version);
  }
  if (status == "not_configured") {
    return FailedCheck(
        check_id::kOpenShellGateway, "The OpenShell CLI has no gateway configured",
        "start one (`systemctl --user enable --now openshell-gateway`) and register it "
        "with `openshell gateway add --local https://127.0.0.1:17670`");
  }
  if (status == "disconnected") {
    return FailedCheck(check_id::kOpenShellGateway,
                       fmt::format("The OpenShell gateway{} is disconnected{}", where, said),
                       std::string(kStartGateway));
  }
  if (status == "error") {
    return FailedCheck(
        check_id::kOpenShellGateway,
        fmt::format("The OpenShell gateway{} answers but is unhealthy{}", where, said),
        "read `journalctl --user -u openshell-gateway` and restart the gateway");
  }
  return FailedCheck(
      check_id::kOpenShellGateway,
      fmt::format("The OpenShell gateway{} reports an unknown status \"{}\"", where, status),
      "upgrade the OpenShell CLI and gateway to matching releases");
}

}  // namespace

std::string SemVer::ToString() const { return fmt::format("{}.{}.{}", major, minor, patch); }

std::optional<SemVer> ParseSemVer(std::string_view text) {
  static const std::regex kVersion(R"((?:^|[^0-9A-Za-z.])v?(\d{1,6})\.(\d{1,6})(?:\.(\d{1,6}))?)");
  std::match_results<std::string_view::const_iterator> match;
  if (!std::regex_search(text.begin(), text.end(), match, kVersion)) return std::nullopt;
  auto number = [&](int i) { return match[i].matched ? std::stoi(match[i].str()) : 0; };
  return SemVer{number(1), number(2), number(3)};
}

std::optional<std::string> FindOpenShell(Kernel& host,
                                         const std::optional<std::string>& configured) {
  if (configured) {
    if (IsExecutableFile(*configured)) return configured;
    return std::nullopt;
  }
  std::string path = host.GetEnv("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/openshell";
    if (IsExecutableFile(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

std::pair<Check, Check> CheckOpenShell(Kernel& kernel, CommandRunner& commands,
                                       const ProbeOptions& options) {
  const bool required = options.require_openshell;
  auto settle = [](Check check) {
    check.required = true;
    return check;
  };
  const auto started = std::chrono::steady_clock::now();
  auto elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
        .count();
  };

  if (!required) {
    // Not asked at all: a hanging gateway must not slow a node that never uses it.
    Check cli = Skip(check_id::kOpenShellCli, "Not needed by the native runtime", false);
    Check gateway = Skip(check_id::kOpenShellGateway, "Not needed by the native runtime", false);
    return {cli, gateway};
  }
  std::optional<std::string> path = FindOpenShell(kernel, options.openshell_path);
  Check cli;
  if (!path) {
    cli = options.openshell_path
              ? FailedCheck(
                    check_id::kOpenShellCli,
                    fmt::format("The OpenShell CLI at {} (node.sandbox.openshell_path) is missing "
                                "or not executable",
                                *options.openshell_path),
                    "point node.sandbox.openshell_path at the openshell binary, or unset it to "
                    "search PATH")
              : FailedCheck(check_id::kOpenShellCli, "The OpenShell CLI `openshell` is not on PATH",
                            "install OpenShell, or name it with `mojoup-node config set "
                            "node.sandbox.openshell_path PATH`, or use the native runtime "
                            "(`mojoup-node config set node.sandbox.runtime native`)");
  } else {
    OpenShellCli shell(commands, *path);
    // Both questions at once: the gateway's answer is used only if the CLI passes.
    auto status = std::async(std::launch::async, [&] { return shell.Status(options.timeout); });
    CommandResult version = shell.Version(options.timeout);
    std::optional<SemVer> parsed = version.Succeeded() ? ParseSemVer(version.out) : std::nullopt;
    if (version.outcome == CommandResult::Outcome::kTimedOut) {
      cli = FailedCheck(
          check_id::kOpenShellCli,
          fmt::format("`{} --version` did not answer within {}", *path, Seconds(options.timeout)),
          "reinstall OpenShell or point node.sandbox.openshell_path at a working binary");
    } else if (!version.Succeeded()) {
      cli = FailedCheck(
          check_id::kOpenShellCli,
          fmt::format("`{} --version` failed ({})", *path, Describe(version)),
          "reinstall OpenShell or point node.sandbox.openshell_path at a working binary");
    } else if (!parsed) {
      cli = FailedCheck(
          check_id::kOpenShellCli,
          fmt::format("`{} --version` printed no version (\"{}\")", *path,
                      FirstLine(version.out).substr(0, 60)),
          "reinstall OpenShell or point node.sandbox.openshell_path at a working binary");
    } else if (*parsed < kMinOpenShell) {
      cli = FailedCheck(
          check_id::kOpenShellCli,
          fmt::format("OpenShell {} at {} is too old: the openshell runtime reads `openshell "
                      "status -o json` and `openshell sandbox get -o json`, which OpenShell has "
                      "only from {}",
                      parsed->ToString(), *path, kMinOpenShell.ToString()),
          fmt::format("upgrade OpenShell to {} or later", kMinOpenShell.ToString()));
    } else {
      cli = Pass(check_id::kOpenShellCli,
                 fmt::format("OpenShell {} at {}", parsed->ToString(), *path));
    }
    cli.duration_ms = elapsed_ms();
    CommandResult answer = status.get();
    if (cli.status == Status::kPass) {
      Check gateway = Gateway(shell, answer, options.timeout);
      gateway.duration_ms = elapsed_ms();
      return {settle(cli), settle(gateway)};
    }
  }
  cli.duration_ms = elapsed_ms();
  return {settle(cli), settle(Skip(check_id::kOpenShellGateway,
                                   "Not checked: there is no usable OpenShell CLI", required))};
}

}  // namespace mojoup::probe

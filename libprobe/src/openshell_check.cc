// openshell.cli and openshell.gateway. The CLI's grammar and JSON: the
// design's FACTS.md, "OpenShell"; the 0.1.x gateway and its refusals:
// libsandbox/testing/FAKE_OPENSHELL.md.
#include <unistd.h>

#include <future>
#include <regex>

#include "check_util.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "gateway_config.h"
#include "mojoup/internal/json_codec.h"
#include "mojoup/probe/openshell_gateway.h"
#include "mojoup/probe/probe.h"
#include "openshell_refusal.h"

namespace mojoup::probe {
namespace {

using internal::FailedCheck;
using internal::FirstLine;
using internal::Pass;
using internal::Seconds;
using internal::Skip;
using internal::Warn;
namespace json = mojoup::internal::json;

constexpr std::string_view kStartGateway =
    "start the gateway with `systemctl --user enable --now openshell-gateway`";

bool IsExecutableFile(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// What the check reads of `openshell status -o json`: a member that is not
// a string (authentication: not an object) is as if absent.
struct GatewayAuthentication {
  std::string status;
  std::string error;
};
struct GatewayStatus {
  std::string status, gateway, server, error, version, http_status;
  GatewayAuthentication authentication;
};
constexpr auto kGatewayStatus = json::Message<GatewayStatus>(
    json::Optional("status", &GatewayStatus::status).Lenient(),
    json::Optional("gateway", &GatewayStatus::gateway).Lenient(),
    json::Optional("server", &GatewayStatus::server).Lenient(),
    json::Optional("error", &GatewayStatus::error).Lenient(),
    json::Optional("version", &GatewayStatus::version).Lenient(),
    json::Optional("http_status", &GatewayStatus::http_status).Lenient(),
    json::Optional("authentication", &GatewayStatus::authentication,
                   json::Message<GatewayAuthentication>(
                       json::Optional("status", &GatewayAuthentication::status).Lenient(),
                       json::Optional("error", &GatewayAuthentication::error).Lenient()))
        .Lenient());

// "name at https://..." or whatever of it the JSON gave.
std::string GatewayName(const GatewayStatus& status) {
  const std::string& name = status.gateway;
  const std::string& server = status.server;
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

// The failure `openshell-gateway config preflight` found, or nullopt when it
// passed or did not answer (then `note` says so). Preflight validates the
// gateway.toml the daemon would read (schema version 2, driver tables, TLS):
// it does not report allow_driver_config or resource admission, which are
// valid settings whatever their value (deploy/man/openshell-gateway.8, 0.1.x).
std::optional<Check> PreflightFailure(const std::string& gateway, const CommandResult& result,
                                      std::chrono::milliseconds timeout, std::string& note) {
  if (result.outcome == CommandResult::Outcome::kTimedOut) {
    note = fmt::format("`{} config preflight` did not answer within {}", gateway, Seconds(timeout));
    return std::nullopt;
  }
  if (result.Succeeded()) {
    note = "`openshell-gateway config preflight` passed";
    return std::nullopt;
  }
  if (result.outcome != CommandResult::Outcome::kExited) {
    note = fmt::format("`{} config preflight` failed to run ({})", gateway, Describe(result));
    return std::nullopt;
  }
  const std::string said = internal::FlattenCliError(result.err + "\n" + result.out);
  const std::string detail = fmt::format("`{} config preflight`: {}", gateway, said.substr(0, 300));
  if (std::optional<internal::GatewayRefusal> refusal = internal::MatchGatewayRefusal(said)) {
    return FailedCheck(check_id::kOpenShellGateway, refusal->cause, refusal->fix, detail);
  }
  return FailedCheck(
      check_id::kOpenShellGateway,
      fmt::format("The OpenShell gateway's configuration fails `openshell-gateway config "
                  "preflight` (exit {}: {})",
                  result.exit_code, said.empty() ? "no message" : said.substr(0, 160)),
      "fix gateway.toml as the preflight says, run it again, and restart the gateway with "
      "`systemctl --user restart openshell-gateway`",
      detail);
}

// The refusals gateway.toml guarantees, as one failed check whose sentences
// are the refusals' own (those the runtime gives when it meets them), each
// naming the file, in the order the gateway would give them. The summary and
// remedy hold every one; the reason, which doctor's first line quotes as one
// sentence, holds the first and counts the rest.
std::optional<Check> ConfigRefusals(const internal::GatewayConfigReading& reading) {
  if (reading.refusals.empty()) return std::nullopt;
  std::optional<Check> joined;
  for (internal::GatewayRefusalKind kind : reading.refusals) {
    internal::GatewayRefusal refusal = internal::GatewayRefusalOf(kind, reading.path);
    Check one = FailedCheck(check_id::kOpenShellGateway, refusal.cause, refusal.fix,
                            fmt::format("read {}", reading.path));
    if (!joined) {
      joined = std::move(one);
      continue;
    }
    joined->summary += " " + one.summary;
    *joined->remedy += " " + *one.remedy;
  }
  if (const std::size_t more = reading.refusals.size() - 1; more > 0) {
    joined->reason.pop_back();  // its final period
    joined->reason += fmt::format(" (and {} more refusal{} that file guarantees: see {})", more,
                                  more == 1 ? "" : "s", check_id::kOpenShellGateway) +
                      ".";
  }
  return joined;
}

// A gateway.toml that is not TOML. Only a warning: the gateway may read
// another file (a `--config` of its own, or another user's).
Check ConfigParseWarning(const internal::GatewayConfigReading& reading) {
  const internal::GatewayConfigReading::ParseError& error = *reading.parse_error;
  return Warn(check_id::kOpenShellGateway,
              fmt::format("The OpenShell gateway's {}:{}:{} does not parse as TOML ({}), so a "
                          "gateway that reads it will not start",
                          reading.path, error.line, error.column, error.description),
              fmt::format("correct line {} of {} and restart the gateway, unless the gateway "
                          "reads another file",
                          error.line, reading.path));
}

// What the probe learnt besides `status -o json`.
struct GatewayContext {
  SemVer cli_version;
  // `openshell-gateway config preflight`, when it was run: the binary and its answer.
  std::optional<std::pair<std::string, CommandResult>> preflight;
  // The gateway's gateway.toml, when it could be read here, judged by the
  // rules of the CLI's series: the gateway's own when they are not mixed
  // (a mix fails before this is used).
  std::optional<internal::GatewayConfigReading> config;
};

// What the gateway's gateway.toml, read here, says of our sandboxes: a
// failure (refusals; stops_start when the gateway will not even start with
// it) or a warning (it could not be parsed), and a note when it allows them.
struct ConfigJudgement {
  std::optional<Check> failure;
  std::optional<Check> warning;
  bool stops_start = false;
  std::string note;
};

ConfigJudgement JudgeConfig(const GatewayContext& context) {
  ConfigJudgement judged;
  if (context.config && context.config->parse_error) {
    judged.warning = ConfigParseWarning(*context.config);
    judged.note = judged.warning->summary;
  } else if (context.config) {
    judged.failure = ConfigRefusals(*context.config);
    judged.stops_start =
        judged.failure && internal::StopsGatewayStart(context.config->refusals.front());
    if (!judged.failure) {
      judged.note = fmt::format("{} allows the sandboxes' bind mounts", context.config->path);
    }
  }
  return judged;
}

// A connected gateway: whether it takes this user's credentials, what its
// file says of our sandboxes, and how its release compares with the CLI's
// and with the newest this node was written for. `detail` ends the check.
Check ConnectedGateway(const GatewayStatus& doc, const std::string& where,
                       const std::optional<SemVer>& gateway_version, const SemVer& cli_version,
                       const ConfigJudgement& config, const std::string& detail) {
  if (doc.authentication.status == "failed") {
    const std::string& name = doc.gateway;
    return FailedCheck(
        check_id::kOpenShellGateway,
        fmt::format("The OpenShell gateway{} does not accept this user's credentials "
                    "({})",
                    where, doc.authentication.error),
        fmt::format("sign in with `openshell gateway login {}`",
                    name.empty() ? "<gateway>" : name));
  }
  // A connected gateway whose file refuses our sandboxes: the refusals,
  // before any sandbox meets them.
  if (config.failure) return *config.failure;
  if (config.warning) return *config.warning;
  const SemVer& newest = kModelledOpenShell.newest;
  if (gateway_version && *gateway_version > newest) {
    return Warn(check_id::kOpenShellGateway,
                fmt::format("The OpenShell gateway{} is {}, newer than {}, the newest release "
                            "this node was written for, so refusals it gives may go unexplained",
                            where, gateway_version->ToString(), newest.ToString()),
                fmt::format("install OpenShell {} for the CLI and the gateway, or a mojoup-node "
                            "release that knows OpenShell {}",
                            newest.ToString(), gateway_version->ToString()),
                detail);
  }
  if (gateway_version && *gateway_version != cli_version) {
    return Warn(check_id::kOpenShellGateway,
                fmt::format("The OpenShell gateway{} is {} but the CLI is {}, two releases of "
                            "the {} series that OpenShell does not test together",
                            where, gateway_version->ToString(), cli_version.ToString(),
                            OpenShellSeries(cli_version)),
                "install the same OpenShell release for both", detail);
  }
  return Pass(check_id::kOpenShellGateway,
              fmt::format("The OpenShell gateway{} is connected", where), detail);
}

// A gateway whose status is not_configured, disconnected, error or one
// this node does not know; `said` is its error, ": ..." when it gave one.
Check UnconnectedGateway(const std::string& status, const std::string& where,
                         const std::string& said) {
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

// Judges `openshell status -o json` (its exit code, `status` and `version`)
// and the preflight's answer.
Check Gateway(const OpenShellCli& cli, const CommandResult& result,
              std::chrono::milliseconds timeout, const GatewayContext& context) {
  std::string preflight_note;
  std::optional<Check> preflight_failure;
  if (context.preflight) {
    preflight_failure = PreflightFailure(context.preflight->first, context.preflight->second,
                                         timeout, preflight_note);
  }
  ConfigJudgement config = JudgeConfig(context);
  // A gateway that will not start with its configuration is down or stale for
  // that reason: the preflight, or else gateway.toml, names it better than
  // the status does.
  auto start_failure = [&]() -> std::optional<Check> {
    if (preflight_failure) return preflight_failure;
    if (config.stops_start) return config.failure;
    return std::nullopt;
  };
  if (result.outcome == CommandResult::Outcome::kTimedOut) {
    if (auto failure = start_failure()) return *failure;
    return FailedCheck(
        check_id::kOpenShellGateway,
        fmt::format("The OpenShell gateway did not answer within {}", Seconds(timeout)),
        "restart the gateway with `systemctl --user restart openshell-gateway`");
  }
  if (!result.Succeeded()) {
    if (auto failure = start_failure()) return *failure;
    return FailedCheck(check_id::kOpenShellGateway,
                       fmt::format("The OpenShell gateway is not reachable ({})", Describe(result)),
                       std::string(kStartGateway), fmt::format("`{} status -o json`", cli.path()));
  }
  const GatewayStatus doc = json::Parse<GatewayStatus>(result.out, kGatewayStatus, "its status",
                                                       {.max_bytes = kMaxCommandOutput})
                                .value_or(GatewayStatus{});
  const std::string& status = doc.status;
  if (status.empty()) {
    if (auto failure = start_failure()) return *failure;
    return FailedCheck(check_id::kOpenShellGateway,
                       fmt::format("`openshell status -o json` printed no status ({})",
                                   FirstLine(result.out).substr(0, 80)),
                       "check that the OpenShell CLI is a release that supports `status -o json`");
  }
  const std::string where = GatewayName(doc);
  const std::string& error = doc.error;
  const std::string said = error.empty() ? "" : ": " + error;
  // The gateway's own release: `version` of `status -o json`, present when
  // connected (v0.0.111 commands/gateway.rs status_to_json; 0.1.x the same).
  const std::string& version = doc.version;
  const std::optional<SemVer> gateway_version =
      version.empty() ? std::nullopt : ParseSemVer(version);
  const SemVer& cli_version = context.cli_version;
  if (gateway_version && !SameOpenShellSeries(cli_version, *gateway_version)) {
    return FailedCheck(
        check_id::kOpenShellGateway,
        fmt::format("The OpenShell gateway{} is {} and the CLI {}, releases of different series "
                    "({} and {}), which cannot be mixed",
                    where, gateway_version->ToString(), cli_version.ToString(),
                    OpenShellSeries(*gateway_version), OpenShellSeries(cli_version)),
        "install the CLI and the gateway from the same release");
  }
  if (auto failure = start_failure()) return *failure;
  auto with_note = [&](std::string detail) {
    for (const std::string* note : {&preflight_note, &config.note}) {
      if (note->empty()) continue;
      detail = detail.empty() ? *note : detail + "; " + *note;
    }
    return detail;
  };
  if (status == "connected_http") {
    return FailedCheck(
        check_id::kOpenShellGateway,
        fmt::format("The OpenShell gateway{} answers only over HTTP: its gRPC health check failed"
                    "{}, and every sandbox command needs gRPC, so each would fail",
                    where, error.empty() ? "" : " (" + error + ")"),
        "restart it with `systemctl --user restart openshell-gateway`, and if it still answers "
        "only over HTTP, register it again with `openshell gateway add` so the CLI uses the "
        "gateway's TLS settings",
        with_note(doc.http_status.empty() ? "" : "HTTP health: " + doc.http_status));
  }
  if (status == "connected") {
    return ConnectedGateway(doc, where, gateway_version, cli_version, config,
                            with_note(version.empty() ? "" : "gateway version " + version));
  }
  return UnconnectedGateway(status, where, said);
}

// A remote gateway's record and credentials, as this user's CLI keeps them:
// the failure, or nullopt with `found` filled and `detail` saying what was
// seen.
std::optional<Check> RemoteRecord(Kernel& kernel, const std::string& name,
                                  OpenShellGatewayMetadata& found, std::string& detail) {
  auto metadata = ReadOpenShellGatewayMetadata(kernel, name);
  if (absl::IsNotFound(metadata.status())) {
    const std::string where = OpenShellConfigDir(kernel).value_or("$HOME/.config/openshell");
    return FailedCheck(
        check_id::kOpenShellGateway,
        fmt::format("The OpenShell CLI has no record of the remote gateway {} (no "
                    "{}/gateways/{}/metadata.json)",
                    name, where, name),
        fmt::format("register it as this user with `openshell gateway add <endpoint> --name {}`",
                    name));
  }
  if (!metadata.ok()) {
    return FailedCheck(
        check_id::kOpenShellGateway, std::string(metadata.status().message()),
        fmt::format("register the gateway {} again with `openshell gateway add`", name));
  }
  if (metadata->endpoint.empty()) {
    return FailedCheck(
        check_id::kOpenShellGateway,
        fmt::format("The OpenShell gateway metadata {} names no endpoint for the gateway {}",
                    metadata->path, name),
        fmt::format("register it again with `openshell gateway add <endpoint> --name {}`", name));
  }
  found = *std::move(metadata);
  const OpenShellGatewayCredentials credentials =
      FindOpenShellGatewayCredentials(kernel, found, name);
  detail = fmt::format("gateway {} at {}, remote; metadata {}; credentials: {}", name,
                       found.endpoint, found.path, credentials.kind);
  if (!credentials.present.empty()) {
    detail += fmt::format(" ({})", fmt::join(credentials.present, ", "));
  }
  if (credentials.missing.empty()) return std::nullopt;
  const std::string fix =
      credentials.kind == "mTLS"
          ? fmt::format(
                "put the gateway's client bundle (ca.crt, tls.crt, tls.key) where the CLI "
                "reads it, as `openshell gateway add {} --name {}` does",
                found.endpoint, name)
          : fmt::format("sign in with `openshell gateway login {}`", name);
  return FailedCheck(
      check_id::kOpenShellGateway,
      fmt::format("The OpenShell gateway {} at {} is remote and this user has no "
                  "{} credentials for it (missing {})",
                  name, found.endpoint, credentials.kind, fmt::join(credentials.missing, ", ")),
      fix, detail);
}

// A remote gateway, by what a normal user can see: its record, its
// credentials, then `status -o json` (connected, accepting them). The
// local gateway.toml and preflight say nothing of it and are not read.
Check RemoteGateway(Kernel& kernel, const CommandResult& result, std::chrono::milliseconds timeout,
                    const std::string& configured, const SemVer& cli_version) {
  GatewayStatus doc;
  if (result.Succeeded()) {
    doc = json::Parse<GatewayStatus>(result.out, kGatewayStatus, "its status",
                                     {.max_bytes = kMaxCommandOutput})
              .value_or(GatewayStatus{});
  }
  const std::string name = configured.empty() ? doc.gateway : configured;
  if (name.empty()) {
    return FailedCheck(check_id::kOpenShellGateway,
                       "The remote OpenShell gateway is not named and the CLI has none selected",
                       "name it with `mojoup-node config set node.sandbox.openshell_gateway NAME`");
  }
  OpenShellGatewayMetadata metadata;
  std::string detail;
  if (auto failure = RemoteRecord(kernel, name, metadata, detail)) return *failure;
  const std::string where = fmt::format(" {} at {}", name, metadata.endpoint);
  const std::string status_call = fmt::format("openshell -g {} status", name);
  if (result.outcome == CommandResult::Outcome::kTimedOut) {
    return FailedCheck(
        check_id::kOpenShellGateway,
        fmt::format("The remote OpenShell gateway{} did not answer within {}", where,
                    Seconds(timeout)),
        fmt::format("check the network path to {} and `{}`", metadata.endpoint, status_call),
        detail);
  }
  if (!result.Succeeded() || doc.status.empty()) {
    return FailedCheck(
        check_id::kOpenShellGateway,
        fmt::format("The remote OpenShell gateway{} is not reachable ({})", where,
                    result.Succeeded() ? "no status" : Describe(result)),
        fmt::format("check the network path to {} and `{}`", metadata.endpoint, status_call),
        detail);
  }
  if (doc.status != "connected") {
    return FailedCheck(
        check_id::kOpenShellGateway,
        fmt::format("The remote OpenShell gateway{} is {}{}", where, doc.status,
                    doc.error.empty() ? "" : ": " + doc.error),
        fmt::format("ask its operator whether it is up, and check `{}`", status_call), detail);
  }
  const std::optional<SemVer> version =
      doc.version.empty() ? std::nullopt : ParseSemVer(doc.version);
  if (version && !SameOpenShellSeries(cli_version, *version)) {
    return FailedCheck(
        check_id::kOpenShellGateway,
        fmt::format("The remote OpenShell gateway{} is {} and the CLI {}, releases of different "
                    "series, which cannot be mixed",
                    where, version->ToString(), cli_version.ToString()),
        "install the CLI from the gateway's release", detail);
  }
  if (!doc.version.empty()) detail += "; gateway version " + doc.version;
  doc.gateway = name;
  Check check = ConnectedGateway(doc, where, version, cli_version, ConfigJudgement{}, detail);
  if (check.status == Status::kPass) {
    check.summary = fmt::format("The remote OpenShell gateway{} is connected", where);
  }
  return check;
}

std::optional<std::string> FindOnPath(Kernel& host, std::string_view name) {
  std::string path = host.GetEnv("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + std::string(name);
    if (IsExecutableFile(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
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
  return FindOnPath(host, "openshell");
}

std::optional<std::string> FindOpenShellGateway(Kernel& host) {
  return FindOnPath(host, "openshell-gateway");
}

std::string OpenShellSeries(const SemVer& version) {
  return version.major == 0 ? fmt::format("0.{}.x", version.minor)
                            : fmt::format("{}.x", version.major);
}

bool SameOpenShellSeries(const SemVer& a, const SemVer& b) {
  return a.major == b.major && (a.major != 0 || a.minor == b.minor);
}

namespace {

// node.sandbox.openshell_remote, or (auto) the named gateway's metadata; a
// gateway with no metadata, or none named, is local.
bool GatewayIsRemote(Kernel& kernel, const ProbeOptions& options) {
  if (options.openshell_remote) return *options.openshell_remote;
  if (options.openshell_gateway.empty()) return false;
  // A record that is there but cannot be used is judged by the remote
  // check, which says why.
  auto metadata = ReadOpenShellGatewayMetadata(kernel, options.openshell_gateway);
  if (!metadata.ok()) return !absl::IsNotFound(metadata.status());
  return metadata->is_remote;
}

// Judges `openshell --version` at `path`: it answered, with a version
// the runtime can drive, and the host has what that release needs.
Check JudgeCli(Kernel& kernel, const std::string& path, const CommandResult& version,
               const std::optional<SemVer>& parsed, std::chrono::milliseconds timeout) {
  if (version.outcome == CommandResult::Outcome::kTimedOut) {
    return FailedCheck(
        check_id::kOpenShellCli,
        fmt::format("`{} --version` did not answer within {}", path, Seconds(timeout)),
        "reinstall OpenShell or point node.sandbox.openshell_path at a working binary");
  }
  if (!version.Succeeded()) {
    return FailedCheck(
        check_id::kOpenShellCli, fmt::format("`{} --version` failed ({})", path, Describe(version)),
        "reinstall OpenShell or point node.sandbox.openshell_path at a working binary");
  }
  if (!parsed) {
    return FailedCheck(
        check_id::kOpenShellCli,
        fmt::format("`{} --version` printed no version (\"{}\")", path,
                    FirstLine(version.out).substr(0, 60)),
        "reinstall OpenShell or point node.sandbox.openshell_path at a working binary");
  }
  if (*parsed < kMinOpenShell) {
    return FailedCheck(
        check_id::kOpenShellCli,
        fmt::format("OpenShell {} at {} is too old: the openshell runtime reads `openshell "
                    "status -o json` and `openshell sandbox get -o json`, which OpenShell has "
                    "only from {}",
                    parsed->ToString(), path, kMinOpenShell.ToString()),
        fmt::format("upgrade OpenShell to {} or later", kMinOpenShell.ToString()));
  }
  if (*parsed < kOpenShellCreateWithoutSsh && !FindOnPath(kernel, "ssh")) {
    return FailedCheck(
        check_id::kOpenShellCli,
        fmt::format("OpenShell {} at {} creates sandboxes through the host's `ssh`, which is "
                    "not on PATH",
                    parsed->ToString(), path),
        fmt::format("install an ssh client (`apt-get install openssh-client`), or upgrade "
                    "OpenShell to {} or later",
                    kOpenShellCreateWithoutSsh.ToString()));
  }
  return Pass(check_id::kOpenShellCli, fmt::format("OpenShell {} at {}", parsed->ToString(), path));
}

}  // namespace

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
    OpenShellCli shell(commands, *path, options.openshell_gateway);
    const bool remote = GatewayIsRemote(kernel, options);
    // Both questions at once: the gateway's answer is used only if the CLI passes.
    auto status = std::async(std::launch::async, [&] { return shell.Status(options.timeout); });
    CommandResult version = shell.Version(options.timeout);
    std::optional<SemVer> parsed = version.Succeeded() ? ParseSemVer(version.out) : std::nullopt;
    cli = JudgeCli(kernel, *path, version, parsed, options.timeout);
    cli.duration_ms = elapsed_ms();
    // A 0.1 gateway installed here can say whether its configuration will
    // start: `openshell-gateway config preflight`, alongside the status.
    std::optional<std::string> gateway_binary;
    std::future<CommandResult> preflight;
    if (cli.status == Status::kPass && !remote && *parsed >= kFirstGatewayPreflight) {
      gateway_binary = FindOpenShellGateway(kernel);
      if (gateway_binary) {
        preflight = std::async(std::launch::async, [&] {
          return shell.GatewayPreflight(*gateway_binary, options.timeout);
        });
      }
    }
    CommandResult answer = status.get();
    if (cli.status == Status::kPass && remote) {
      Check gateway =
          RemoteGateway(kernel, answer, options.timeout, options.openshell_gateway, *parsed);
      gateway.duration_ms = elapsed_ms();
      return {settle(cli), settle(gateway)};
    }
    if (cli.status == Status::kPass) {
      GatewayContext context{*parsed, std::nullopt, std::nullopt};
      if (gateway_binary) context.preflight.emplace(*gateway_binary, preflight.get());
      context.config = internal::ReadGatewayConfig(kernel, *parsed);
      Check gateway = Gateway(shell, answer, options.timeout, context);
      gateway.duration_ms = elapsed_ms();
      return {settle(cli), settle(gateway)};
    }
  }
  cli.duration_ms = elapsed_ms();
  return {settle(cli), settle(Skip(check_id::kOpenShellGateway,
                                   "Not checked: there is no usable OpenShell CLI", required))};
}

}  // namespace mojoup::probe

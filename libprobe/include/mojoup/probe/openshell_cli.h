// OpenShellCli: the questions the probe asks the `openshell` command-line tool.
//
// Every call runs `openshell` through a CommandRunner with a deadline. The
// replies are parsed the way the real CLI prints them (see the design's
// FACTS.md): `openshell --version` and `openshell status -o json`, whose
// `status` is connected, connected_http, error, disconnected or
// not_configured, and which exits 1 with the error on stderr and no JSON when
// nothing listens. When connected, its `version` is the gateway's own release.
// The OpenShell facts behind this file: libsandbox/testing/FAKE_OPENSHELL.md.
#pragma once

#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mojoup/probe/command_runner.h"
#include "mojoup/probe/kernel.h"
#include "mojoup/probe/semver.h"

namespace mojoup::probe {

// The `openshell` executable: `configured` when given (it must exist and be
// executable), else the first `openshell` on PATH. nullopt when there is none.
std::optional<std::string> FindOpenShell(Kernel& host,
                                         const std::optional<std::string>& configured);

// The first `openshell-gateway` on PATH, or nullopt.
std::optional<std::string> FindOpenShellGateway(Kernel& host);

// "0.0.x", "0.1.x", "1.x": the release series. OpenShell 0.1.0 changed the
// protocol, field names and time types, so a 0.0.x CLI and a 0.1.x gateway
// (or the reverse) cannot be mixed (docs/upgrade/0-1-0, PR #3113 #3272 #3352).
std::string OpenShellSeries(const SemVer& version);
bool SameOpenShellSeries(const SemVer& a, const SemVer& b);

// `openshell-gateway config preflight` exists from 0.1.0 (deploy/man/openshell-gateway.8).
inline constexpr SemVer kFirstGatewayPreflight{0, 1, 0};

// One sentence naming the gateway setting (or rule) behind a refusal that
// `openshell sandbox create` printed on stderr, or that
// `openshell-gateway config preflight` printed; nullopt when the text is not a
// refusal this knows. The CLI wraps the gateway's message over several lines
// with box-drawing characters; those are ignored. Knows: Docker
// `enable_bind_mounts` (0.0.x and 0.1.x), `allow_driver_config` (0.1.x),
// resource admission of host bind mounts and of unlabelled volumes (0.1.x), a
// sandbox without admission provenance, a gateway.toml that is not schema
// version 2, a 0.0.x/0.1.x mix, and sandbox names over 19 characters or not
// DNS-1123 labels.
std::optional<std::string> ExplainGatewayRefusal(std::string_view stderr_text);

class OpenShellCli {
 public:
  OpenShellCli(CommandRunner& runner, std::string path) : runner_(runner), path_(std::move(path)) {}
  // Every call names the gateway `gateway` (`-g NAME` before the command,
  // a global flag of the CLI: v0.0.111 crates/openshell-cli/src/main.rs);
  // empty: the CLI's own choice (OPENSHELL_GATEWAY, the active gateway).
  OpenShellCli(CommandRunner& runner, std::string path, std::string gateway)
      : runner_(runner), path_(std::move(path)), gateway_(std::move(gateway)) {}

  const std::string& path() const { return path_; }
  const std::string& gateway() const { return gateway_; }

  // `openshell --version`
  CommandResult Version(std::chrono::milliseconds timeout) const {
    return runner_.Run(Argv({"--version"}), timeout);
  }
  // `openshell status -o json`
  CommandResult Status(std::chrono::milliseconds timeout) const {
    return runner_.Run(Argv({"status", "-o", "json"}), timeout);
  }
  // path, `-g gateway` when one is named, then `words`.
  std::vector<std::string> Argv(std::initializer_list<std::string> words) const {
    std::vector<std::string> argv = {path_};
    if (!gateway_.empty()) argv.insert(argv.end(), {"-g", gateway_});
    argv.insert(argv.end(), words.begin(), words.end());
    return argv;
  }
  // `openshell-gateway config preflight`, `gateway` being its path: validates
  // the gateway's TOML as the daemon would read it, changing nothing. Exit 0
  // when valid; else a message with `category=legacy_schema_v1`,
  // `category=malformed` or `category=missing_path`.
  CommandResult GatewayPreflight(const std::string& gateway,
                                 std::chrono::milliseconds timeout) const {
    return runner_.Run({gateway, "config", "preflight"}, timeout);
  }

 private:
  CommandRunner& runner_;
  std::string path_;
  std::string gateway_;
};

}  // namespace mojoup::probe

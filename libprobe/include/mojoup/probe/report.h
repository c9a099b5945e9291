// Report: what the host probe found, check by check, and the verdict.
//
// A Report lists the checks in a fixed order (os, landlock, seccomp, listener
// slot, WSL, docker, openshell cli, gateway). The verdict says whether agents
// can run in a sandbox here and, when they cannot, why: one sentence, taken
// from the first required check that failed.
//
//   mojoup::probe::Report report = mojoup::probe::ProbeSystem({});
//   std::puts(report.verdict.Line().c_str());
//   // "This machine cannot sandbox agents: Docker is not running ...; start it with ..."
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mojoup::probe {

enum class Status { kPass, kWarn, kFail, kSkip };

// "pass", "warn", "fail", "skip": the words the JSON and the text output use.
std::string_view StatusName(Status status);

// Stable check ids: `mojoup-node doctor --json` prints them and scripts match
// on them, so a name never changes meaning.
namespace check_id {
inline constexpr std::string_view kOsLinux = "os.linux";
inline constexpr std::string_view kLandlock = "kernel.landlock";
inline constexpr std::string_view kSeccomp = "kernel.seccomp";
inline constexpr std::string_view kSeccompListener = "kernel.seccomp_listener";
inline constexpr std::string_view kWsl = "host.wsl";
inline constexpr std::string_view kDocker = "docker.daemon";
inline constexpr std::string_view kOpenShellCli = "openshell.cli";
inline constexpr std::string_view kOpenShellGateway = "openshell.gateway";
// Not the probe's: mojoup::Node::Doctor adds it, after the probe's checks.
inline constexpr std::string_view kSandboxImage = "sandbox.image";
// Also Node::Doctor's: whether the host's git takes any directory of git's
// shape for a repository (safe.bareRepository).
inline constexpr std::string_view kHostGit = "host.git";
}  // namespace check_id

struct Check {
  std::string id;
  Status status = Status::kSkip;
  // A required check that fails means this machine cannot sandbox agents.
  bool required = true;
  // One sentence: what was found.
  std::string summary;
  // Supporting facts (errno, endpoint, versions); may be empty.
  std::string detail;
  // One sentence: what to do about a failure or warning.
  std::optional<std::string> remedy;
  // For a failure: cause and fix in one sentence, used as the verdict's reason.
  std::string reason;
  double duration_ms = 0;
};

struct Verdict {
  bool can_sandbox = false;
  // One sentence ending with a period; empty when can_sandbox.
  std::optional<std::string> reason;

  // "Agents run in a sandbox." or "This machine cannot sandbox agents: <reason>"
  std::string Line() const;
};

struct Report {
  std::vector<Check> checks;
  Verdict verdict;

  // The check with this id, or nullptr.
  const Check* Find(std::string_view id) const;
};

// The verdict for these checks: the first failing required check, in order, decides.
Verdict VerdictFor(const std::vector<Check>& checks);

// `mojoup-node doctor --json`: one object, schema "mojoup.doctor/v1".
std::string ReportToJson(const Report& report);

// `mojoup-node doctor`: the verdict line, then one line per check and, for
// failures and warnings, the remedy. `color` adds ANSI colour to the status.
std::string ReportToText(const Report& report, bool color);

}  // namespace mojoup::probe

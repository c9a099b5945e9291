// Policy files: `.mojoup/policy.json` in a repository, and the team's and
// organisation's hub policies, all in one schema (docs/policy.md, "Policies
// and `mojoup-node policy explain`"):
//
//   {"agents": {"sandbox": "required",
//               "network": {"allow": [{"host": "api.github.com", "ports": [443]},
//                                     {"host": "*.npmjs.org"}],
//                           "deny": [{"host": "gist.github.com"}],
//                           "tool_services": true,
//                           "ask": true}}}
//
// Parsing fails closed: a syntax error names file:line:column; a semantic
// error names file:line:column, the JSON path (/agents/network/allow/2/ports/0)
// and what was expected; an unknown key is an error with a did-you-mean.
//
//   auto file = mojoup::policy::LoadPolicyFile("/src/app/.mojoup/policy.json", Level::kRepo);
//   if (!file.ok()) { std::cerr << file.status().message() << "\n"; return 2; }
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace mojoup::policy {

// Where a value came from. Higher levels may only tighten lower ones.
enum class Level { kDefault, kNode, kRepo, kTeam, kOrg };
// "default", "node", "repo", "team", "org"
std::string_view LevelName(Level level);

enum class SandboxAsk { kNone, kPreferred, kRequired };
// "preferred", "required" (kNone has no name: JSON null)
std::string_view SandboxAskName(SandboxAsk ask);

// Ports a rule without "ports" covers.
inline const std::vector<std::uint16_t> kDefaultPorts = {443, 80};

// One allow or deny entry.
struct HostRule {
  // Lowercase ASCII (IDNs as punycode): "api.github.com", "*.npmjs.org",
  // "10.0.0.7" or "[fd00::7]".
  std::string host;
  std::vector<std::uint16_t> ports = kDefaultPorts;

  bool wildcard() const { return host.size() > 2 && host[0] == '*' && host[1] == '.'; }
  // "443,80"
  std::string PortList() const;
  friend bool operator==(const HostRule&, const HostRule&) = default;
};

// One parsed file.
struct PolicyFile {
  std::string path;
  Level level = Level::kRepo;
  SandboxAsk sandbox = SandboxAsk::kNone;
  std::vector<HostRule> allow;
  std::vector<HostRule> deny;
  std::optional<bool> tool_services;
  // May a destination no rule decides be held for the operator's answer?
  std::optional<bool> ask;
  // Hub files only: false means lower levels may not add allowed hosts.
  std::optional<bool> extend;
};

// Policy files larger than this are refused.
inline constexpr std::size_t kMaxPolicyBytes = 1 << 20;

// Reads and parses `path`. A missing file is NotFound; every other problem is
// InvalidArgument with a message that starts with "path:line:column: ".
absl::StatusOr<PolicyFile> LoadPolicyFile(const std::string& path, Level level);

// Parses `text` as if read from `path` (used in messages only).
absl::StatusOr<PolicyFile> ParsePolicy(std::string_view text, const std::string& path, Level level);

// Validates and normalises one host pattern: lowercase, IDN to punycode, one
// trailing dot dropped ("api.github.com." -> "api.github.com"), IPv6 in its
// canonical form. A wildcard must stand over a name: "*.0.0.1" and "*.254",
// whose labels are all numbers, are refused. On error, says what was
// expected ("an exact host or *.domain ...").
absl::StatusOr<std::string> NormalizeHostPattern(std::string_view pattern);

}  // namespace mojoup::policy

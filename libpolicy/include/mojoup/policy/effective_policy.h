// EffectivePolicy: the repository's policy under the team's and the
// organisation's, layered:
//   - sandbox: the strictest any level asks (required > preferred > none);
//   - deny: the union of every level's;
//   - allow: the union, except that a level with "extend": false drops every
//     lower level's additions;
//   - tool_services: on unless some level turns it off;
//   - ask: off unless some level says true; off again when any level says
//     false or a hub closes the list with "extend": false (a closed list
//     admits no additions, asked or not), so a hub can forbid it.
// Every value carries its provenance: the level and the file it came from.
//
//   std::vector<PolicyFile> files = {*org, *repo};
//   EffectivePolicy policy = Layer(files);
//   policy.sandbox.source  // Level::kOrg
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "mojoup/policy/policy.h"

namespace mojoup::policy {

struct Source {
  Level level = Level::kDefault;
  std::string file;  // empty for kDefault and kNode
};

template <class T>
struct Sourced {
  T value{};
  Source source;
};

struct SourcedRule {
  HostRule rule;
  Source source;
};

// An allow rule of a lower level left out because a hub policy above it
// said "extend": false.
struct DroppedRule {
  SourcedRule rule;
  Source closed_by;
};

struct EffectivePolicy {
  std::vector<Source> sources;  // the files read, org first
  Sourced<SandboxAsk> sandbox;
  std::vector<SourcedRule> allow;
  std::vector<DroppedRule> dropped;  // what "extend": false left out, and who
  std::vector<SourcedRule> deny;
  Sourced<bool> tool_services{true, {}};
  // Whether a destination no rule decides may be held for the operator's
  // answer. Off: the level that turned it off (or kDefault when no level
  // said anything); on: the highest level that said true. The node must
  // allow it too (DecideAsk).
  Sourced<bool> ask{false, {}};
  // The highest hub policy whose "extend" is false, if one is.
  std::optional<Source> closed;
};

// Layers the files (any order; at most one per level).
EffectivePolicy Layer(const std::vector<PolicyFile>& files);

// Where the policies for `repo` live, and which of them exist.
struct PolicyPaths {
  std::string repo_root;  // the repository's top directory, absolute
  std::string repo;       // <repo_root>/.mojoup/policy.json
  std::string team;       // node config policy.team, may be empty
  std::string org;        // node config policy.org, may be empty
  // The repository policy's bytes, when the caller read them already (so
  // that the policy it checked is the one used): with repo_read set, a
  // repo_text of nullopt means the repository has no policy file.
  bool repo_read = false;
  std::optional<std::string> repo_text;
};

// The repository that holds `dir`: the nearest directory upwards with a
// .mojoup/policy.json or a .git, else `dir` itself.
std::string FindRepoRoot(const std::string& dir);

class NodeConfig;

// The repository holding `dir`, its policy file, and the hub files the node
// config names (policy.org, policy.team).
PolicyPaths PolicyPathsFor(const std::string& dir, const NodeConfig& config);

// Reads and layers every policy that exists. A repository without a policy
// file is no error; a hub file the config names but that is missing is.
absl::StatusOr<EffectivePolicy> LoadEffectivePolicy(const PolicyPaths& paths);

}  // namespace mojoup::policy

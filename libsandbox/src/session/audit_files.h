// The sessions' audit files (<state dir>/audit/<id>.jsonl) as a set: which
// are old enough to go.
#pragma once

#include <chrono>
#include <cstddef>
#include <set>
#include <string>
#include <vector>

namespace mojoup::sandbox {

struct AuditPruning {
  std::size_t keep = 200;               // node.audit.keep
  std::chrono::hours max_age{24 * 30};  // node.audit.max_age_days
  std::chrono::system_clock::time_point now{};
  std::set<std::string> live{};  // sessions on record: never removed
};

// Removes from `dir` the audit files past the newest `keep` and those last
// written more than `max_age` ago, but never a live session's. Only regular
// files named <16 hex digits>.jsonl count; a link or anything else is left
// alone, never followed. The ids removed; what could not be removed goes to
// `errors`, one sentence each. An absent directory has nothing to remove.
std::vector<std::string> PruneAudits(const std::string& dir, const AuditPruning& pruning,
                                     std::vector<std::string>& errors);

}  // namespace mojoup::sandbox

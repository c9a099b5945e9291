#include "mojoup/policy/effective_policy.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "fmt/format.h"
#include "mojoup/policy/node_config.h"

namespace mojoup::policy {
namespace {

int Rank(Level level) { return static_cast<int>(level); }

// One more level's word on ask, the levels seen highest first: the highest
// level that turns it off decides, else the highest that turns it on.
void LayerAsk(const PolicyFile& file, const Source& source, Sourced<bool>& ask) {
  const bool turned_off = !ask.value && ask.source.level != Level::kDefault;
  if (turned_off) return;
  if (file.ask == false || file.extend == false) {
    ask = {false, source};
  } else if (file.ask == true && !ask.value) {
    ask = {true, source};
  }
}

}  // namespace

EffectivePolicy Layer(const std::vector<PolicyFile>& files) {
  std::vector<const PolicyFile*> ordered;
  for (const PolicyFile& file : files) ordered.push_back(&file);
  // Highest level first: org, team, repo.
  std::stable_sort(ordered.begin(), ordered.end(), [](const PolicyFile* a, const PolicyFile* b) {
    return Rank(a->level) > Rank(b->level);
  });

  EffectivePolicy policy;
  std::optional<Source> closed;  // a higher level said extend: false
  for (const PolicyFile* file : ordered) {
    Source source{file->level, file->path};
    policy.sources.push_back(source);
    // Stricter wins; on a tie the higher level (seen first) keeps the credit.
    if (file->sandbox > policy.sandbox.value) policy.sandbox = {file->sandbox, source};
    for (const HostRule& rule : file->deny) policy.deny.push_back({rule, source});
    for (const HostRule& rule : file->allow) {
      if (closed) {
        policy.dropped.push_back({{rule, source}, *closed});
      } else {
        policy.allow.push_back({rule, source});
      }
    }
    if (file->extend == false && !closed) closed = source;
    LayerAsk(*file, source, policy.ask);
    if (file->tool_services) {
      // Off anywhere is off; on counts only while nobody above turned it off.
      if (!*file->tool_services && policy.tool_services.value) {
        policy.tool_services = {false, source};
      } else if (*file->tool_services && policy.tool_services.source.level == Level::kDefault) {
        policy.tool_services = {true, source};
      }
    }
  }
  policy.closed = closed;
  return policy;
}

std::string FindRepoRoot(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path start = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  for (fs::path at = start; !at.empty(); at = at.parent_path()) {
    if (fs::exists(at / ".mojoup" / "policy.json", ec) || fs::exists(at / ".git", ec)) {
      return at.string();
    }
    if (at == at.root_path()) break;
  }
  return start.string();
}

PolicyPaths PolicyPathsFor(const std::string& dir, const NodeConfig& config) {
  PolicyPaths paths;
  paths.repo_root = FindRepoRoot(dir);
  paths.repo = paths.repo_root + "/.mojoup/policy.json";
  paths.org = config.Get("policy.org").value_or("");
  paths.team = config.Get("policy.team").value_or("");
  return paths;
}

absl::StatusOr<EffectivePolicy> LoadEffectivePolicy(const PolicyPaths& paths) {
  std::vector<PolicyFile> files;
  struct Entry {
    const std::string* path;
    Level level;
    bool must_exist;
  };
  for (Entry entry : {Entry{&paths.org, Level::kOrg, true}, Entry{&paths.team, Level::kTeam, true},
                      Entry{&paths.repo, Level::kRepo, false}}) {
    if (entry.path->empty()) continue;
    const bool given = entry.level == Level::kRepo && paths.repo_read;
    if (given && !paths.repo_text) continue;
    auto file = given ? ParsePolicy(*paths.repo_text, *entry.path, entry.level)
                      : LoadPolicyFile(*entry.path, entry.level);
    if (!file.ok()) {
      if (absl::IsNotFound(file.status()) && !entry.must_exist) continue;
      if (absl::IsNotFound(file.status())) {
        return absl::InvalidArgumentError(
            fmt::format("{}: the {} hub policy named by the node config (policy.{}) does not exist",
                        *entry.path, LevelName(entry.level), LevelName(entry.level)));
      }
      return file.status();
    }
    files.push_back(*std::move(file));
  }
  return Layer(files);
}

}  // namespace mojoup::policy

#include "mojoup/sandbox/policy_watch.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "fileinfo/file_info.h"
#include "fmt/format.h"
#include "mojoup/internal/atomic_file.h"
#include "mojoup/internal/file_lock.h"
#include "mojoup/internal/json_codec.h"
#include "mojoup/internal/rfc3339.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/internal/sha256.h"

namespace mojoup::sandbox {
namespace {

namespace fs = std::filesystem;
using WatchClock = PolicyWatch::Clock;

// Enough history for any repository a user works in between two runs.
constexpr std::size_t kSessionsKept = 64;
constexpr std::chrono::seconds kLockTimeout{5};

struct Window {
  std::string id;
  std::int64_t start = 0;  // nanoseconds since the epoch
  std::int64_t end = 0;    // 0: not ended (running, or its owner was killed)
};

// state/repos/<hash>.json: the sessions that ran on one repository, and the
// policy states the user accepted, per root, as the newest change time.
struct RepoHistory {
  std::string repo;
  std::vector<Window> sessions;
  // Read leniently: an entry of another type is dropped (nullopt only
  // while reading).
  std::vector<std::pair<std::string, std::optional<std::int64_t>>> accepted;
};

namespace json = internal::json;

constexpr auto kWindowJson =
    json::Message<Window>(json::Field("id", &Window::id), json::Field("start", &Window::start),
                          json::Field("end", &Window::end));
// Histories are read whatever their schema says, as they always were.
constexpr auto kHistoryJson = json::Message<RepoHistory>(
    json::Const("schema", "mojoup.repo-sessions/v1").Unchecked(),
    json::Field("repo", &RepoHistory::repo),
    json::Field("sessions", &RepoHistory::sessions, kWindowJson),
    json::Optional("accepted", &RepoHistory::accepted, json::OrNull<std::int64_t>()).Lenient());

std::int64_t Nanoseconds(WatchClock::time_point when) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count();
}

WatchClock::time_point TimePoint(std::int64_t nanoseconds) {
  return WatchClock::time_point(
      std::chrono::duration_cast<WatchClock::duration>(std::chrono::nanoseconds(nanoseconds)));
}

std::string HistoryPath(const std::string& dir, const std::string& repo) {
  return dir + "/" + internal::Sha256Hex(repo).substr(0, 32) + ".json";
}

// A history is small; a larger file is not one the node wrote.
constexpr std::size_t kMaxHistoryBytes = 1024 * 1024;

std::optional<RepoHistory> Parse(const std::string& text) {
  // Repository paths are bytes: no UTF-8 check.
  auto history = json::Parse<RepoHistory>(text, kHistoryJson, "the policy history",
                                          {.max_bytes = kMaxHistoryBytes, .utf8 = false});
  if (!history.ok()) return std::nullopt;
  std::erase_if(history->accepted, [](const auto& entry) { return !entry.second; });
  return *std::move(history);
}

std::string Serialize(const RepoHistory& history) { return json::ToJson(history, kHistoryJson); }

std::optional<RepoHistory> Read(const std::string& path) {
  auto text = internal::ReadRegularFile(path, kMaxHistoryBytes);
  return text.ok() ? Parse(text->bytes) : std::nullopt;
}

// What decides the policy of `root`, inside a repository `repo` that
// sessions could write: its .mojoup and policy file, and when `root` lies
// below `repo`, its .git and every directory from it up to `repo` (renaming
// one moves a whole tree, policy included, into place).
std::vector<std::string> Deciders(const std::string& root, const std::string& repo) {
  std::vector<std::string> paths = {root + "/.mojoup", root + "/.mojoup/policy.json"};
  if (root != repo) {
    paths.push_back(root + "/.git");
    for (fs::path at = root; at.string() != repo && IsWithin(at.string(), repo);
         at = at.parent_path()) {
      paths.push_back(at.string());
    }
  }
  return paths;
}

std::vector<RepoHistory> Histories(const std::string& dir) {
  std::vector<RepoHistory> histories;
  // Histories another user could have written are none of ours.
  if (!internal::CheckPrivateDir(dir, "the node's state directory").ok()) return histories;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    if (auto history = Read(entry.path().string())) histories.push_back(std::move(*history));
  }
  return histories;
}

}  // namespace

std::string PolicyChange::Sentence() const {
  return fmt::format("{} changed while sandboxed session {} ran on {} ({} to {})", path, session,
                     repo, started_at, ended_at.empty() ? "now" : ended_at);
}

PolicyWatch::PolicyWatch(std::string state_dir) : dir_(std::move(state_dir) + "/repos") {}

namespace {

// Reads, changes and writes back one repository's history under the lock.
template <class Change>
absl::Status Update(const std::string& dir, const std::string& repo, Change change) {
  if (absl::Status made = internal::MakePrivateDir(dir, "the node's state directory"); !made.ok()) {
    return made;
  }
  auto lock = internal::LockFile(dir + "/.lock", kLockTimeout);
  if (!lock.ok()) return lock.status();
  const std::string path = HistoryPath(dir, repo);
  RepoHistory history = Read(path).value_or(RepoHistory{repo, {}, {}});
  change(history);
  return internal::ReplaceAtomically(path, Serialize(history), 0600);
}

}  // namespace

absl::Status PolicyWatch::SessionStarted(const std::string& repo, const std::string& session,
                                         WatchClock::time_point when) {
  return Update(dir_, repo, [&](RepoHistory& history) {
    history.sessions.push_back({session, Nanoseconds(when), 0});
    if (history.sessions.size() > kSessionsKept) {
      history.sessions.erase(history.sessions.begin(),
                             history.sessions.end() - static_cast<std::ptrdiff_t>(kSessionsKept));
    }
  });
}

absl::Status PolicyWatch::SessionEnded(const std::string& repo, const std::string& session,
                                       WatchClock::time_point when) {
  return Update(dir_, repo, [&](RepoHistory& history) {
    for (Window& window : history.sessions) {
      if (window.id == session && window.end == 0) window.end = Nanoseconds(when);
    }
  });
}

namespace {

std::optional<std::int64_t> ChangeTime(const std::string& path,
                                       const std::map<std::string, std::int64_t>& known) {
  if (auto found = known.find(path); found != known.end()) return found->second;
  return ChangeTimeNs(path);
}

}  // namespace

std::optional<PolicyChange> PolicyWatch::FindChange(
    const std::string& root, const std::map<std::string, std::int64_t>& known) const {
  const std::int64_t now = Nanoseconds(WatchClock::now());
  std::optional<PolicyChange> latest;
  std::int64_t latest_time = 0;
  for (const RepoHistory& history : Histories(dir_)) {
    if (!IsWithin(root, history.repo)) continue;
    std::int64_t accepted = 0;
    for (const auto& [path, ctime] : history.accepted) {
      if (path == root) accepted = std::max(accepted, ctime.value_or(0));
    }
    for (const std::string& path : Deciders(root, history.repo)) {
      std::optional<std::int64_t> changed = ChangeTime(path, known);
      if (!changed || *changed <= accepted || *changed <= latest_time) continue;
      for (const Window& window : history.sessions) {
        const std::int64_t end = window.end == 0 ? now : window.end;
        if (*changed < window.start || *changed > end) continue;
        latest_time = *changed;
        latest =
            PolicyChange{path, history.repo, window.id, internal::Rfc3339(TimePoint(window.start)),
                         window.end == 0 ? "" : internal::Rfc3339(TimePoint(window.end))};
      }
    }
  }
  return latest;
}

absl::Status PolicyWatch::Accept(const std::string& root,
                                 const std::map<std::string, std::int64_t>& known) {
  for (const RepoHistory& history : Histories(dir_)) {
    if (!IsWithin(root, history.repo)) continue;
    std::int64_t newest = 0;
    for (const std::string& path : Deciders(root, history.repo)) {
      newest = std::max(newest, ChangeTime(path, known).value_or(0));
    }
    absl::Status updated = Update(dir_, history.repo, [&](RepoHistory& changed) {
      auto same = [&](const auto& entry) { return entry.first == root; };
      changed.accepted.erase(std::remove_if(changed.accepted.begin(), changed.accepted.end(), same),
                             changed.accepted.end());
      changed.accepted.emplace_back(root, newest);
    });
    if (!updated.ok()) return updated;
  }
  return absl::OkStatus();
}

}  // namespace mojoup::sandbox

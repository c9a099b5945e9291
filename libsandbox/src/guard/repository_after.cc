// The guard after a session: what the session left in the repository that
// git or the next run on the host would trust is moved aside
// (repository.h). The repository's files are the session's writing: every
// path inside it is opened beneath a directory descriptor, never followed
// through a link (repository_entries.h).
#include <fcntl.h>
#include <fts.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include "fileinfo/file_info.h"
#include "fmt/format.h"
#include "guard/git_index.h"
#include "guard/git_places.h"
#include "guard/repository.h"
#include "guard/repository_entries.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/policy/policy.h"

namespace mojoup::sandbox {
namespace {

using repo_guard::IfAbsent;
using repo_guard::TrustedEntry;

// A HEAD git reads as a ref and nothing else: a regular file holding a
// symbolic ref under refs/ or an object name.
bool PlainHead(int git_dir) {
  auto read = internal::ReadBeneath(git_dir, "HEAD", 4096);
  if (!read.ok()) return false;
  std::string head = read->bytes;
  if (!head.empty() && head.back() == '\n') head.pop_back();
  auto hex = [](std::string_view text) {
    return (text.size() == 40 || text.size() == 64) &&
           text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
  };
  constexpr std::string_view kRef = "ref: refs/";
  if (head.rfind(kRef, 0) == 0) {
    const std::string_view name = std::string_view(head).substr(kRef.size());
    // git check-ref-format's refusals that matter here: no control
    // characters, spaces, "..", or a leading '/'.
    return !name.empty() && name.front() != '/' && name.find("..") == std::string_view::npos &&
           std::none_of(name.begin(), name.end(), [](char c) {
             return static_cast<unsigned char>(c) <= ' ' || c == 0x7f || c == '~' || c == '^' ||
                    c == ':' || c == '?' || c == '*' || c == '[' || c == '\\';
           });
  }
  return hex(head);
}

// Entries of `table` the session created in the git directory open at
// `dir` (at `git_dir`), and a HEAD that is not a ref.
void CheckTrustedAfter(int dir, const std::string& git_dir, const TrustedEntry* begin,
                       const TrustedEntry* end, std::int64_t since, const std::string& session,
                       std::vector<std::string>& notices, std::vector<std::string>& errors) {
  for (const TrustedEntry* entry = begin; entry != end; ++entry) {
    const std::string name = entry->name;
    if (entry->absent != IfAbsent::kCheckAfter || name.find('/') != std::string::npos) continue;
    auto info = LstatAt(dir, name);
    if (!info || ChangeTimeOf(*info) < since) continue;
    MoveAside(
        dir, git_dir, name,
        fmt::format("the session made {}/{}, which git on this host would obey (an operation it "
                    "left in progress there is cut off)",
                    git_dir, name),
        session, notices, errors);
  }
  if (auto head = LstatAt(dir, "HEAD"); head && ChangeTimeOf(*head) >= since && !PlainHead(dir)) {
    MoveAside(dir, git_dir, "HEAD",
              fmt::format("the session left {}/HEAD as something other than a ref; git will not "
                          "use this repository until you restore it (`git symbolic-ref HEAD "
                          "refs/heads/BRANCH`)",
                          git_dir),
              session, notices, errors);
  }
}

// A git directory holds files and directories only: a link would send
// git's writes elsewhere (logs/HEAD into ~/.bashrc, a worktrees/ entry
// that `git gc` empties), a FIFO would hang it. objects/ is the bulk and
// git reads no link there either, so the whole tree is walked, from the
// descriptor (its /proc/self/fd name), never from a path a session could
// have swapped for a link.
void CheckOddFilesAfter(int dir, const std::string& git_dir, std::int64_t since,
                        const std::string& session, std::vector<std::string>& notices,
                        std::vector<std::string>& errors) {
  const std::string root = fmt::format("/proc/self/fd/{}", dir);
  std::vector<std::pair<std::string, mode_t>> odd;
  char* paths[] = {const_cast<char*>(root.c_str()), nullptr};
  if (FTS* walk = ::fts_open(paths, FTS_PHYSICAL | FTS_COMFOLLOW | FTS_XDEV, nullptr)) {
    while (FTSENT* item = ::fts_read(walk)) {
      if (item->fts_info == FTS_D) {
        // A directory the session made unsearchable would hide what is in
        // it: the owner gets rwx back before fts reads it.
        // The top is the descriptor's directory itself (its /proc name is
        // a link, which ChmodNoFollow refuses).
        const mode_t mode = item->fts_statp->st_mode;
        if ((mode & S_IRWXU) == S_IRWXU) continue;
        if (item->fts_level == 0) {
          ::fchmod(dir, (mode | S_IRWXU) & 07777);
        } else {
          internal::ChmodNoFollow(AT_FDCWD, item->fts_accpath, mode | S_IRWXU);
        }
        continue;
      }
      const std::string path = git_dir + std::string(item->fts_path).substr(root.size());
      if (item->fts_info == FTS_DNR || item->fts_info == FTS_NS || item->fts_info == FTS_ERR) {
        errors.push_back(
            fmt::format("{} cannot be checked ({}); look at it before running git "
                        "there",
                        path, std::strerror(item->fts_errno)));
        continue;
      }
      if (item->fts_level == 0 || item->fts_info == FTS_DP || item->fts_info == FTS_F) continue;
      if (ChangeTimeOf(*item->fts_statp) < since) continue;
      odd.emplace_back(path.substr(git_dir.size() + 1), item->fts_statp->st_mode);
    }
    ::fts_close(walk);
  }
  for (const auto& [relative, mode] : odd) {
    const std::size_t slash = relative.rfind('/');
    const std::string parent = slash == std::string::npos ? "" : relative.substr(0, slash);
    auto at = repo_guard::OpenParent(dir, parent);
    if (!at.ok()) continue;
    MoveAside(
        at->get(), parent.empty() ? git_dir : git_dir + "/" + parent, relative.substr(slash + 1),
        fmt::format("the session made {}/{} {}", git_dir, relative, internal::KindOfFile(mode)),
        session, notices, errors);
  }
}

// Entries of the index that name a path in a git directory: the host's
// `git checkout -- .` would write them there (read-cache.c checks no
// index path it reads).
void CheckIndexAfter(int dir, const std::string& git_dir, std::int64_t since,
                     const std::string& session, std::vector<std::string>& notices,
                     std::vector<std::string>& errors) {
  auto index = LstatAt(dir, "index");
  if (!index || ChangeTimeOf(*index) < since) return;
  // An index the host cannot read safely (over its size cap, say) is bad
  // input: aside with it, so that the next session starts.
  auto problem = IndexPathProblem(dir);
  if (!problem.ok()) {
    MoveAside(dir, git_dir, "index",
              fmt::format("the session left {}/index such that it cannot be read safely ({}); "
                          "run `git reset` to rebuild the index from HEAD",
                          git_dir, Message(problem.status())),
              session, notices, errors);
  } else if (*problem) {
    MoveAside(dir, git_dir, "index",
              fmt::format("the session left in {}/index the path {}, which git would write into "
                          "a git directory; run `git reset` to rebuild the index from HEAD",
                          git_dir, **problem),
              session, notices, errors);
  }
}

// What the session left in a git directory it could write (open at `dir`,
// at `git_dir`) that git on the host would trust: entries of `table` it
// created, a HEAD that is not a ref, links, FIFOs and devices where git
// expects files, and an index naming a path in a git directory.
void CheckGitDirAfter(int dir, const std::string& git_dir, const TrustedEntry* begin,
                      const TrustedEntry* end, std::int64_t since, const std::string& session,
                      std::vector<std::string>& notices, std::vector<std::string>& errors) {
  CheckTrustedAfter(dir, git_dir, begin, end, since, session, notices, errors);
  CheckOddFilesAfter(dir, git_dir, since, session, notices, errors);
  CheckIndexAfter(dir, git_dir, since, session, notices, errors);
}

// The same for a git directory given by its path, the user's own (a
// linked worktree's entry or common directory, outside the repository).
void CheckGitDirAfter(const std::string& git_dir, const TrustedEntry* begin,
                      const TrustedEntry* end, std::int64_t since, const std::string& session,
                      std::vector<std::string>& notices, std::vector<std::string>& errors) {
  auto dir = internal::OpenDirectory(git_dir);
  if (!dir.ok()) return;
  CheckGitDirAfter(dir->get(), git_dir, begin, end, since, session, notices, errors);
}

// A policy the session left where the repository had none (.mojoup/ is
// read-only when it exists) that no run could read: over its cap, or not a
// regular file. Bad input, moved aside, so that it does not stand in the
// way of the next run.
void MoveAsideUnreadablePolicy(int root, const std::string& repo, std::int64_t since,
                               const std::string& session, std::vector<std::string>& notices,
                               std::vector<std::string>& errors) {
  auto dir = internal::OpenBeneath(root, ".mojoup", O_RDONLY | O_DIRECTORY);
  if (!dir.ok()) return;
  auto info = LstatAt(dir->get(), "policy.json");
  if (!info || ChangeTimeOf(*info) < since) return;
  const bool regular = S_ISREG(info->st_mode);
  if (regular && static_cast<std::uint64_t>(info->st_size) <= policy::kMaxPolicyBytes) return;
  const std::string what =
      regular ? fmt::format("{} bytes", info->st_size) : internal::KindOfFile(info->st_mode);
  MoveAside(dir->get(), repo + "/.mojoup", "policy.json",
            fmt::format("the session left {}/.mojoup/policy.json {}, which no run reads (a policy "
                        "is a regular JSON file of at most 1 MiB); restore yours with `git "
                        "checkout -- .mojoup/policy.json` if it was committed",
                        repo, regular ? "of " + what : "as " + what),
            session, notices, errors);
}

}  // namespace

void MoveAsidePlantedRepositories(const std::string& repo, const GitPlaces& before,
                                  std::int64_t since, const std::string& session,
                                  std::vector<std::string>& notices,
                                  std::vector<std::string>& errors, const GitWalkBounds& bounds) {
  auto root = internal::OpenDirectory(repo);
  if (root.ok()) MoveAsideUnreadablePolicy(root->get(), repo, since, session, notices, errors);
  DisarmGitPlaces(repo, before, session, notices, errors, bounds);
  if (!root.ok()) return;
  // The git directories the session's mounts pinned are checked whatever
  // the walk reached: a walk cut short skips none of them. Each is opened
  // beneath the repository: one the session moved behind a link is not
  // followed (the walk above disarms it where it went).
  for (const GitPlace& place : before.places) {
    if (!place.guarded || !place.dot_git) continue;
    auto dir = place.path.empty()
                   ? repo_guard::OpenParent(root->get(), "")
                   : internal::OpenBeneath(root->get(), place.path, O_RDONLY | O_DIRECTORY);
    struct stat info {};
    if (!dir.ok() || ::fstat(dir->get(), &info) != 0 || info.st_dev != place.dev ||
        info.st_ino != place.ino) {
      continue;
    }
    const std::string git_dir = place.path.empty() ? repo : repo + "/" + place.path;
    CheckGitDirAfter(dir->get(), git_dir, std::begin(repo_guard::kTrustedEntries),
                     std::end(repo_guard::kTrustedEntries), since, session, notices, errors);
  }
  auto dot_git = LstatAt(root->get(), ".git");
  if (!dot_git || !S_ISREG(dot_git->st_mode)) return;
  // A linked worktree: its own entry was writable, and the main git
  // directory's objects, refs and logs (a link in logs/ would send the
  // host's next checkout's writes elsewhere).
  if (std::string entry = repo_guard::GitDirOf(root->get(), repo); !entry.empty()) {
    CheckGitDirAfter(entry, std::begin(repo_guard::kWorktreeEntries),
                     std::end(repo_guard::kWorktreeEntries), since, session, notices, errors);
    const std::filesystem::path common = std::filesystem::path(entry).parent_path().parent_path();
    if (std::filesystem::path(entry).parent_path().filename() == "worktrees") {
      CheckGitDirAfter(common.string(), std::begin(repo_guard::kCommonObjectEntries),
                       std::end(repo_guard::kCommonObjectEntries), since, session, notices, errors);
    }
  }
}

}  // namespace mojoup::sandbox

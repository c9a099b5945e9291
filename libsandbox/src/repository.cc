#include "repository.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "file_util.h"
#include "fmt/format.h"
#include "git_index.h"

namespace mojoup::sandbox {
namespace {

namespace fs = std::filesystem;

// What git reads from a git directory and runs or obeys on the host: config
// (core.fsmonitor, core.hooksPath, aliases, filters), hooks, info
// (attributes, exclude, sparse-checkout), modules (submodules' own git
// directories, each with config and hooks), worktrees (other worktrees'
// commondir and config.worktree), and the legacy remotes and branches files
// that name fetch URLs.
constexpr const char* kTrustedFiles[] = {"config", "config.worktree"};
constexpr const char* kTrustedDirs[] = {"hooks",     "info",    "modules",
                                        "worktrees", "remotes", "branches"};
// Made empty when missing, so the session cannot create them; git creates
// the same ones itself on init or on demand, and takes an empty one as none.
constexpr const char* kCreatedDirs[] = {"hooks", "info", "modules", "worktrees"};

// Places no git directory of a session may be in: the system's, and the
// node's own state.
constexpr const char* kSystemDirs[] = {"/bin",   "/boot",  "/dev",    "/etc",    "/lib",
                                       "/lib32", "/lib64", "/libx32", "/proc",   "/run",
                                       "/sbin",  "/sys",   "/usr",    "/var/run"};

absl::Status Refuse(std::string sentence) {
  return absl::FailedPreconditionError(std::move(sentence));
}

std::optional<struct stat> Lstat(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return std::nullopt;
  return info;
}

// The first line of a small file, without its line ending.
std::optional<std::string> FirstLine(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  if (!file || !std::getline(file, line)) return std::nullopt;
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

std::string Canonical(const fs::path& path) {
  std::error_code ec;
  fs::path canonical = fs::canonical(path, ec);
  return ec ? std::string() : canonical.string();
}

// Where `dir` may not be, as a sentence's tail; empty when it may.
std::string ForbiddenPlace(const std::string& dir, const RepositoryGuardOptions& options) {
  for (const char* system : kSystemDirs) {
    if (IsWithin(dir, system)) return fmt::format("{} is a system directory", system);
  }
  if (IsWithin(dir, options.state_dir) || IsWithin(options.state_dir, dir)) {
    return "it holds the node's state directory";
  }
  if (dir == options.home || IsWithin(options.home, dir)) return "it holds your home directory";
  return {};
}

// The git directory a work tree's .git leads to (itself, or what its
// "gitdir:" line names), or empty.
std::string GitDirOf(const std::string& work_tree) {
  const std::string dot_git = work_tree + "/.git";
  auto info = Lstat(dot_git);
  if (!info) return {};
  if (S_ISDIR(info->st_mode)) return dot_git;
  if (!S_ISREG(info->st_mode)) return {};
  std::optional<std::string> line = FirstLine(dot_git);
  constexpr std::string_view kPrefix = "gitdir: ";
  if (!line || line->rfind(kPrefix, 0) != 0) return {};
  fs::path named = line->substr(kPrefix.size());
  if (named.is_relative()) named = fs::path(work_tree) / named;
  return Canonical(named);
}

// The submodules of `work_tree` that keep their git directory inside their
// own work tree (not absorbed into .git/modules): the host trusts those
// git directories as it trusts the repository's.
std::vector<std::string> EmbeddedSubmoduleGitDirs(const std::string& work_tree) {
  std::vector<std::string> dirs;
  const std::string git_dir = GitDirOf(work_tree);
  if (git_dir.empty()) return dirs;
  auto gitlinks = IndexGitlinks(git_dir);
  if (!gitlinks.ok()) return dirs;
  for (const std::string& path : *gitlinks) {
    const std::string dot_git = work_tree + "/" + path + "/.git";
    if (auto info = Lstat(dot_git); info && S_ISDIR(info->st_mode)) dirs.push_back(dot_git);
  }
  return dirs;
}

// A git directory the user owns, with what every repository has.
absl::Status CheckGitDir(const std::string& dir, const std::string& via,
                         const RepositoryGuardOptions& options) {
  if (std::string why = ForbiddenPlace(dir, options); !why.empty()) {
    return Refuse(fmt::format("{} leads to {}, where no repository's git directory may be ({})",
                              via, dir, why));
  }
  struct Need {
    const char* name;
    bool directory;
  };
  for (Need need :
       {Need{"HEAD", false}, Need{"objects", true}, Need{"refs", true}, Need{"config", false}}) {
    auto info = Lstat(dir + "/" + need.name);
    if (!info || (need.directory ? !S_ISDIR(info->st_mode) : !S_ISREG(info->st_mode))) {
      return Refuse(fmt::format("{} leads to {}, which is not a git directory (it has no {} {})",
                                via, dir, need.name, need.directory ? "directory" : "file"));
    }
  }
  auto info = Lstat(dir);
  if (!info || info->st_uid != options.uid) {
    return Refuse(
        fmt::format("{} leads to {}, which another user owns; sessions use only "
                    "repositories of your own",
                    via, dir));
  }
  return absl::OkStatus();
}

// Read-only mounts of what git trusts in `git_dir`, creating the usual
// directories first.
absl::Status ProtectGitDir(const std::string& git_dir, std::vector<BindMount>& mounts) {
  for (const char* name : kCreatedDirs) {
    const std::string path = git_dir + "/" + name;
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      return Refuse(fmt::format("cannot create {} to protect it: {}", path, std::strerror(errno)));
    }
  }
  auto add = [&](const std::string& path) {
    if (Lstat(path)) mounts.push_back({path, path, true});
  };
  for (const char* name : kTrustedFiles) add(git_dir + "/" + name);
  for (const char* name : kTrustedDirs) add(git_dir + "/" + name);
  return absl::OkStatus();
}

absl::StatusOr<RepositoryMounts> GuardWorktree(const RepositoryGuardOptions& options,
                                               RepositoryMounts result) {
  const std::string dot_git = options.repo + "/.git";
  const std::string via = fmt::format("the worktree file {}", dot_git);
  std::optional<std::string> line = FirstLine(dot_git);
  constexpr std::string_view kPrefix = "gitdir: ";
  if (!line || line->rfind(kPrefix, 0) != 0) {
    return Refuse(fmt::format("{} does not say \"gitdir: PATH\"; fix or remove it", dot_git));
  }
  fs::path named = line->substr(kPrefix.size());
  if (named.is_relative()) named = fs::path(options.repo) / named;
  const std::string entry = Canonical(named);
  if (entry.empty() || !fs::is_directory(entry)) {
    return Refuse(fmt::format("{} names {}, which is not a directory", via, named.string()));
  }
  // A linked worktree's entry is <common>/worktrees/<name>.
  const fs::path entry_path(entry);
  if (entry_path.parent_path().filename() != "worktrees") {
    return Refuse(fmt::format(
        "{} names {}, which is not a linked worktree's entry (<repository>/.git/worktrees/NAME); "
        "sessions accept a repository or a linked worktree",
        via, entry));
  }
  const std::string common = entry_path.parent_path().parent_path().string();
  std::optional<std::string> commondir = FirstLine(entry + "/commondir");
  if (!commondir || commondir->empty()) {
    return Refuse(fmt::format("{} names {}, which has no commondir file", via, entry));
  }
  fs::path common_named = *commondir;
  if (common_named.is_relative()) common_named = entry_path / common_named;
  if (Canonical(common_named) != common) {
    return Refuse(
        fmt::format("{} names {}, whose commondir does not lead back to {}", via, entry, common));
  }
  // The entry must point back at this very .git file: an entry of another
  // worktree (or another repository) does not belong to this one.
  std::optional<std::string> back = FirstLine(entry + "/gitdir");
  if (!back || Canonical(fs::path(*back)) != Canonical(dot_git)) {
    return Refuse(
        fmt::format("{} names {}, which belongs to another worktree (its gitdir file "
                    "does not point back at {})",
                    via, entry, dot_git));
  }
  if (absl::Status ok = CheckGitDir(common, via, options); !ok.ok()) return ok;
  if (auto info = Lstat(entry); !info || info->st_uid != options.uid) {
    return Refuse(fmt::format("{} names {}, which another user owns", via, entry));
  }

  result.has_git = true;
  result.mounts.push_back({dot_git, dot_git, true});
  // The main git directory read-only, then what a commit writes: objects,
  // refs, logs, and this worktree's own entry (HEAD, index, its logs).
  result.mounts.push_back({common, common, true});
  for (const char* name : {"objects", "refs", "logs"}) {
    const std::string path = common + "/" + name;
    if (!fs::is_directory(path)) continue;
    result.mounts.push_back({path, path, false});
    result.writable.push_back(path);
  }
  result.mounts.push_back({entry, entry, false});
  result.writable.push_back(entry);
  // What the host reads back from the entry stays as it is.
  for (const char* name : {"commondir", "gitdir", "config.worktree"}) {
    const std::string path = entry + "/" + name;
    if (Lstat(path)) result.mounts.push_back({path, path, true});
  }
  return result;
}

// Renames `dot_git` to .git.sandbox-<session>; `what` says what the session
// made there, for the sentence.
void MoveAside(const std::string& dot_git, const std::string& what, const std::string& session,
               std::vector<std::string>& notices, std::vector<std::string>& errors) {
  const std::string aside = dot_git + ".sandbox-" + session;
  if (::rename(dot_git.c_str(), aside.c_str()) != 0) {
    errors.push_back(
        fmt::format("{}, and its .git cannot be moved aside: {}; remove it before "
                    "running git there",
                    what, std::strerror(errno)));
  } else {
    notices.push_back(
        fmt::format("{}, whose config git on this host would run; its .git is moved "
                    "aside to {}",
                    what, aside));
  }
}

void MoveAsideIn(const std::string& work_tree, std::int64_t since, const std::string& session,
                 int depth, std::vector<std::string>& notices, std::vector<std::string>& errors) {
  const std::string git_dir = GitDirOf(work_tree);
  if (git_dir.empty() || depth > 8) return;
  auto gitlinks = IndexGitlinks(git_dir);
  if (!gitlinks.ok()) {
    errors.push_back(
        fmt::format("cannot read the gitlinks of {}: {}; check its submodules before "
                    "running git there",
                    git_dir, std::string(gitlinks.status().message())));
    return;
  }
  for (const std::string& path : *gitlinks) {
    const std::string sub = work_tree + "/" + path;
    const std::string dot_git = sub + "/.git";
    const auto dot_git_info = Lstat(dot_git);
    if (!dot_git_info) continue;
    // What git on the host would run from there: the config and hooks of
    // the git directory .git leads to, and a .git file's choice of it. One
    // made or changed during the session has a ctime inside it (the kernel
    // sets ctime; no one can set it back). A repository renamed into place
    // keeps its older config: the user's own, which git already trusted. (A
    // git directory's own ctime moves with every commit: not a sign.)
    const std::string sub_git_dir = GitDirOf(sub);
    std::vector<std::string> deciders;
    if (!S_ISDIR(dot_git_info->st_mode)) deciders.push_back(dot_git);
    if (!sub_git_dir.empty()) {
      deciders.insert(deciders.end(), {sub_git_dir + "/config", sub_git_dir + "/config.worktree",
                                       sub_git_dir + "/hooks"});
      std::error_code ec;
      for (const auto& hook : fs::directory_iterator(sub_git_dir + "/hooks", ec)) {
        deciders.push_back(hook.path().string());
      }
    }
    bool planted = false;
    for (const std::string& changed : deciders) {
      planted = planted || ChangeTimeNs(changed).value_or(0) >= since;
    }
    if (planted) {
      MoveAside(dot_git, fmt::format("the session put a repository at the submodule path {}", sub),
                session, notices, errors);
    } else if (S_ISDIR(dot_git_info->st_mode)) {
      MoveAsideIn(sub, since, session, depth + 1, notices, errors);
    }
  }
}

}  // namespace

void MoveAsidePlantedRepositories(const std::string& repo, bool had_git, std::int64_t since,
                                  const std::string& session, std::vector<std::string>& notices,
                                  std::vector<std::string>& errors) {
  const std::string dot_git = repo + "/.git";
  if (had_git) {
    MoveAsideIn(repo, since, session, 0, notices, errors);
  } else if (Lstat(dot_git)) {
    MoveAside(dot_git, fmt::format("the session created {}", dot_git), session, notices, errors);
  }
}

absl::StatusOr<RepositoryMounts> GuardRepository(const RepositoryGuardOptions& options) {
  RepositoryMounts result;
  result.mounts.push_back({options.repo, options.repo, false});

  const std::string dot_git = options.repo + "/.git";
  if (auto info = Lstat(dot_git)) {
    if (S_ISLNK(info->st_mode)) {
      return Refuse(fmt::format(
          "{} is a symbolic link; sessions accept a .git directory or a linked worktree's .git "
          "file",
          dot_git));
    }
    if (S_ISREG(info->st_mode)) {
      auto guarded = GuardWorktree(options, std::move(result));
      if (!guarded.ok()) return guarded.status();
      result = std::move(*guarded);
    } else if (S_ISDIR(info->st_mode)) {
      if (absl::Status ok = CheckGitDir(dot_git, "the repository's .git", options); !ok.ok()) {
        return ok;
      }
      result.has_git = true;
      // A mount point cannot be renamed or removed: the session cannot move
      // this git directory aside and put one of its own in its place.
      result.mounts.push_back({dot_git, dot_git, false});
      if (absl::Status ok = ProtectGitDir(dot_git, result.mounts); !ok.ok()) return ok;
      for (const std::string& embedded : EmbeddedSubmoduleGitDirs(options.repo)) {
        result.mounts.push_back({embedded, embedded, false});
        if (absl::Status ok = ProtectGitDir(embedded, result.mounts); !ok.ok()) return ok;
      }
    } else {
      return Refuse(fmt::format("{} is neither a directory nor a worktree file", dot_git));
    }
  }

  const std::string policy_dir = options.repo + "/.mojoup";
  if (auto info = Lstat(policy_dir)) {
    if (!S_ISDIR(info->st_mode)) {
      return Refuse(
          fmt::format("{} is not a directory; the repository's policy must be a file "
                      "in a directory .mojoup of the repository itself",
                      policy_dir));
    }
    result.mounts.push_back({policy_dir, policy_dir, true});
  }
  return result;
}

}  // namespace mojoup::sandbox

// The guard before a session: the mounts that give the sandbox the
// repository with what the host trusts read-only (repository.h), and what
// the guard after the session compares with. Every path inside the
// repository is opened beneath its descriptor, never followed through a
// link (repository_entries.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include "fileinfo/file_info.h"
#include "fmt/format.h"
#include "guard/git_index.h"
#include "guard/repository.h"
#include "guard/repository_entries.h"
#include "mojoup/internal/atomic_file.h"
#include "mojoup/internal/fd.h"
#include "mojoup/internal/safe_file.h"

namespace mojoup::sandbox {
namespace repo_guard {

std::optional<std::string> FirstLineAt(int dir, std::string_view name) {
  auto read = internal::ReadBeneath(dir, name, kMaxPointerBytes);
  if (!read.ok()) return std::nullopt;
  std::string line = read->bytes.substr(0, read->bytes.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

std::string GitDirOf(int work_tree, const std::string& work_tree_path) {
  auto info = LstatAt(work_tree, ".git");
  if (!info) return {};
  if (S_ISDIR(info->st_mode)) return work_tree_path + "/.git";
  if (!S_ISREG(info->st_mode)) return {};
  std::optional<std::string> line = FirstLineAt(work_tree, ".git");
  constexpr std::string_view kPrefix = "gitdir: ";
  if (!line || line->rfind(kPrefix, 0) != 0) return {};
  std::filesystem::path named = line->substr(kPrefix.size());
  if (named.is_relative()) named = std::filesystem::path(work_tree_path) / named;
  std::error_code ec;
  std::filesystem::path canonical = std::filesystem::canonical(named, ec);
  return ec ? std::string() : canonical.string();
}

absl::StatusOr<internal::Fd> OpenParent(int dir, const std::string& parent) {
  if (parent.empty()) return internal::Fd(::dup(dir));
  return internal::OpenBeneath(dir, parent, O_RDONLY | O_DIRECTORY);
}

}  // namespace repo_guard

namespace {

namespace fs = std::filesystem;
using internal::OpenBeneath;
using repo_guard::IfAbsent;
using repo_guard::Kind;
using repo_guard::TrustedEntry;

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

std::optional<struct stat> Fstat(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) return std::nullopt;
  return info;
}

std::string KindName(Kind kind) { return kind == Kind::kFile ? "a file" : "a directory"; }

std::string Canonical(const fs::path& path) {
  std::error_code ec;
  fs::path canonical = fs::canonical(path, ec);
  return ec ? std::string() : canonical.string();
}

// The descriptor `fd` holds, or -1 when the directory could not be opened:
// then every question asked of it has no answer.
int OpenedOrNone(const absl::StatusOr<internal::Fd>& fd) { return fd.ok() ? fd->get() : -1; }

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

// A git directory the user owns (open at `fd`, -1 when it could not be
// opened, at `dir`), with what every repository has.
absl::Status CheckGitDir(int fd, const std::string& dir, const std::string& via,
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
    auto info = LstatAt(fd, need.name);
    if (!info || (need.directory ? !S_ISDIR(info->st_mode) : !S_ISREG(info->st_mode))) {
      return Refuse(fmt::format("{} leads to {}, which is not a git directory (it has no {} {})",
                                via, dir, need.name, need.directory ? "directory" : "file"));
    }
  }
  auto info = Fstat(fd);
  if (!info || info->st_uid != options.uid) {
    return Refuse(
        fmt::format("{} leads to {}, which another user owns; sessions use only "
                    "repositories of your own",
                    via, dir));
  }
  return absl::OkStatus();
}

// Creates the absent entry `name` of the git directory open at `dir` empty,
// as the user, with the directories on its way.
absl::Status CreateEmpty(int dir, const std::string& dir_path, const TrustedEntry& entry) {
  const std::string name = entry.name;
  const std::size_t slash = name.rfind('/');
  std::string parent = slash == std::string::npos ? "" : name.substr(0, slash);
  // Parents first (objects/info may be missing in a repository git made
  // long ago).
  for (std::size_t at = parent.find('/'); !parent.empty(); at = parent.find('/', at + 1)) {
    const std::string step = at == std::string::npos ? parent : parent.substr(0, at);
    auto made = OpenBeneath(dir, step, O_PATH | O_DIRECTORY);
    if (absl::IsNotFound(made.status()) && ::mkdirat(dir, step.c_str(), 0755) != 0 &&
        errno != EEXIST) {
      return Refuse(fmt::format("cannot create {}/{} to protect it: {}", dir_path, step,
                                std::strerror(errno)));
    }
    if (at == std::string::npos) break;
  }
  const std::string path = dir_path + "/" + name;
  if (entry.kind == Kind::kDirectory) {
    auto parent_fd = repo_guard::OpenParent(dir, parent);
    if (!parent_fd.ok()) return Refuse(std::string(parent_fd.status().message()));
    const std::string leaf = name.substr(slash + 1);
    if (::mkdirat(parent_fd->get(), leaf.c_str(), 0755) != 0 && errno != EEXIST) {
      return Refuse(fmt::format("cannot create {} to protect it: {}", path, std::strerror(errno)));
    }
    return absl::OkStatus();
  }
  auto made = OpenBeneath(dir, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (!made.ok() && !absl::IsAlreadyExists(made.status())) {
    return Refuse(fmt::format("cannot create {} to protect it: {}", path,
                              std::string(made.status().message())));
  }
  if (made.ok() && *entry.content != '\0') {
    if (absl::Status written = internal::WriteAll(*made, entry.content, path); !written.ok()) {
      return Refuse(std::string(written.message()));
    }
  }
  return absl::OkStatus();
}

// The status of `name` (which may hold '/') beneath `dir` itself, not of
// what a link there names; nullopt when a directory on its way is a link.
std::optional<struct stat> LstatBeneath(int dir, const std::string& name) {
  const std::size_t slash = name.rfind('/');
  if (slash == std::string::npos) return LstatAt(dir, name);
  auto parent = OpenBeneath(dir, name.substr(0, slash), O_PATH | O_DIRECTORY);
  if (!parent.ok()) return std::nullopt;
  return LstatAt(parent->get(), name.substr(slash + 1));
}

// Read-only mounts of what git trusts in the git directory open at `dir`
// (at `git_dir`), creating the entries an empty one of which means none.
absl::Status ProtectGitDir(int dir, const std::string& git_dir, const TrustedEntry* begin,
                           const TrustedEntry* end, std::vector<BindMount>& mounts) {
  for (const TrustedEntry* entry = begin; entry != end; ++entry) {
    const std::string path = git_dir + "/" + entry->name;
    auto opened = OpenBeneath(dir, entry->name, O_PATH);
    if (absl::IsNotFound(opened.status())) {
      if (entry->absent == IfAbsent::kCheckAfter) continue;
      if (absl::Status made = CreateEmpty(dir, git_dir, *entry); !made.ok()) return made;
      opened = OpenBeneath(dir, entry->name, O_PATH);
    }
    if (!opened.ok()) {
      auto info = LstatBeneath(dir, entry->name);
      if (info && S_ISLNK(info->st_mode)) {
        return Refuse(fmt::format(
            "{} is a symbolic link; git trusts it, so a session would write or mount what it "
            "names: replace the link with {} of its own",
            path, KindName(entry->kind)));
      }
      return Refuse(
          fmt::format("{} cannot be protected: {}", path, std::string(opened.status().message())));
    }
    struct stat info {};
    if (::fstat(opened->get(), &info) != 0 ||
        (entry->kind == Kind::kFile ? !S_ISREG(info.st_mode) : !S_ISDIR(info.st_mode))) {
      return Refuse(fmt::format("{} is {}, where git expects {}; remove it", path,
                                internal::KindOfFile(info.st_mode), KindName(entry->kind)));
    }
    mounts.push_back({path, path, true});
  }
  return absl::OkStatus();
}

// The same for a git directory given by its path, the user's own (a
// linked worktree's common directory or entry, outside the repository).
absl::Status ProtectGitDir(const std::string& git_dir, const TrustedEntry* begin,
                           const TrustedEntry* end, std::vector<BindMount>& mounts) {
  auto dir = internal::OpenDirectory(git_dir);
  if (!dir.ok()) {
    return Refuse(fmt::format("cannot open the git directory {}: {}", git_dir,
                              std::string(dir.status().message())));
  }
  return ProtectGitDir(dir->get(), git_dir, begin, end, mounts);
}

absl::Status ProtectMainGitDir(int dir, const std::string& git_dir,
                               std::vector<BindMount>& mounts) {
  return ProtectGitDir(dir, git_dir, std::begin(repo_guard::kTrustedEntries),
                       std::end(repo_guard::kTrustedEntries), mounts);
}

// A git directory beneath the repository, open, with its path.
struct OpenGitDir {
  std::string path;
  internal::Fd fd;
};

// The submodules of the repository open at `root` (at `repo`, its git
// directory open at `git_dir`) that keep their git directory inside their
// own work tree (not absorbed into .git/modules): the host trusts those git
// directories as it trusts the repository's. A gitlink path that lies
// behind a symbolic link is not followed: git does not follow it either.
absl::StatusOr<std::vector<OpenGitDir>> EmbeddedSubmoduleGitDirs(
    int root, int git_dir, const std::string& repo, std::vector<std::string>& notices) {
  std::vector<OpenGitDir> dirs;
  auto gitlinks = IndexGitlinksAt(git_dir);
  if (!gitlinks.ok()) {
    return Refuse(
        fmt::format("the index of {}/.git cannot be read safely ({}); git on this host would "
                    "not read it either: remove it or run `git status` there",
                    repo, std::string(gitlinks.status().message())));
  }
  for (const std::string& path : *gitlinks) {
    auto sub = OpenBeneath(root, path + "/.git", O_PATH);
    if (absl::IsNotFound(sub.status())) continue;
    if (!sub.ok()) {
      notices.push_back(fmt::format(
          "the submodule path {}/{} lies behind a symbolic link, so its git directory is not "
          "mounted",
          repo, path));
      continue;
    }
    struct stat info {};
    if (::fstat(sub->get(), &info) == 0 && S_ISDIR(info.st_mode)) {
      dirs.push_back({repo + "/" + path + "/.git", std::move(*sub)});
    }
  }
  return dirs;
}

// The mounts of an accepted linked worktree: its .git file and the main
// git directory `common` read-only, then what a commit writes (objects,
// refs, logs, and this worktree's own `entry`: HEAD, index, its logs).
absl::StatusOr<RepositoryMounts> MountWorktree(const std::string& dot_git,
                                               const std::string& common, const std::string& entry,
                                               RepositoryMounts result) {
  const std::string via = fmt::format("the worktree file {}", dot_git);
  result.has_git = true;
  result.mounts.push_back({dot_git, dot_git, true});
  result.mounts.push_back({common, common, true});
  auto common_dir = internal::OpenDirectory(common);
  if (!common_dir.ok()) {
    return Refuse(fmt::format("cannot open the git directory {}: {}", common,
                              std::string(common_dir.status().message())));
  }
  for (const char* name : {"objects", "refs", "logs"}) {
    // A link here is taken as what it names, and refused below.
    struct stat info {};
    if (::fstatat(common_dir->get(), name, &info, 0) != 0 || !S_ISDIR(info.st_mode)) continue;
    const std::string path = common + "/" + name;
    result.mounts.push_back({path, path, false});
    result.writable.push_back(path);
  }
  if (absl::Status ok =
          ProtectGitDir(common_dir->get(), common, std::begin(repo_guard::kCommonObjectEntries),
                        std::end(repo_guard::kCommonObjectEntries), result.mounts);
      !ok.ok()) {
    return ok;
  }
  result.mounts.push_back({entry, entry, false});
  result.writable.push_back(entry);
  // What the host reads back from the entry stays as it is.
  if (absl::Status ok = ProtectGitDir(entry, std::begin(repo_guard::kWorktreeEntries),
                                      std::end(repo_guard::kWorktreeEntries), result.mounts);
      !ok.ok()) {
    return ok;
  }
  for (const BindMount& mount : result.mounts) {
    // Docker follows a link in a bind source on the host.
    if (auto info = Lstat(mount.source); !info || S_ISLNK(info->st_mode)) {
      return Refuse(fmt::format("{} names {}, and {} is {}; sessions mount no links", via, entry,
                                mount.source, info ? "a symbolic link" : "gone"));
    }
  }
  return result;
}

// A linked worktree's .git file (in the repository open at `root`) and the
// entry of the main git directory it names.
absl::StatusOr<RepositoryMounts> GuardWorktree(int root, const RepositoryGuardOptions& options,
                                               RepositoryMounts result) {
  const std::string dot_git = options.repo + "/.git";
  const std::string via = fmt::format("the worktree file {}", dot_git);
  std::optional<std::string> line = repo_guard::FirstLineAt(root, ".git");
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
  const auto entry_dir = internal::OpenDirectory(entry);
  const std::string common = entry_path.parent_path().parent_path().string();
  std::optional<std::string> commondir =
      repo_guard::FirstLineAt(OpenedOrNone(entry_dir), "commondir");
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
  std::optional<std::string> back = repo_guard::FirstLineAt(OpenedOrNone(entry_dir), "gitdir");
  if (!back || Canonical(fs::path(*back)) != dot_git) {
    return Refuse(
        fmt::format("{} names {}, which belongs to another worktree (its gitdir file "
                    "does not point back at {})",
                    via, entry, dot_git));
  }
  const auto common_dir = internal::OpenDirectory(common);
  if (absl::Status ok = CheckGitDir(OpenedOrNone(common_dir), common, via, options); !ok.ok()) {
    return ok;
  }
  if (auto info = Fstat(OpenedOrNone(entry_dir)); !info || info->st_uid != options.uid) {
    return Refuse(fmt::format("{} names {}, which another user owns", via, entry));
  }
  return MountWorktree(dot_git, common, entry, std::move(result));
}

// The repository's own git directory (.git, open at `git_dir`) and its
// embedded submodules' ones, each pinned by a mount of its own and with
// what git trusts in it read-only.
absl::Status GuardGitDirs(int root, const absl::StatusOr<internal::Fd>& git_dir,
                          const RepositoryGuardOptions& options, RepositoryMounts& result) {
  const std::string dot_git = options.repo + "/.git";
  if (absl::Status ok = CheckGitDir(git_dir.ok() ? git_dir->get() : -1, dot_git,
                                    "the repository's .git", options);
      !ok.ok()) {
    return ok;
  }
  result.has_git = true;
  // A mount point cannot be renamed or removed: the session cannot move
  // this git directory aside and put one of its own in its place.
  result.mounts.push_back({dot_git, dot_git, false});
  if (!git_dir.ok()) {
    return Refuse(fmt::format("cannot open the git directory {}: {}", dot_git,
                              std::string(git_dir.status().message())));
  }
  if (absl::Status ok = ProtectMainGitDir(git_dir->get(), dot_git, result.mounts); !ok.ok()) {
    return ok;
  }
  auto embedded = EmbeddedSubmoduleGitDirs(root, git_dir->get(), options.repo, result.notices);
  if (!embedded.ok()) return embedded.status();
  for (const OpenGitDir& sub : *embedded) {
    result.mounts.push_back({sub.path, sub.path, false});
    if (absl::Status ok = ProtectMainGitDir(sub.fd.get(), sub.path, result.mounts); !ok.ok()) {
      return ok;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RepositoryMounts> GuardRepository(const RepositoryGuardOptions& options) {
  RepositoryMounts result;
  result.mounts.push_back({options.repo, options.repo, false});
  // A repository that cannot be opened has no .git and no .mojoup to guard.
  const auto opened = internal::OpenDirectory(options.repo);
  const int root = OpenedOrNone(opened);

  const std::string dot_git = options.repo + "/.git";
  if (auto info = LstatAt(root, ".git")) {
    if (S_ISLNK(info->st_mode)) {
      return Refuse(fmt::format(
          "{} is a symbolic link; sessions accept a .git directory or a linked worktree's .git "
          "file",
          dot_git));
    }
    if (S_ISREG(info->st_mode)) {
      auto guarded = GuardWorktree(root, options, std::move(result));
      if (!guarded.ok()) return guarded.status();
      result = std::move(*guarded);
    } else if (S_ISDIR(info->st_mode)) {
      const auto git_dir = OpenBeneath(root, ".git", O_RDONLY | O_DIRECTORY);
      if (absl::Status ok = GuardGitDirs(root, git_dir, options, result); !ok.ok()) {
        return ok;
      }
    } else {
      return Refuse(fmt::format("{} is neither a directory nor a worktree file", dot_git));
    }
  }

  const std::string policy_dir = options.repo + "/.mojoup";
  if (auto info = LstatAt(root, ".mojoup")) {
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

absl::StatusOr<GitPlaces> NoteGitPlaces(const std::string& repo, const RepositoryMounts& mounts,
                                        const GitWalkBounds& bounds) {
  // What the session's mounts pin (the repository's .git, a worktree's .git
  // file, embedded submodules' git directories), and what it sees
  // read-only and so cannot change. Sources in the repository are looked at
  // beneath it, never through a link.
  const auto opened = internal::OpenDirectory(repo);
  std::vector<std::string> guarded;
  std::vector<std::string> pruned;
  for (const BindMount& mount : mounts.mounts) {
    if (mount.source == repo) continue;
    if (fs::path(mount.source).filename() == ".git") guarded.push_back(mount.source);
    std::optional<struct stat> info;
    if (IsWithin(mount.source, repo)) {
      info = LstatBeneath(OpenedOrNone(opened), mount.source.substr(repo.size() + 1));
    } else {
      info = Lstat(mount.source);
    }
    if (mount.read_only && info && S_ISDIR(info->st_mode)) pruned.push_back(mount.source);
  }
  return FindGitPlaces(repo, guarded, pruned, bounds);
}

}  // namespace mojoup::sandbox

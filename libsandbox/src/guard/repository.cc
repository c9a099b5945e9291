#include "guard/repository.h"

#include <dirent.h>
#include <fcntl.h>
#include <fts.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "common/file_util.h"
#include "fmt/format.h"
#include "guard/git_index.h"
#include "guard/git_places.h"
#include "mojoup/internal/atomic_file.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/policy/policy.h"

namespace mojoup::sandbox {
namespace {

namespace fs = std::filesystem;
using internal::OpenBeneath;

enum class Kind { kFile, kDirectory };
enum class IfAbsent {
  kCreate,      // made before the mount (empty, or `content`) and mounted read-only
  kCheckAfter,  // any made-up one changes what git does: checked after the session
};
struct TrustedEntry {
  const char* name;
  Kind kind;
  IfAbsent absent;
  const char* content = "";  // what a file made in advance holds
};

// What git, run by the user on the host, reads from a git directory and runs
// or obeys (git 2.39: setup.c, config.c, hook.c, object-file.c, dir.c,
// wt-status.c, sequencer.c, rerere.c; gitrepository-layout(5)). Each was
// tried: what is made in advance behaves for git as its absence does.
// - config, config.worktree: core.fsmonitor, core.hooksPath, aliases,
//   filters, pagers, includes;
// - commondir: where config, hooks and objects really are. An empty one is
//   fatal (setup.c get_common_dir_noenv); one holding "." names the git
//   directory itself, as its absence does;
// - hooks/; info/attributes (filter drivers), info/sparse-checkout;
//   modules/ (submodules' own git directories); worktrees/ (other
//   worktrees' entries, which `git gc` prunes recursively); remotes/ and
//   branches/ (fetch URLs);
// - objects/info/alternates and http-alternates: object stores elsewhere;
// - rebase-merge/, rebase-apply/, sequencer/ (todo lists whose `exec` lines
//   and strategy names `--continue` runs), rr-cache/ and MERGE_RR (rerere
//   copies files by them): an empty one means an operation in progress, so
//   they cannot be made in advance.
constexpr TrustedEntry kTrustedEntries[] = {
    {"config", Kind::kFile, IfAbsent::kCheckAfter},
    {"config.worktree", Kind::kFile, IfAbsent::kCreate},
    {"commondir", Kind::kFile, IfAbsent::kCreate, ".\n"},
    {"hooks", Kind::kDirectory, IfAbsent::kCreate},
    {"info/attributes", Kind::kFile, IfAbsent::kCreate},
    {"info/sparse-checkout", Kind::kFile, IfAbsent::kCreate},
    {"modules", Kind::kDirectory, IfAbsent::kCreate},
    {"worktrees", Kind::kDirectory, IfAbsent::kCreate},
    {"remotes", Kind::kDirectory, IfAbsent::kCreate},
    {"branches", Kind::kDirectory, IfAbsent::kCreate},
    {"objects/info/alternates", Kind::kFile, IfAbsent::kCreate},
    {"objects/info/http-alternates", Kind::kFile, IfAbsent::kCreate},
    {"rebase-merge", Kind::kDirectory, IfAbsent::kCheckAfter},
    {"rebase-apply", Kind::kDirectory, IfAbsent::kCheckAfter},
    {"sequencer", Kind::kDirectory, IfAbsent::kCheckAfter},
    {"rr-cache", Kind::kDirectory, IfAbsent::kCheckAfter},
    {"MERGE_RR", Kind::kFile, IfAbsent::kCheckAfter},
};

// A linked worktree's own entry (<common>/worktrees/NAME): what git reads
// there per worktree.
constexpr TrustedEntry kWorktreeEntries[] = {
    // Submodules' git directories are per worktree (path.c's common_list
    // leaves modules/ out).
    {"modules", Kind::kDirectory, IfAbsent::kCreate},
    {"commondir", Kind::kFile, IfAbsent::kCheckAfter},
    {"gitdir", Kind::kFile, IfAbsent::kCheckAfter},
    {"config.worktree", Kind::kFile, IfAbsent::kCreate},
    {"info/sparse-checkout", Kind::kFile, IfAbsent::kCreate},
    {"rebase-merge", Kind::kDirectory, IfAbsent::kCheckAfter},
    {"rebase-apply", Kind::kDirectory, IfAbsent::kCheckAfter},
    {"sequencer", Kind::kDirectory, IfAbsent::kCheckAfter},
    {"MERGE_RR", Kind::kFile, IfAbsent::kCheckAfter},
};

// The common directory of a linked worktree is read-only as a whole but
// for objects/, refs/ and logs/; in objects/ these redirect git.
constexpr TrustedEntry kCommonObjectEntries[] = {
    {"objects/info/alternates", Kind::kFile, IfAbsent::kCreate},
    {"objects/info/http-alternates", Kind::kFile, IfAbsent::kCreate},
};

// Small files git writes a line or two into (.git files, commondir, gitdir).
constexpr std::size_t kMaxPointerBytes = 64 * 1024;

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

std::string KindName(Kind kind) { return kind == Kind::kFile ? "a file" : "a directory"; }

// The first line of a small regular file, without its line ending; never
// through a link, never blocking.
std::optional<std::string> FirstLine(const std::string& path) {
  auto read = internal::ReadRegularFile(path, kMaxPointerBytes);
  if (!read.ok()) return std::nullopt;
  std::string line = read->bytes.substr(0, read->bytes.find('\n'));
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

// The directory `parent` beneath the one open at `dir` ("" for `dir`
// itself), never through a link.
absl::StatusOr<internal::Fd> OpenParent(int dir, const std::string& parent) {
  if (parent.empty()) return internal::Fd(::dup(dir));
  return OpenBeneath(dir, parent, O_RDONLY | O_DIRECTORY);
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
    auto parent_fd = OpenParent(dir, parent);
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

// Read-only mounts of what git trusts in the git directory `git_dir`,
// creating the entries an empty one of which means none.
absl::Status ProtectGitDir(const std::string& git_dir, const TrustedEntry* begin,
                           const TrustedEntry* end, std::vector<BindMount>& mounts) {
  auto dir = internal::OpenDirectory(git_dir);
  if (!dir.ok()) {
    return Refuse(fmt::format("cannot open the git directory {}: {}", git_dir,
                              std::string(dir.status().message())));
  }
  for (const TrustedEntry* entry = begin; entry != end; ++entry) {
    const std::string path = git_dir + "/" + entry->name;
    auto opened = OpenBeneath(dir->get(), entry->name, O_PATH);
    if (absl::IsNotFound(opened.status())) {
      if (entry->absent == IfAbsent::kCheckAfter) continue;
      if (absl::Status made = CreateEmpty(dir->get(), git_dir, *entry); !made.ok()) return made;
      opened = OpenBeneath(dir->get(), entry->name, O_PATH);
    }
    if (!opened.ok()) {
      auto info = Lstat(path);
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

absl::Status ProtectMainGitDir(const std::string& git_dir, std::vector<BindMount>& mounts) {
  return ProtectGitDir(git_dir, std::begin(kTrustedEntries), std::end(kTrustedEntries), mounts);
}

// The submodules of `repo` that keep their git directory inside their own
// work tree (not absorbed into .git/modules): the host trusts those git
// directories as it trusts the repository's. A gitlink path that lies
// behind a symbolic link is not followed: git does not follow it either.
absl::StatusOr<std::vector<std::string>> EmbeddedSubmoduleGitDirs(
    const std::string& repo, std::vector<std::string>& notices) {
  std::vector<std::string> dirs;
  const std::string git_dir = GitDirOf(repo);
  if (git_dir.empty()) return dirs;
  auto gitlinks = IndexGitlinks(git_dir);
  if (!gitlinks.ok()) {
    return Refuse(
        fmt::format("the index of {} cannot be read safely ({}); git on this host would "
                    "not read it either: remove it or run `git status` there",
                    git_dir, std::string(gitlinks.status().message())));
  }
  auto root = internal::OpenDirectory(repo);
  if (!root.ok()) return root.status();
  for (const std::string& path : *gitlinks) {
    auto sub = OpenBeneath(root->get(), path + "/.git", O_PATH);
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
      dirs.push_back(repo + "/" + path + "/.git");
    }
  }
  return dirs;
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
  if (absl::Status ok = ProtectGitDir(common, std::begin(kCommonObjectEntries),
                                      std::end(kCommonObjectEntries), result.mounts);
      !ok.ok()) {
    return ok;
  }
  result.mounts.push_back({entry, entry, false});
  result.writable.push_back(entry);
  // What the host reads back from the entry stays as it is.
  if (absl::Status ok = ProtectGitDir(entry, std::begin(kWorktreeEntries),
                                      std::end(kWorktreeEntries), result.mounts);
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

// What the session left in a git directory it could write that git on the
// host would trust: entries of `table` it created, a HEAD that is not a
// ref, and links, FIFOs and devices where git expects files.
void CheckGitDirAfter(const std::string& git_dir, const TrustedEntry* begin,
                      const TrustedEntry* end, std::int64_t since, const std::string& session,
                      std::vector<std::string>& notices, std::vector<std::string>& errors) {
  auto dir = internal::OpenDirectory(git_dir);
  if (!dir.ok()) return;
  for (const TrustedEntry* entry = begin; entry != end; ++entry) {
    const std::string name = entry->name;
    if (entry->absent != IfAbsent::kCheckAfter || name.find('/') != std::string::npos) continue;
    auto info = LstatAt(dir->get(), name);
    if (!info || ChangeTimeOf(*info) < since) continue;
    MoveAside(
        dir->get(), git_dir, name,
        fmt::format("the session made {}/{}, which git on this host would obey (an operation it "
                    "left in progress there is cut off)",
                    git_dir, name),
        session, notices, errors);
  }
  if (auto head = LstatAt(dir->get(), "HEAD");
      head && ChangeTimeOf(*head) >= since && !PlainHead(dir->get())) {
    MoveAside(dir->get(), git_dir, "HEAD",
              fmt::format("the session left {}/HEAD as something other than a ref; git will not "
                          "use this repository until you restore it (`git symbolic-ref HEAD "
                          "refs/heads/BRANCH`)",
                          git_dir),
              session, notices, errors);
  }
  // A git directory holds files and directories only: a link would send
  // git's writes elsewhere (logs/HEAD into ~/.bashrc, a worktrees/ entry
  // that `git gc` empties), a FIFO would hang it. objects/ is the bulk and
  // git reads no link there either, so the whole tree is walked.
  std::vector<std::pair<std::string, mode_t>> odd;
  char* paths[] = {const_cast<char*>(git_dir.c_str()), nullptr};
  if (FTS* walk = ::fts_open(paths, FTS_PHYSICAL | FTS_XDEV, nullptr)) {
    while (FTSENT* item = ::fts_read(walk)) {
      if (item->fts_info == FTS_D) {
        // A directory the session made unsearchable would hide what is in
        // it: the owner gets rwx back before fts reads it.
        const mode_t mode = item->fts_statp->st_mode;
        if ((mode & S_IRWXU) != S_IRWXU)
          internal::ChmodNoFollow(AT_FDCWD, item->fts_accpath, mode | S_IRWXU);
        continue;
      }
      if (item->fts_info == FTS_DNR || item->fts_info == FTS_NS || item->fts_info == FTS_ERR) {
        errors.push_back(
            fmt::format("{} cannot be checked ({}); look at it before running git "
                        "there",
                        item->fts_path, std::strerror(item->fts_errno)));
        continue;
      }
      if (item->fts_level == 0 || item->fts_info == FTS_DP || item->fts_info == FTS_F) continue;
      if (ChangeTimeOf(*item->fts_statp) < since) continue;
      odd.emplace_back(std::string(item->fts_path).substr(git_dir.size() + 1),
                       item->fts_statp->st_mode);
    }
    ::fts_close(walk);
  }
  for (const auto& [relative, mode] : odd) {
    const std::size_t slash = relative.rfind('/');
    const std::string parent = slash == std::string::npos ? "" : relative.substr(0, slash);
    auto at = OpenParent(dir->get(), parent);
    if (!at.ok()) continue;
    MoveAside(
        at->get(), parent.empty() ? git_dir : git_dir + "/" + parent, relative.substr(slash + 1),
        fmt::format("the session made {}/{} {}", git_dir, relative, internal::KindOfFile(mode)),
        session, notices, errors);
  }
  // Entries of the index that name a path in a git directory: the host's
  // `git checkout -- .` would write them there (read-cache.c checks no
  // index path it reads).
  auto index = LstatAt(dir->get(), "index");
  if (!index || ChangeTimeOf(*index) < since) return;
  // An index the host cannot read safely (over its size cap, say) is bad
  // input: aside with it, so that the next session starts.
  auto problem = IndexPathProblem(git_dir);
  if (!problem.ok()) {
    MoveAside(dir->get(), git_dir, "index",
              fmt::format("the session left {}/index such that it cannot be read safely ({}); "
                          "run `git reset` to rebuild the index from HEAD",
                          git_dir, Message(problem.status())),
              session, notices, errors);
  } else if (*problem) {
    MoveAside(dir->get(), git_dir, "index",
              fmt::format("the session left in {}/index the path {}, which git would write into "
                          "a git directory; run `git reset` to rebuild the index from HEAD",
                          git_dir, **problem),
              session, notices, errors);
  }
}

}  // namespace

absl::StatusOr<GitPlaces> NoteGitPlaces(const std::string& repo, const RepositoryMounts& mounts,
                                        const GitWalkBounds& bounds) {
  // What the session's mounts pin (the repository's .git, a worktree's .git
  // file, embedded submodules' git directories), and what it sees
  // read-only and so cannot change.
  std::vector<std::string> guarded;
  std::vector<std::string> pruned;
  for (const BindMount& mount : mounts.mounts) {
    if (mount.source == repo) continue;
    if (fs::path(mount.source).filename() == ".git") guarded.push_back(mount.source);
    auto info = Lstat(mount.source);
    if (mount.read_only && info && S_ISDIR(info->st_mode)) pruned.push_back(mount.source);
  }
  return FindGitPlaces(repo, guarded, pruned, bounds);
}

namespace {

// A policy the session left where the repository had none (.mojoup/ is
// read-only when it exists) that no run could read: over its cap, or not a
// regular file. Bad input, moved aside, so that it does not stand in the
// way of the next run.
void MoveAsideUnreadablePolicy(const std::string& repo, std::int64_t since,
                               const std::string& session, std::vector<std::string>& notices,
                               std::vector<std::string>& errors) {
  auto root = internal::OpenDirectory(repo);
  if (!root.ok()) return;
  auto dir = OpenBeneath(root->get(), ".mojoup", O_RDONLY | O_DIRECTORY);
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
  MoveAsideUnreadablePolicy(repo, since, session, notices, errors);
  DisarmGitPlaces(repo, before, session, notices, errors, bounds);
  // The git directories the session's mounts pinned are checked whatever
  // the walk reached: a walk cut short skips none of them.
  for (const GitPlace& place : before.places) {
    if (!place.guarded || !place.dot_git) continue;
    const std::string git_dir = place.path.empty() ? repo : repo + "/" + place.path;
    auto info = Lstat(git_dir);
    if (!info || !S_ISDIR(info->st_mode) || info->st_dev != place.dev ||
        info->st_ino != place.ino) {
      continue;
    }
    CheckGitDirAfter(git_dir, std::begin(kTrustedEntries), std::end(kTrustedEntries), since,
                     session, notices, errors);
  }
  auto dot_git = Lstat(repo + "/.git");
  if (!dot_git || !S_ISREG(dot_git->st_mode)) return;
  // A linked worktree: its own entry was writable, and the main git
  // directory's objects, refs and logs (a link in logs/ would send the
  // host's next checkout's writes elsewhere).
  if (std::string entry = GitDirOf(repo); !entry.empty()) {
    CheckGitDirAfter(entry, std::begin(kWorktreeEntries), std::end(kWorktreeEntries), since,
                     session, notices, errors);
    const fs::path common = fs::path(entry).parent_path().parent_path();
    if (fs::path(entry).parent_path().filename() == "worktrees") {
      CheckGitDirAfter(common.string(), std::begin(kCommonObjectEntries),
                       std::end(kCommonObjectEntries), since, session, notices, errors);
    }
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
      if (absl::Status ok = ProtectMainGitDir(dot_git, result.mounts); !ok.ok()) return ok;
      auto embedded = EmbeddedSubmoduleGitDirs(options.repo, result.notices);
      if (!embedded.ok()) return embedded.status();
      for (const std::string& git_dir : *embedded) {
        result.mounts.push_back({git_dir, git_dir, false});
        if (absl::Status ok = ProtectMainGitDir(git_dir, result.mounts); !ok.ok()) return ok;
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

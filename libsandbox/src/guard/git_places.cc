#include "guard/git_places.h"

#include <dirent.h>
#include <fcntl.h>
#include <fts.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "fileinfo/file_info.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "mojoup/internal/fd.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/internal/session_id.h"

namespace mojoup::sandbox {
namespace {

// What git obeys in a place: the entries taken away from one the session
// made, changed or moved (HEAD first: without it git finds no repository).
constexpr const char* kDisarmed[] = {"HEAD", "commondir", "config", "config.worktree", "hooks"};
// What decides what git runs there (HEAD only names a branch).
constexpr const char* kDeciders[] = {"config", "config.worktree", "commondir", "hooks"};
// A hooks directory with more entries is marked by its first ones and its
// count.
constexpr std::size_t kMaxMarkedHooks = 4096;

// FNV-1a, 64 bits: a mark compared with itself only, never a secret.
struct Mark {
  std::uint64_t value = 14695981039346656037ull;
  void Add(std::string_view bytes) {
    for (unsigned char byte : bytes) value = (value ^ byte) * 1099511628211ull;
    value = (value ^ 0xff) * 1099511628211ull;  // ends each field
  }
  void Add(std::uint64_t number) { Add(std::string_view(fmt::format("{}", number))); }
  void Add(const struct stat& info) {
    Add(static_cast<std::uint64_t>(info.st_mode));
    Add(static_cast<std::uint64_t>(info.st_ino));
    Add(static_cast<std::uint64_t>(ChangeTimeOf(info)));
  }
};

// What of the hooks directory open at `dir` git would run: each entry's
// name, kind, inode and change time.
void MarkHooks(int dir, Mark& mark) {
  internal::Fd hooks(::openat(dir, "hooks", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!hooks.ok()) return;
  DIR* list = ::fdopendir(::dup(hooks.get()));
  if (list == nullptr) return;
  std::vector<std::pair<std::string, std::uint64_t>> entries;
  std::size_t count = 0;
  while (dirent* entry = ::readdir(list)) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;  // ".." changes with every commit
    if (++count > kMaxMarkedHooks) continue;
    if (auto info = LstatAt(hooks.get(), entry->d_name)) {
      Mark one;
      one.Add(*info);
      entries.emplace_back(entry->d_name, one.value);
    }
  }
  ::closedir(list);
  std::sort(entries.begin(), entries.end());
  mark.Add(static_cast<std::uint64_t>(count));
  for (const auto& [name, value] : entries) {
    mark.Add(name);
    mark.Add(value);
  }
}

// The mark of a directory place: its deciders as they are.
std::uint64_t MarkOfDirectory(const char* path) {
  Mark mark;
  internal::Fd dir(::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.ok()) return mark.value;
  for (const char* name : kDeciders) {
    mark.Add(std::string_view(name));
    if (auto info = LstatAt(dir.get(), name)) mark.Add(*info);
  }
  MarkHooks(dir.get(), mark);
  return mark.value;
}

// Git's shape (setup.c is_git_directory), taken broadly: any kind of HEAD,
// and either a commondir or both objects and refs, of any kind (access()
// follows links, and a file with its x bit passes).
// Every directory is asked, so most with one lstat and no open.
bool HasGitShape(const std::string& path) {
  auto has = [&path](const char* name) { return LstatAt(AT_FDCWD, path + "/" + name).has_value(); };
  return has("HEAD") && (has("commondir") || (has("objects") && has("refs")));
}

enum class Pass { kBefore, kAfter };

struct Walk {
  std::string root;
  GitWalkBounds bounds;
  Pass pass;
  std::set<std::string> guarded;  // relative
  // Relative directories not walked, with the device and inode they had
  // (none yet before the session): one renamed into place is walked.
  std::map<std::string, std::optional<std::pair<std::uint64_t, std::uint64_t>>> pruned;
  GitPlaces found;
  std::vector<std::string> problems;  // sentences: what could not be walked
  std::vector<std::string> notices;   // set-ID bits cleared
  bool bounded = false;               // a bound stopped the walk
  std::size_t too_deep = 0;           // entries past max_depth, skipped
  std::string first_too_deep;
};

std::string Relative(const std::string& root, const char* path) {
  const std::string_view full(path);
  return full.size() <= root.size() ? std::string() : std::string(full.substr(root.size() + 1));
}

// A directory the walk cannot read, seen by its owner: a session may have
// taken away the owner's bits to hide what it made. Whoever cannot list a
// directory they could still write and search is told to look.
void Unreadable(Walk& walk, const FTSENT* item) {
  if (::access(item->fts_accpath, W_OK | X_OK) != 0) return;  // nobody as this user wrote there
  walk.problems.push_back(fmt::format("{} cannot be read ({}), so what is in it is not checked",
                                      item->fts_path, std::strerror(item->fts_errno)));
}

void ClearSetId(Walk& walk, const FTSENT* item) {
  const mode_t mode = item->fts_statp->st_mode;
  // A set-group-ID directory only passes its group on; a file with either
  // bit runs as its owner or group for whoever starts it.
  if ((mode & (S_ISUID | S_ISGID)) == 0) return;
  if (internal::ChmodNoFollow(AT_FDCWD, item->fts_accpath,
                              mode & 0777 & ~static_cast<mode_t>(S_ISUID | S_ISGID))) {
    walk.notices.push_back(fmt::format(
        "the session made {} set-user-ID or set-group-ID; the bit is cleared", item->fts_path));
  } else {
    walk.problems.push_back(fmt::format(
        "the session made {} set-user-ID or set-group-ID, and the bit cannot be cleared ({}); "
        "remove it",
        item->fts_path, std::strerror(errno)));
  }
}

void Note(Walk& walk, const FTSENT* item, bool dot_git) {
  GitPlace place;
  place.path = Relative(walk.root, item->fts_path);
  place.dev = item->fts_statp->st_dev;
  place.ino = item->fts_statp->st_ino;
  place.dot_git = dot_git;
  place.guarded = walk.guarded.count(place.path) > 0;
  if (S_ISDIR(item->fts_statp->st_mode)) {
    place.mark = MarkOfDirectory(item->fts_accpath);
  } else {
    Mark mark;
    mark.Add(*item->fts_statp);
    place.mark = mark.value;
  }
  walk.found.places.push_back(std::move(place));
}

// Whether the directory at `item` is one the session saw read-only, as it
// was then; before the session, its identity is taken.
bool Pruned(Walk& walk, const FTSENT* item) {
  auto at = walk.pruned.find(Relative(walk.root, item->fts_path));
  if (at == walk.pruned.end()) return false;
  const std::pair<std::uint64_t, std::uint64_t> identity{item->fts_statp->st_dev,
                                                         item->fts_statp->st_ino};
  if (walk.pass == Pass::kBefore) {
    at->second = identity;
    walk.found.pruned.push_back({.path = at->first, .dev = identity.first, .ino = identity.second});
    return true;
  }
  return at->second == identity;
}

// One entry of the walk; false once a bound is hit. After the session only
// the count of entries stops it: a subtree too deep is skipped and said,
// and there is no cap on the places disarmed.
bool VisitEntry(Walk& walk, FTS* fts, FTSENT* item, std::size_t& entries) {
  if (item->fts_info == FTS_DP) return true;
  if (++entries > walk.bounds.max_entries) {
    walk.bounded = true;
    return false;
  }
  if (item->fts_level > walk.bounds.max_depth) {
    if (walk.pass == Pass::kBefore) {
      walk.bounded = true;
      return false;
    }
    if (walk.too_deep++ == 0) walk.first_too_deep = item->fts_path;
    ::fts_set(fts, item, FTS_SKIP);
    return true;
  }
  const bool dot_git = std::string_view(item->fts_name) == ".git" && item->fts_level > 0;
  switch (item->fts_info) {
    case FTS_D: {
      if (Pruned(walk, item)) {
        ::fts_set(fts, item, FTS_SKIP);
        return true;
      }
      // A directory the session made unsearchable would hide what is in
      // it: its owner gets the bits back before fts reads it.
      const mode_t mode = item->fts_statp->st_mode;
      if (walk.pass == Pass::kAfter && item->fts_statp->st_uid == ::geteuid() &&
          (mode & S_IRWXU) != S_IRWXU) {
        internal::ChmodNoFollow(AT_FDCWD, item->fts_accpath, (mode & 07777) | S_IRWXU);
      }
      if (dot_git || HasGitShape(item->fts_accpath)) Note(walk, item, dot_git);
      break;
    }
    case FTS_DNR:
      Unreadable(walk, item);
      break;
    case FTS_NS:
    case FTS_ERR:
      walk.problems.push_back(
          fmt::format("{} cannot be checked ({})", item->fts_path, std::strerror(item->fts_errno)));
      break;
    case FTS_F:
      if (walk.pass == Pass::kAfter) ClearSetId(walk, item);
      [[fallthrough]];
    default:  // a link, a FIFO, a socket, a device
      if (dot_git) Note(walk, item, true);
  }
  if (walk.pass == Pass::kAfter || walk.found.places.size() <= walk.bounds.max_places) {
    return true;
  }
  walk.bounded = true;
  return false;
}

Walk WalkTree(const std::string& root, Pass pass, const GitWalkBounds& bounds,
              std::set<std::string> guarded, const std::vector<GitPlace>& pruned) {
  Walk walk{root, bounds, pass, std::move(guarded), {}, {}, {}, {}, false, 0, {}};
  for (const GitPlace& dir : pruned) {
    walk.pruned[dir.path] =
        pass == Pass::kBefore ? std::nullopt : std::optional(std::pair(dir.dev, dir.ino));
  }
  char* paths[] = {const_cast<char*>(root.c_str()), nullptr};
  FTS* fts = ::fts_open(paths, FTS_PHYSICAL | FTS_NOCHDIR, nullptr);
  if (fts == nullptr) {
    walk.problems.push_back(fmt::format("{} cannot be walked: {}", root, std::strerror(errno)));
    return walk;
  }
  std::size_t entries = 0;
  while (FTSENT* item = ::fts_read(fts)) {
    if (!VisitEntry(walk, fts, item, entries)) break;
  }
  ::fts_close(fts);
  if (walk.too_deep > 0) {
    walk.problems.push_back(fmt::format(
        "{} lies deeper than {} levels ({} such entries in all), so what is in it is not checked",
        walk.first_too_deep, walk.bounds.max_depth, walk.too_deep));
  }
  return walk;
}

std::string BoundSentence(const std::string& root, const GitWalkBounds& bounds) {
  return fmt::format(
      "{} holds more than {} files and directories, nests them deeper than {}, or holds more "
      "than {} places where git would find a repository",
      root, bounds.max_entries, bounds.max_depth, bounds.max_places);
}

std::set<std::string> RelativeBeneath(const std::string& root,
                                      const std::vector<std::string>& paths) {
  std::set<std::string> relative;
  for (const std::string& path : paths) {
    if (path == root) relative.insert("");
    if (path.size() > root.size() && IsWithin(path, root)) {
      relative.insert(path.substr(root.size() + 1));
    }
  }
  return relative;
}

std::string Describe(const GitPlace& place, const std::string& root) {
  const std::string where = place.path.empty() ? root : root + "/" + place.path;
  return place.dot_git ? where
                       : fmt::format("{} (a HEAD with objects and refs, or a commondir)", where);
}

// Why `now` is not what `before` held at its path; empty when it is.
std::string Change(const GitPlace& now, const std::map<std::string, const GitPlace*>& before,
                   const std::map<std::pair<std::uint64_t, std::uint64_t>, std::string>& moved) {
  auto at = before.find(now.path);
  if (at != before.end() && at->second->dev == now.dev && at->second->ino == now.ino &&
      at->second->dot_git == now.dot_git) {
    if (at->second->guarded || at->second->mark == now.mark) return {};
    return "changed what git runs at";
  }
  if (auto from = moved.find({now.dev, now.ino}); from != moved.end() && from->second != now.path) {
    return fmt::format("moved {} to", from->second.empty() ? "the work tree" : from->second);
  }
  return at != before.end() ? "replaced" : "made";
}

// The directory `relative` beneath the one open at `base` ("" for itself),
// never through a link.
absl::StatusOr<internal::Fd> OpenAt(int base, const std::string& relative) {
  if (relative.empty()) return internal::Fd(::dup(base));
  return internal::OpenBeneath(base, relative, O_RDONLY | O_DIRECTORY);
}

// Takes away what git obeys at `place`: its HEAD, commondir, config,
// config.worktree and hooks when it is a directory, and then a .git itself
// (a .git directory without a HEAD is no repository, but a submodule's
// would stop the user's `git status`). One sentence names every path.
void Disarm(const std::string& root, const GitPlace& place, const std::string& change,
            const std::string& session, std::vector<std::string>& notices,
            std::vector<std::string>& errors) {
  const std::string where = place.path.empty() ? root : root + "/" + place.path;
  auto cannot = [&](std::string_view why) {
    errors.push_back(
        fmt::format("the session {} a repository git would find at {}, and it "
                    "cannot be disarmed ({}); remove it before running git there",
                    change, Describe(place, root), why));
  };
  auto base = internal::OpenDirectory(root);
  if (!base.ok()) return cannot(Message(base.status()));
  const auto info = LstatAt(base->get(), place.path.empty() ? "." : place.path);
  if (!info) return cannot(std::strerror(errno));
  std::vector<std::string> moved;
  if (S_ISDIR(info->st_mode)) {
    auto dir = OpenAt(base->get(), place.path);
    if (!dir.ok()) return cannot(Message(dir.status()));
    for (const char* name : kDisarmed) {
      if (LstatAt(dir->get(), name)) {
        MoveAside(dir->get(), where, name, name, session, moved, errors);
      }
    }
  }
  if (place.dot_git) {
    const std::size_t slash = place.path.rfind('/');
    const std::string parent = slash == std::string::npos ? "" : place.path.substr(0, slash);
    auto dir = OpenAt(base->get(), parent);
    if (!dir.ok()) return cannot(Message(dir.status()));
    MoveAside(dir->get(), parent.empty() ? root : root + "/" + parent, ".git", ".git", session,
              moved, errors);
  }
  if (moved.empty()) return;
  notices.push_back(
      fmt::format("the session {} a repository git would find at {}, whose config and hooks "
                  "git on this host would run: {}",
                  change, Describe(place, root), fmt::join(moved, "; ")));
}

std::string PathHex(std::string_view bytes) {
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (unsigned char byte : bytes) hex += fmt::format("{:02x}", byte);
  return hex;
}

std::optional<std::string> Unhex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string bytes;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(hex.data() + i, hex.data() + i + 2, value, 16);
    if (ec != std::errc() || end != hex.data() + i + 2 || value == 0) return std::nullopt;
    bytes.push_back(static_cast<char>(value));
  }
  return bytes;
}

}  // namespace

void MoveAside(int dir, const std::string& dir_path, const std::string& name,
               const std::string& what, const std::string& session,
               std::vector<std::string>& notices, std::vector<std::string>& errors) {
  const std::string aside = fmt::format("{}.sandbox-{}-{}", name, session, internal::RandomHex());
  if (::renameat(dir, name.c_str(), dir, aside.c_str()) != 0 &&
      (errno == EACCES || errno == EPERM)) {
    // A session may have taken the owner's write bit away.
    struct stat info {};
    if (::fstat(dir, &info) == 0) ::fchmod(dir, (info.st_mode & 07777) | S_IRWXU);
  }
  if (LstatAt(dir, aside) || ::renameat(dir, name.c_str(), dir, aside.c_str()) == 0) {
    notices.push_back(fmt::format("{}; it is moved aside to {}/{}", what, dir_path, aside));
    return;
  }
  const std::string why = std::strerror(errno);
  const std::string path = dir_path + "/" + name;
  if (absl::Status removed = internal::RemoveTree(path); removed.ok()) {
    notices.push_back(
        fmt::format("{}; it could not be moved aside ({}), so it is removed", what, why));
    return;
  }
  errors.push_back(fmt::format(
      "{}, and it can be neither moved aside nor removed ({}); remove {} before running git there",
      what, why, path));
}

absl::StatusOr<GitPlaces> FindGitPlaces(const std::string& work_tree,
                                        const std::vector<std::string>& guarded,
                                        const std::vector<std::string>& pruned,
                                        const GitWalkBounds& bounds) {
  std::vector<GitPlace> skipped;
  for (const std::string& path : RelativeBeneath(work_tree, pruned))
    skipped.push_back({.path = path});
  Walk walk =
      WalkTree(work_tree, Pass::kBefore, bounds, RelativeBeneath(work_tree, guarded), skipped);
  if (walk.bounded) {
    return absl::FailedPreconditionError(fmt::format(
        "{}; the node checks all of it for repositories a session planted, so no session starts "
        "there: run it in a smaller repository",
        BoundSentence(work_tree, bounds)));
  }
  if (!walk.problems.empty()) {
    return absl::FailedPreconditionError(fmt::format(
        "{}; a session could plant a repository there unseen, so none starts: make it readable "
        "by its owner",
        walk.problems.front()));
  }
  return std::move(walk.found);
}

void DisarmGitPlaces(const std::string& work_tree, const GitPlaces& before,
                     const std::string& session, std::vector<std::string>& notices,
                     std::vector<std::string>& errors, const GitWalkBounds& bounds) {
  std::set<std::string> guarded;
  std::map<std::string, const GitPlace*> by_path;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> by_inode;
  for (const GitPlace& place : before.places) {
    by_path[place.path] = &place;
    by_inode[{place.dev, place.ino}] = place.path;
    if (place.guarded) guarded.insert(place.path);
  }
  Walk walk = WalkTree(work_tree, Pass::kAfter, bounds, guarded, before.pruned);
  notices.insert(notices.end(), walk.notices.begin(), walk.notices.end());
  for (const std::string& problem : walk.problems) {
    errors.push_back(fmt::format("{}: look at it before running git there", problem));
  }
  if (walk.bounded) {
    errors.push_back(fmt::format(
        "after the session {} holds more than {} files and directories; the node stopped there, "
        "so a repository or set-user-ID file the session planted beyond may be left: do not run "
        "git there until you have looked",
        work_tree, bounds.max_entries));
  }
  // Deepest first: a place inside a .git is disarmed before that .git
  // moves aside.
  for (auto at = walk.found.places.rbegin(); at != walk.found.places.rend(); ++at) {
    const GitPlace& place = *at;
    const std::string change = Change(place, by_path, by_inode);
    if (change.empty()) continue;
    Disarm(work_tree, place, change, session, notices, errors);
  }
}

std::string GitPlacesToText(const GitPlaces& places) {
  std::string text = "mojoup.git-places/v1\n";
  for (const GitPlace& dir : places.pruned) {
    text += fmt::format("S {} {} {}\n", dir.dev, dir.ino, PathHex(dir.path));
  }
  for (const GitPlace& place : places.places) {
    text += fmt::format("P {} {} {} {} {} {}\n", place.dev, place.ino, place.dot_git ? 1 : 0,
                        place.guarded ? 1 : 0, place.mark, PathHex(place.path));
  }
  return text;
}

absl::StatusOr<GitPlaces> GitPlacesFromText(std::string_view text) {
  auto bad = [](std::size_t line, std::string_view what) {
    return absl::DataLossError(fmt::format("line {}: {}", line, what));
  };
  if (text.size() > kMaxGitPlacesBytes) return bad(0, "larger than any the node writes");
  constexpr std::string_view kHead = "mojoup.git-places/v1\n";
  if (text.substr(0, kHead.size()) != kHead) return bad(1, "not mojoup.git-places/v1");
  text.remove_prefix(kHead.size());
  GitPlaces places;
  for (std::size_t line = 2; !text.empty(); ++line) {
    const std::size_t end = text.find('\n');
    if (end == std::string_view::npos) return bad(line, "cut short");
    std::string_view row = text.substr(0, end);
    text.remove_prefix(end + 1);
    std::vector<std::string_view> fields;
    for (std::size_t at = 0; at <= row.size();) {
      const std::size_t space = std::min(row.find(' ', at), row.size());
      fields.push_back(row.substr(at, space - at));
      at = space + 1;
    }
    auto number = [](std::string_view field, std::uint64_t& out) {
      auto [stop, ec] = std::from_chars(field.data(), field.data() + field.size(), out);
      return ec == std::errc() && stop == field.data() + field.size() && !field.empty();
    };
    if (fields.size() == 4 && fields[0] == "S") {
      GitPlace dir;
      auto path = Unhex(fields[3]);
      if (!number(fields[1], dir.dev) || !number(fields[2], dir.ino) || !path) {
        return bad(line, "not a directory the node writes");
      }
      dir.path = std::move(*path);
      places.pruned.push_back(std::move(dir));
      continue;
    }
    GitPlace place;
    std::uint64_t dot_git = 2;
    std::uint64_t guarded = 2;
    if (fields.size() != 7 || fields[0] != "P" || !number(fields[1], place.dev) ||
        !number(fields[2], place.ino) || !number(fields[3], dot_git) ||
        !number(fields[4], guarded) || !number(fields[5], place.mark) || dot_git > 1 ||
        guarded > 1) {
      return bad(line, "not a place the node writes");
    }
    auto path = Unhex(fields[6]);
    if (!path) return bad(line, "a path that is not hex");
    place.path = std::move(*path);
    place.dot_git = dot_git == 1;
    place.guarded = guarded == 1;
    places.places.push_back(std::move(place));
  }
  return places;
}

}  // namespace mojoup::sandbox

#include "mojoup/internal/safe_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "fmt/format.h"

namespace mojoup::internal {
namespace {

absl::Status FromErrno(int error, const std::string& what) {
  std::string message = fmt::format("{}: {}", what, std::strerror(error));
  switch (error) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EEXIST:
      return absl::AlreadyExistsError(message);
    case ELOOP:
      return absl::FailedPreconditionError(
          fmt::format("{} is a symbolic link or lies behind one, which is not followed", what));
    case ENOTDIR:
    case EXDEV:
      return absl::FailedPreconditionError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    default:
      return absl::InternalError(message);
  }
}

// The components of a relative path; false when one is ".." or the path
// is absolute or empty.
bool Components(std::string_view relative, std::vector<std::string>& parts) {
  if (relative.empty() || relative.front() == '/') return false;
  for (absl::string_view part : absl::StrSplit(absl::string_view(relative.data(), relative.size()),
                                               '/', absl::SkipEmpty())) {
    if (part == "..") return false;
    if (part != ".") parts.emplace_back(part);
  }
  return !parts.empty();
}

int OpenByComponents(int dir_fd, const std::vector<std::string>& parts, int flags, mode_t mode) {
  Fd current;
  int at = dir_fd;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    Fd next(::openat(at, parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.ok()) return -1;
    current = std::move(next);
    at = current.get();
  }
  return ::openat(at, parts.back().c_str(), flags, mode);
}

// One pass over the directory `dir_fd` for RemoveTree: unlinks what is not
// a directory, up to the first directory not in `stuck`, whose name it
// returns (and its stat in `info_out`); "" when none is left. `failed`
// hears of each leaf it could not unlink, and of "" when the directory
// cannot be listed.
std::string UnlinkFilesToADirectory(int dir_fd, const std::set<std::pair<dev_t, ino_t>>& stuck,
                                    struct stat& info_out,
                                    const std::function<void(const std::string&, int)>& failed) {
  int listing = ::dup(dir_fd);
  DIR* dir = listing < 0 ? nullptr : ::fdopendir(listing);
  if (dir == nullptr) {
    if (listing >= 0) ::close(listing);
    failed("", errno);
    return "";
  }
  std::string down;
  ::rewinddir(dir);
  while (dirent* entry = ::readdir(dir)) {
    const std::string leaf = entry->d_name;
    if (leaf == "." || leaf == "..") continue;
    struct stat info {};
    if (::fstatat(dir_fd, leaf.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(info.st_mode)) {
      if (stuck.count({info.st_dev, info.st_ino}) == 0) {
        down = leaf;
        info_out = info;
        break;
      }
    } else if (::unlinkat(dir_fd, leaf.c_str(), 0) != 0) {
      failed(leaf, errno);
    }
  }
  ::closedir(dir);
  return down;
}

}  // namespace

bool ChmodNoFollow(int dir, const char* name, mode_t mode) {
  Fd fd(::openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
  struct stat info {};
  if (!fd.ok() || ::fstat(fd.get(), &info) != 0 || S_ISLNK(info.st_mode)) return false;
  return ::chmod(fmt::format("/proc/self/fd/{}", fd.get()).c_str(), mode) == 0;
}

std::string KindOfFile(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "of an unknown kind";
}

absl::StatusOr<Fd> OpenDirectory(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.ok()) return FromErrno(errno, path);
  return fd;
}

absl::StatusOr<Fd> OpenBeneath(int dir_fd, std::string_view relative, int flags, mode_t mode) {
  const std::string name(relative);
  std::vector<std::string> parts;
  if (!Components(relative, parts)) {
    return absl::InvalidArgumentError(fmt::format("{}: not a path beneath a directory", name));
  }
  flags |= O_CLOEXEC | O_NOFOLLOW;
  if ((flags & (O_DIRECTORY | O_PATH)) == 0) flags |= O_NONBLOCK;
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags);
  how.mode = (flags & O_CREAT) != 0 ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(::syscall(SYS_openat2, dir_fd, name.c_str(), &how, sizeof how));
  if (fd < 0 && (errno == ENOSYS || errno == EPERM)) {
    // No openat2 (before Linux 5.6, or a filter refuses it): every
    // component opened on its own, none followed.
    fd = OpenByComponents(dir_fd, parts, flags, mode);
  }
  if (fd < 0) return FromErrno(errno, name);
  return Fd(fd);
}

namespace {

// ReadRegular's and OpenRegularFile's checks, before a byte is read.
absl::Status CheckRegular(const Fd& fd, const std::string& name, std::uint64_t max_bytes,
                          struct stat& info) {
  if (::fstat(fd.get(), &info) != 0) return FromErrno(errno, name);
  if (!S_ISREG(info.st_mode)) {
    return absl::FailedPreconditionError(
        fmt::format("{} is {}, not a regular file", name, KindOfFile(info.st_mode)));
  }
  if (static_cast<std::uint64_t>(info.st_size) > max_bytes) {
    return absl::FailedPreconditionError(fmt::format(
        "{} is {} bytes, over the {} that are read of it", name, info.st_size, max_bytes));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RegularFile> ReadRegular(const Fd& fd, const std::string& name,
                                        std::size_t max_bytes) {
  RegularFile file;
  if (absl::Status checked = CheckRegular(fd, name, max_bytes, file.info); !checked.ok()) {
    return checked;
  }
  file.bytes.resize(static_cast<std::size_t>(file.info.st_size));
  std::size_t got = 0;
  // The size was read before: a file that grows meanwhile is cut at the
  // bound, never read on without one.
  while (got < file.bytes.size()) {
    ssize_t n = ::read(fd.get(), file.bytes.data() + got, file.bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FromErrno(errno, name);
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  file.bytes.resize(got);
  return file;
}

absl::StatusOr<RegularFile> ReadBeneath(int dir_fd, std::string_view relative,
                                        std::size_t max_bytes) {
  auto fd = OpenBeneath(dir_fd, relative, O_RDONLY);
  if (!fd.ok()) return fd.status();
  return ReadRegular(*fd, std::string(relative), max_bytes);
}

absl::StatusOr<RegularFile> ReadRegularFile(const std::string& path, std::size_t max_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.ok()) return FromErrno(errno, path);
  return ReadRegular(fd, path, max_bytes);
}

absl::StatusOr<Fd> OpenRegularFile(const std::string& path, std::uint64_t max_bytes,
                                   struct stat* info) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.ok()) return FromErrno(errno, path);
  struct stat got {};
  if (absl::Status checked = CheckRegular(fd, path, max_bytes, got); !checked.ok()) return checked;
  if (info != nullptr) *info = got;
  return fd;
}

absl::Status CheckPrivateDir(const std::string& path, std::string_view what) {
  if (path.empty() || path.front() != '/') {
    return absl::InvalidArgumentError(fmt::format("{} {} is not an absolute path", what, path));
  }
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return FromErrno(errno, fmt::format("{} {}", what, path));
  auto refuse = [&](std::string_view why) {
    return absl::FailedPreconditionError(fmt::format(
        "{} {} {}; it holds what is yours alone, so it must be a directory you own that no one "
        "else can write: remove it or choose another",
        what, path, why));
  };
  if (S_ISLNK(info.st_mode)) return refuse("is a symbolic link");
  if (!S_ISDIR(info.st_mode)) return refuse("is not a directory");
  if (info.st_uid != ::geteuid()) {
    return refuse(fmt::format("is owned by another user (uid {})", info.st_uid));
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return refuse(fmt::format("is writable by others (mode {:04o})", info.st_mode & 07777));
  }
  // Whoever may write a parent may rename this directory away and put
  // another in its place, unless the parent is sticky.
  std::string parent = path;
  while (parent.size() > 1) {
    const std::size_t slash = parent.find_last_of('/');
    parent = slash == 0 ? "/" : parent.substr(0, slash);
    struct stat up {};
    if (::stat(parent.c_str(), &up) != 0) return FromErrno(errno, parent);
    const bool sticky = (up.st_mode & S_ISVTX) != 0;
    std::string why;
    if (up.st_uid != 0 && up.st_uid != ::geteuid()) {
      why = fmt::format("another user (uid {}) owns {}", up.st_uid, parent);
    } else if (!sticky && (up.st_mode & S_IWOTH) != 0) {
      why = fmt::format("anyone may write {}", parent);
    } else if (!sticky && (up.st_mode & S_IWGRP) != 0 && up.st_gid != ::getegid()) {
      why = fmt::format("the group {} may write {}", up.st_gid, parent);
    }
    if (!why.empty()) return refuse(fmt::format("lies where others may replace it ({})", why));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> MakeDirectory(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) != 0) {
    if (errno == EEXIST) return false;
    return FromErrno(errno, path);
  }
  if (::chmod(path.c_str(), mode) != 0) {
    return FromErrno(errno, fmt::format("{}: cannot set mode {:o}", path, mode));
  }
  return true;
}

absl::Status MakePrivateDir(const std::string& path, std::string_view what) {
  if (path.empty() || path.front() != '/') {
    return absl::InvalidArgumentError(fmt::format("{} {} is not an absolute path", what, path));
  }
  // Parents first, each made 0700 when missing; existing ones are left as
  // they are (CheckPrivateDir judges them).
  for (std::size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string prefix = slash == std::string::npos ? path : path.substr(0, slash);
    if (!prefix.empty() && prefix.back() != '/') {
      if (auto made = MakeDirectory(prefix, 0700); !made.ok()) {
        return absl::Status(
            made.status().code(),
            fmt::format("cannot create {} {}", what, std::string(made.status().message())));
      }
    }
    if (slash == std::string::npos) break;
  }
  return CheckPrivateDir(path, what);
}

absl::Status RemoveTree(const std::string& path) {
  struct stat top {};
  if (::lstat(path.c_str(), &top) != 0) {
    return errno == ENOENT ? absl::OkStatus() : FromErrno(errno, path);
  }
  const std::size_t slash = path.find_last_of('/');
  const std::string parent_path = slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") {
    return absl::InvalidArgumentError(fmt::format("{}: not a tree to remove", path));
  }
  Fd parent(::open(parent_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent.ok()) return FromErrno(errno, parent_path);
  if (!S_ISDIR(top.st_mode)) {
    if (::unlinkat(parent.get(), name.c_str(), 0) != 0) return FromErrno(errno, path);
    return absl::OkStatus();
  }

  // The walk goes down one directory at a time and back up through "..",
  // checked against the inode it came from; `names` is the way down.
  struct Step {
    std::string name;
    ino_t ino;
    dev_t dev;
  };
  std::vector<Step> names;
  std::set<std::pair<dev_t, ino_t>> stuck;  // directories that could not be removed
  std::string first_error;
  auto note = [&](const std::string& where, int error) {
    if (first_error.empty()) first_error = fmt::format("{}: {}", where, std::strerror(error));
  };
  auto where = [&](std::string_view leaf) {
    std::string at = path;
    for (const Step& step : names) at += "/" + step.name;
    if (!leaf.empty()) at += "/" + std::string(leaf);
    return at;
  };
  ChmodNoFollow(parent.get(), name.c_str(), (top.st_mode & 07777) | S_IRWXU);
  Fd current(::openat(parent.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!current.ok()) return FromErrno(errno, path);
  std::vector<std::pair<dev_t, ino_t>> trail = {{top.st_dev, top.st_ino}};
  while (true) {
    struct stat down_info {};
    const std::string down = UnlinkFilesToADirectory(
        current.get(), stuck, down_info,
        [&](const std::string& leaf, int error) { note(where(leaf), error); });
    if (!down.empty()) {
      ChmodNoFollow(current.get(), down.c_str(), (down_info.st_mode & 07777) | S_IRWXU);
      Fd next(
          ::openat(current.get(), down.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!next.ok()) {
        // Try it as an empty directory; else leave it and say so.
        if (::unlinkat(current.get(), down.c_str(), AT_REMOVEDIR) != 0) {
          note(where(down), errno);
          stuck.insert({down_info.st_dev, down_info.st_ino});
        }
        continue;
      }
      names.push_back({down, down_info.st_ino, down_info.st_dev});
      trail.emplace_back(down_info.st_dev, down_info.st_ino);
      current = std::move(next);
      continue;
    }
    if (names.empty()) break;
    Fd up(::openat(current.get(), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    struct stat up_info {};
    const auto expected = trail[trail.size() - 2];
    if (!up.ok() || ::fstat(up.get(), &up_info) != 0 ||
        std::make_pair(up_info.st_dev, up_info.st_ino) != expected) {
      return absl::InternalError(
          fmt::format("cannot remove {}: it was moved while being removed", where("")));
    }
    const Step step = names.back();
    names.pop_back();
    trail.pop_back();
    current = std::move(up);
    if (::unlinkat(current.get(), step.name.c_str(), AT_REMOVEDIR) != 0) {
      note(where(step.name), errno);
      stuck.insert({step.dev, step.ino});
    }
  }
  current.Reset();
  if (::unlinkat(parent.get(), name.c_str(), AT_REMOVEDIR) != 0) note(path, errno);
  if (!first_error.empty()) {
    return absl::PermissionDeniedError(fmt::format("cannot remove {}", first_error));
  }
  return absl::OkStatus();
}

}  // namespace mojoup::internal

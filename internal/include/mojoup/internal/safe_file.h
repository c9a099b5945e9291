// Files and directories that someone else may have written: a session (the
// repository, its git directory, its staging home) or another local user (a
// directory under /tmp). Each helper opens without following symbolic links
// and without blocking, takes regular files only and bounds what it reads,
// so that a planted link, FIFO or sparse giant is an error sentence, never a
// redirection, a hang or an abort.
//
//   auto root = mojoup::internal::OpenDirectory(repo);
//   auto policy = mojoup::internal::ReadBeneath(root->get(), ".mojoup/policy.json", 1 << 20);
//   if (!policy.ok()) return policy.status();   // "... is a symbolic link", "... is a FIFO"
//
// Private directories hold what is the user's alone (session records,
// staging, sockets): MakePrivateDir creates one 0700 and CheckPrivateDir
// refuses one that is a link, is not the user's, or that others can write
// or swap (an ancestor others may rename it in).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mojoup/internal/fd.h"

namespace mojoup::internal {

// What a file of `mode` is, for a sentence: "a FIFO", "a symbolic link",
// "a directory", "a regular file".
std::string KindOfFile(mode_t mode);

// Opens the absolute directory `path`, its last component not followed.
absl::StatusOr<Fd> OpenDirectory(const std::string& path);

// Opens `relative` (no "..", no leading '/') beneath the directory `dir_fd`
// without following a symbolic link in any component: openat2 with
// RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, or component by component with
// O_NOFOLLOW where the kernel lacks it. `flags` get O_CLOEXEC | O_NOFOLLOW
// added, and O_NONBLOCK unless O_DIRECTORY or O_PATH is among them. Errors
// carry errno's meaning: NotFound (ENOENT), FailedPrecondition (ELOOP: a
// link on the way, or ENOTDIR), PermissionDenied, else Internal; the
// message names `relative`.
absl::StatusOr<Fd> OpenBeneath(int dir_fd, std::string_view relative, int flags, mode_t mode = 0);

// What ReadRegular read: the bytes and the file's status at the time.
struct RegularFile {
  std::string bytes;
  struct stat info {};
};

// Reads the file open at `fd` whole when it is a regular file of at most
// `max_bytes`; `name` is for the sentences ("... is a FIFO, not a regular
// file", "... is 34359738368 bytes, over the 1048576 read").
absl::StatusOr<RegularFile> ReadRegular(const Fd& fd, const std::string& name,
                                        std::size_t max_bytes);

// OpenBeneath(dir_fd, relative, O_RDONLY) then ReadRegular. NotFound when
// the file is absent.
absl::StatusOr<RegularFile> ReadBeneath(int dir_fd, std::string_view relative,
                                        std::size_t max_bytes);

// The same for an absolute path, only its last component not followed.
absl::StatusOr<RegularFile> ReadRegularFile(const std::string& path, std::size_t max_bytes);

// The same checks without the reading, for a file too large to hold at
// once: the absolute `path` opened (its last component not followed,
// without blocking) when it is a regular file of at most `max_bytes`; `info`
// gets its status. The caller reads it in pieces, to the size `info` gave.
absl::StatusOr<Fd> OpenRegularFile(const std::string& path, std::uint64_t max_bytes,
                                   struct stat* info = nullptr);

// `path` is a directory (not a link to one) that only this user can change:
// owned by the effective uid, without group or other write; each ancestor
// owned by root or the user and, unless sticky, writable by no one else (a
// group write is allowed for the user's own group). FailedPrecondition with
// one sentence naming `what` and `path` otherwise; NotFound when absent.
absl::Status CheckPrivateDir(const std::string& path, std::string_view what);

// mkdir of `path` alone with exactly `mode`, whatever the umask: true when
// made here, false when something was there already (the caller judges it).
// The error names `path`.
absl::StatusOr<bool> MakeDirectory(const std::string& path, mode_t mode);

// Creates `path` and its missing parents 0700 (MakeDirectory), then
// CheckPrivateDir.
absl::Status MakePrivateDir(const std::string& path, std::string_view what);

// chmod of `name` in `dir` (AT_FDCWD for a path) itself, never of what a
// link there names, even one swapped in since the caller looked; false when
// it is a link or the chmod fails.
bool ChmodNoFollow(int dir, const char* name, mode_t mode);

// Removes `path` and everything beneath it whatever its modes: each
// directory gets its owner's rwx back before it is read, links are removed,
// never followed, and the walk holds two descriptors at any depth.
// A `path` that is absent is fine. The error names what could not be
// removed and why.
absl::Status RemoveTree(const std::string& path);

}  // namespace mojoup::internal

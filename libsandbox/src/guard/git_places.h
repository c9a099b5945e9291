// Where git would find a repository in a work tree, by git's own rules, and
// what a session did to those places.
//
// git 2.39's discovery (setup.c: setup_git_directory_gently_1,
// is_git_directory, read_gitfile_gently; gitrepository-layout(5)) takes,
// in every directory from the user's working directory up:
// - an entry named .git: a directory, a "gitdir:" file, or a link to
//   either (lstat is not used: access() and open() follow links);
// - the directory itself when it holds a HEAD and, where its `commondir`
//   (or it) points, objects/ and refs/: a bare repository, which Debian 12's
//   git accepts anywhere (safe.bareRepository defaults to "all").
// Each is a place whose config, config.worktree, hooks and commondir git
// obeys: core.fsmonitor, core.pager, aliases and hooks run as the user.
//
// Before a session the node notes every such place (path, device and
// inode, and a mark of what decides what git runs there); after it, a place
// that is new, replaced, moved, or whose deciders changed is disarmed: its
// HEAD, commondir, config, config.worktree and hooks are moved aside, and
// then an entry named .git itself, whatever its type. objects/ and refs/
// are never touched: they may be the project's own tracked files.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace mojoup::sandbox {

struct GitPlace {
  std::string path;  // relative to the work tree; "" is the work tree itself
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  bool dot_git = false;  // an entry named .git, else a directory of git's shape
  bool guarded = false;  // pinned and protected by the session's own mounts
  std::uint64_t mark = 0;

  bool operator==(const GitPlace&) const = default;
};

struct GitPlaces {
  std::vector<GitPlace> places;
  // Directories the session saw read-only, with their device and inode
  // (mark unused): not walked while they are the same.
  std::vector<GitPlace> pruned;
};

// How far a walk goes before it stops and fails closed.
struct GitWalkBounds {
  std::size_t max_entries = 2'000'000;
  int max_depth = 512;
  std::size_t max_places = 1000;
};

// Every place of `work_tree` (without following a link); `guarded` are the
// absolute paths the session's mounts pin, `pruned` the absolute
// directories it sees read-only. A bound hit or a directory that cannot be
// read is an error sentence (FailedPrecondition): the session does not
// start where its work cannot be checked afterwards.
absl::StatusOr<GitPlaces> FindGitPlaces(const std::string& work_tree,
                                        const std::vector<std::string>& guarded,
                                        const std::vector<std::string>& pruned,
                                        const GitWalkBounds& bounds = {});

// After the session: every place that is not in `before` as it was there
// is disarmed, one sentence per place in `notices`; what could not be
// checked or disarmed goes to `errors`. The same walk clears set-user-ID
// and set-group-ID bits. Past bounds.max_entries it stops (an error);
// a subtree deeper than bounds.max_depth is skipped (an error).
void DisarmGitPlaces(const std::string& work_tree, const GitPlaces& before,
                     const std::string& session, std::vector<std::string>& notices,
                     std::vector<std::string>& errors, const GitWalkBounds& bounds = {});

// Renames `name` in the directory open at `dir` (`dir_path` for the
// sentences) to <name>.sandbox-<session>-<random>: a name the session could
// not have taken first. When that fails it is removed: a move-aside that is
// blocked never leaves what was planted in force. `what` says what the
// session made there; one sentence goes to `notices`, or to `errors` when
// it can be neither moved nor removed.
void MoveAside(int dir, const std::string& dir_path, const std::string& name,
               const std::string& what, const std::string& session,
               std::vector<std::string>& notices, std::vector<std::string>& errors);

// A line-based form for the session's state directory, and back. Reading
// is bounded and refuses anything that is not exactly that form.
std::string GitPlacesToText(const GitPlaces& places);
absl::StatusOr<GitPlaces> GitPlacesFromText(std::string_view text);
inline constexpr std::size_t kMaxGitPlacesBytes = 16u << 20;

}  // namespace mojoup::sandbox

// What of a repository a sandbox may write, and what it must not.
//
// The host later trusts some files of a repository: git runs what the git
// directory's config and hooks name (core.fsmonitor, core.pager, hooks) at the
// user's next `git status`, follows `commondir` and `objects/info/alternates`
// elsewhere, replays a `rebase-merge/` todo list's `exec` lines; and the next
// session's rules come from .mojoup/policy.json. A session may change the
// working tree and make commits, but it must not plant those. So:
//
// - a git directory (.git) is pinned by a mount of its own, so it cannot be
//   renamed away and replaced, and every entry of kTrustedEntries
//   (docs/security.md, "What the host must not trust from a session") is mounted read-only;
//   one that is absent and that git takes empty as absent is created empty,
//   as the user, before the mount, so the session cannot create it;
// - the entries that cannot be made empty without changing what git does
//   (commondir, rebase-merge/, rebase-apply/, sequencer/) are checked after
//   the session, with HEAD, and quarantined when the session made them;
// - a linked worktree's .git file is read-only, and it is accepted only when
//   it leads to a real worktree entry of a real repository (back-pointer,
//   commondir, HEAD/objects/refs, the user's own): then the main git
//   directory is mounted read-only, with objects, refs, logs and this
//   worktree's own entry writable, so commits work;
// - .mojoup/ is read-only.
//
// Nothing is mounted through a symbolic link: every source is resolved
// beneath the repository without following one (a trusted entry that is a
// link refuses the session), and every repository file the host reads is
// opened without following links or blocking, and bounded.
//
// The guard before a session is repository_before.cc, the one after it
// repository_after.cc; repository_entries.h holds what both know of git.
// Both open every path inside the repository beneath a directory
// descriptor: the repository is the session's writing.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "guard/git_places.h"
#include "mojoup/sandbox/mount.h"

namespace mojoup::sandbox {

struct RepositoryMounts {
  // The repository itself first, then the protections, parents before
  // children.
  std::vector<BindMount> mounts;
  // Where the command may write besides the repository (a worktree's common
  // objects, refs and logs, and its own entry).
  std::vector<std::string> writable;
  bool has_git = false;  // the repository had a .git when the session began
  // What was not protected, and why, one sentence each (a submodule path
  // behind a symbolic link, say).
  std::vector<std::string> notices;
};

struct RepositoryGuardOptions {
  std::string repo;       // absolute, canonical
  uid_t uid = 0;          // who must own the git directories
  std::string home;       // the user's home on the host
  std::string state_dir;  // the node's state directory
};

// The mounts that give a sandbox `repo` with what the host trusts read-only.
// Refuses (FailedPrecondition, one sentence naming the path and why) a .git
// that is a symbolic link, a .git file that does not lead to a linked
// worktree of a repository the user owns, a trusted entry that is a
// symbolic link or of the wrong kind, an index that cannot be read safely,
// and a .mojoup that is not a directory.
absl::StatusOr<RepositoryMounts> GuardRepository(const RepositoryGuardOptions& options);

// Before a session: every place of `repo` where git would find a
// repository (git_places.h), the session's own pinned ones marked guarded
// and what it sees read-only left out. A bound hit or a directory that
// cannot be read refuses the session (FailedPrecondition, one sentence).
absl::StatusOr<GitPlaces> NoteGitPlaces(const std::string& repo, const RepositoryMounts& mounts,
                                        const GitWalkBounds& bounds = {});

// After a session on `repo` that began at `since` (nanoseconds since the
// epoch), with `before` what NoteGitPlaces saw:
// - every place where git would find a repository that the session made,
//   moved, replaced or changed is disarmed (git_places.h), and set-user-ID
//   and set-group-ID bits are cleared;
// - in each git directory the session could write (the repository's own,
//   an embedded submodule's, a linked worktree's entry), an entry git
//   trusts that the session created (commondir, rebase-merge/, ...), a HEAD
//   that is not a plain ref, a link, FIFO or device where git expects a
//   file or directory, and an index that names a path in a git directory
//   or cannot be read safely.
// Each is moved aside under a name no session can predict
// (`<name>.sandbox-<session>-<random>`), or removed when that fails, one
// sentence in `notices` each; what could be neither goes to `errors`.
void MoveAsidePlantedRepositories(const std::string& repo, const GitPlaces& before,
                                  std::int64_t since, const std::string& session,
                                  std::vector<std::string>& notices,
                                  std::vector<std::string>& errors,
                                  const GitWalkBounds& bounds = {});

}  // namespace mojoup::sandbox

// What of a repository a sandbox may write, and what it must not.
//
// The host later trusts some files of a repository: git runs what the git
// directory's config and hooks name (core.fsmonitor, core.pager, hooks) at the
// user's next `git status`, and the next session's rules come from
// .mojoup/policy.json. A session may change the working tree and make
// commits, but it must not plant those. So:
//
// - a git directory (.git) is pinned by a mount of its own, so it cannot be
//   renamed away and replaced, and its config, hooks, info, modules,
//   worktrees, remotes and branches are mounted read-only;
// - a linked worktree's .git file is read-only, and it is accepted only when
//   it leads to a real worktree entry of a real repository (back-pointer,
//   commondir, HEAD/objects/refs, the user's own): then the main git
//   directory is mounted read-only, with objects, refs, logs and this
//   worktree's own entry writable, so commits work;
// - .mojoup/ is read-only.
//
// Entries that git creates on demand (hooks, info, modules, worktrees) are
// created empty first when missing, so a session cannot create them itself.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "mojoup/sandbox/backend.h"

namespace mojoup::sandbox {

struct RepositoryMounts {
  // The repository itself first, then the protections, parents before
  // children.
  std::vector<BindMount> mounts;
  // Where the command may write besides the repository (a worktree's common
  // objects, refs and logs, and its own entry).
  std::vector<std::string> writable;
  bool has_git = false;  // the repository had a .git when the session began
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
// worktree of a repository the user owns, and a .mojoup that is not a
// directory.
absl::StatusOr<RepositoryMounts> GuardRepository(const RepositoryGuardOptions& options);

// After a session on `repo` that began at `since` (nanoseconds since the
// epoch; 0 when unknown, and then every .git there counts as planted): a
// .git the session created in a repository that had none (`had_git`
// false), or put at a gitlink path of the repository's index or of a
// submodule's own index, would make the user's next `git status` run that
// repository's config. Each is renamed to .git.sandbox-<session>, one
// sentence in `notices` each; what could not be done goes to `errors`.
void MoveAsidePlantedRepositories(const std::string& repo, bool had_git, std::int64_t since,
                                  const std::string& session, std::vector<std::string>& notices,
                                  std::vector<std::string>& errors);

}  // namespace mojoup::sandbox

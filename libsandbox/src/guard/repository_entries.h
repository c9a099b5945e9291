// What the two repository guards share: the entries of a git directory that
// git on the host trusts (the guard before a session mounts them read-only
// or creates them, the one after checks what the session made of them), and
// the reading of a work tree's .git through the repository's descriptor.
// Every path inside the repository is opened relative to a directory
// descriptor, without following a symbolic link: a session writes the
// repository, and could have swapped any of its directories for a link.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "mojoup/internal/fd.h"
#include "mojoup/internal/safe_file.h"

namespace mojoup::sandbox::repo_guard {

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
inline constexpr TrustedEntry kTrustedEntries[] = {
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
inline constexpr TrustedEntry kWorktreeEntries[] = {
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
inline constexpr TrustedEntry kCommonObjectEntries[] = {
    {"objects/info/alternates", Kind::kFile, IfAbsent::kCreate},
    {"objects/info/http-alternates", Kind::kFile, IfAbsent::kCreate},
};

// Small files git writes a line or two into (.git files, commondir, gitdir).
inline constexpr std::size_t kMaxPointerBytes = 64 * 1024;

// The first line of the small regular file `name` beneath the directory
// open at `dir`, without its line ending; never through a link, never
// blocking.
std::optional<std::string> FirstLineAt(int dir, std::string_view name);

// The git directory the .git of the work tree open at `work_tree` (at
// `work_tree_path`) leads to: the path of .git itself when a directory, or
// what its "gitdir:" line names, canonical; empty when neither.
std::string GitDirOf(int work_tree, const std::string& work_tree_path);

// The directory `parent` beneath the one open at `dir` ("" for `dir`
// itself), never through a link.
absl::StatusOr<internal::Fd> OpenParent(int dir, const std::string& parent);

}  // namespace mojoup::sandbox::repo_guard

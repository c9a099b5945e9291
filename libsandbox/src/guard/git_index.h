// The gitlinks of a git index: the paths where git expects a submodule.
//
// A session may write the index (commits need it). A gitlink there, with a
// repository of the session's making at its path, makes the user's next
// `git status` on the host run `git status` in that repository, under its
// config: core.fsmonitor runs as the user. So after a session the node lists
// the gitlinks and moves aside any .git the session put at one.
//
// Read from gitformat-index(5) (git 2.39): versions 2, 3 and 4, SHA-1 and
// SHA-256 object names, and a split index's shared part.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace mojoup::sandbox {

// An index larger than this is refused, not read: git's own for a large
// monorepo is some hundreds of MiB at most. Read or not, memory stays bounded:
// the index is streamed.
inline constexpr std::uint64_t kMaxIndexBytes = 1ull << 30;
// A git config larger than this is not read for its object format.
inline constexpr std::size_t kMaxGitConfigBytes = 4u << 20;

// The gitlink paths (relative to the work tree) of the index in `git_dir`
// (with its shared index, when split). An absent index has none. The index
// is opened without following links or blocking and streamed: a FIFO, a
// symbolic link or a file over kMaxIndexBytes is an error sentence.
absl::StatusOr<std::vector<std::string>> IndexGitlinks(const std::string& git_dir);
// The same for the git directory open at `git_dir`.
absl::StatusOr<std::vector<std::string>> IndexGitlinksAt(int git_dir);

// The first path of the index in the git directory open at `git_dir` that
// leaves the work tree or names a git directory in it
// (".git/hooks/post-commit", "a/../b"), which git on the host would check
// out where it must not; nullopt when there is none, and IndexGitlinks' error sentence when the
// index cannot be read safely (a FIFO, a link, over kMaxIndexBytes, not an index).
absl::StatusOr<std::optional<std::string>> IndexPathProblem(int git_dir);

// Whether one component of a path names a git directory as git on some
// filesystem would take it: ".git" in any case, with trailing dots or
// spaces (NTFS), or "git~1" (its short name).
bool IsGitDirName(std::string_view component);

// The gitlinks of the bytes of one index file; `hash_size` is 20 (SHA-1) or
// 32 (SHA-256). `shared` is set to the hex name of the shared index a split
// index links to, else cleared.
absl::StatusOr<std::vector<std::string>> ParseIndexGitlinks(const std::string& bytes,
                                                            std::size_t hash_size,
                                                            std::string* shared);

}  // namespace mojoup::sandbox

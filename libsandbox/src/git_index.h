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

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace mojoup::sandbox {

// The gitlink paths (relative to the work tree) of the index in `git_dir`
// (with its shared index, when split). An absent index has none.
absl::StatusOr<std::vector<std::string>> IndexGitlinks(const std::string& git_dir);

// The same, from the bytes of one index file; `hash_size` is 20 (SHA-1) or
// 32 (SHA-256). `shared` is set to the hex name of the shared index a split
// index links to, else cleared.
absl::StatusOr<std::vector<std::string>> ParseIndexGitlinks(const std::string& bytes,
                                                            std::size_t hash_size,
                                                            std::string* shared);

}  // namespace mojoup::sandbox

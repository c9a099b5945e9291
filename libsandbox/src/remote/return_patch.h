// The patch a remote sandbox sends back, checked before git on the host
// applies any of it.
//
// The patch is the session's work, so everything in it is untrusted: it is
// read without following a link, refused over its cap before a byte is
// read, and parsed here line by line as `git diff --binary --full-index`
// writes it (git 2.39 diff.c; the headers git apply reads, apply.c). Every
// path it names must stay in the work tree and out of any git directory and
// .mojoup/; every mode must be 100644, 100755 or 120000; a symbolic link's
// target is read from the patch and must stay in the tree; no path may go
// through a symbolic link. Anything else the parser does not know is
// refused, so git apply never reads a line that was not checked: it is fed
// the private copy made while checking.
//
//   auto patch = CheckReturnPatch("/state/s/mojoup-return.patch", tree.get(), {});
//   if (!patch.ok()) return patch.status();  // ".../mojoup-return.patch: line 7: ..."
//   // git apply reads patch->copy on its stdin.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "mojoup/internal/fd.h"

namespace mojoup::sandbox {

struct PatchCaps {
  std::uint64_t max_bytes = 256ull << 20;
  // git writes a binary file in lines of 66 bytes; a text line is the
  // file's own, and a minified one may be long, but not this long.
  std::size_t max_line = 16u << 20;
  std::size_t max_files = 200000;
};

struct CheckedPatch {
  internal::Fd copy;  // exactly the bytes checked, at offset 0, that no one else can write
  std::uint64_t bytes = 0;
  std::size_t files = 0;
};

// Checks the patch at `path` against the work tree open at `tree` (for the
// symbolic links already there). The error is one sentence naming `path`,
// the line, and what was wrong.
absl::StatusOr<CheckedPatch> CheckReturnPatch(const std::string& path, int tree,
                                              const PatchCaps& caps);

}  // namespace mojoup::sandbox

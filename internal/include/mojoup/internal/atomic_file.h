// Writing files whole: WriteAll() loops over short writes and EINTR;
// ReplaceAtomically() makes a file hold new bytes all or nothing, so a reader
// (or a crash) sees either the old file or the new one, never a part.
//
//   if (absl::Status put = mojoup::internal::ReplaceAtomically(path, json, 0600); !put.ok())
//     return put;
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "mojoup/internal/fd.h"

namespace mojoup::internal {

// Writes all of `bytes` to `fd`; `name` is for the error message.
absl::Status WriteAll(const Fd& fd, std::string_view bytes, const std::string& name);

// Makes `path` hold `bytes` with permission bits `mode`, all or nothing: a
// temporary file in the same directory, fsync, rename over `path`, then the
// directory synced. The temporary file is removed on every error.
absl::Status ReplaceAtomically(const std::string& path, std::string_view bytes, unsigned mode);

}  // namespace mojoup::internal

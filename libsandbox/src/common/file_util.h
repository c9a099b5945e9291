// Small file helpers the sandbox library shares: whole-file reads, path and
// ctime questions, RFC 3339 timestamps. The owning descriptor, the advisory
// lock, all-or-nothing replacement and SHA-256 in hex are the shared ones
// (mojoup/internal/), named here for the library's code.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mojoup/internal/atomic_file.h"
#include "mojoup/internal/fd.h"
#include "mojoup/internal/file_lock.h"
#include "mojoup/internal/rfc3339.h"
#include "mojoup/internal/session_id.h"
#include "mojoup/internal/sha256.h"

namespace mojoup::sandbox {

using mojoup::internal::Fd;
using mojoup::internal::LockFile;
using mojoup::internal::ReplaceAtomically;
using mojoup::internal::Sha256Hex;
using mojoup::internal::WriteAll;

// The whole of a file, or nullopt when it cannot be opened.
std::optional<std::string> ReadWholeFile(const std::string& path);

// `path` is `dir` or lies beneath it (as strings: neither is resolved).
bool IsWithin(const std::string& path, const std::string& dir);

// When `path` itself (not what a link names) last changed, in nanoseconds
// since the epoch: its ctime, which the kernel sets and no one can set back.
std::optional<std::int64_t> ChangeTimeNs(const std::string& path);

// The status of `name` in the directory open at `dir`, not following a
// link; nullopt when there is none.
std::optional<struct stat> LstatAt(int dir, const std::string& name);

// The same from a status already taken.
std::int64_t ChangeTimeOf(const struct stat& info);

// A status's message as a std::string_view: Debian's Abseil has its own
// string_view, which fmt cannot print.
inline std::string_view Message(const absl::Status& status) {
  return {status.message().data(), status.message().size()};
}

using internal::IsRandomHex;
using internal::RandomHex;
using internal::Rfc3339;

}  // namespace mojoup::sandbox

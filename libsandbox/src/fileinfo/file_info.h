// What the sandbox library asks of a file: its bytes whole, whether a path
// lies beneath a directory, its status without following a link, and when
// it last changed (its ctime, which no one can set back). The owning
// descriptor, locks, atomic replacement, hashing and timestamps are the
// shared helpers of mojoup/internal/, used from there.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace mojoup::sandbox {

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

}  // namespace mojoup::sandbox

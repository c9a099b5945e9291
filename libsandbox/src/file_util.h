// Small file and digest helpers the sandbox library shares: an owning file
// descriptor, an advisory lock with a deadline, all-or-nothing file
// replacement, SHA-256 in hex, and RFC 3339 timestamps.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mojoup::sandbox {

// Owns one file descriptor; closes it when destroyed.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd();
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }
  // Closes now, so that a failing close (delayed write errors) is seen.
  int Close();

 private:
  int fd_;
};

// An exclusive flock on `path` (created 0600 if missing), waited for up to
// `timeout`; released when the returned descriptor is closed.
absl::StatusOr<Fd> LockFile(const std::string& path, std::chrono::milliseconds timeout);

// Writes all of `bytes` to `fd`; `name` is for the error message.
absl::Status WriteAll(const Fd& fd, std::string_view bytes, const std::string& name);

// Makes `path` hold `bytes` with permission bits `mode`, all or nothing: a
// temporary file in the same directory, fsync, rename over `path`, then the
// directory synced. The temporary file is removed on every error.
absl::Status ReplaceAtomically(const std::string& path, std::string_view bytes, unsigned mode);

// Lowercase hex SHA-256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);

// The whole of a file, or nullopt when it cannot be opened.
std::optional<std::string> ReadWholeFile(const std::string& path);

// `path` is `dir` or lies beneath it (as strings: neither is resolved).
bool IsWithin(const std::string& path, const std::string& dir);

// When `path` itself (not what a link names) last changed, in nanoseconds
// since the epoch: its ctime, which the kernel sets and no one can set back.
std::optional<std::int64_t> ChangeTimeNs(const std::string& path);

// "2026-11-30T10:00:00Z": `when` in UTC, to the second.
std::string Rfc3339(std::chrono::system_clock::time_point when);

}  // namespace mojoup::sandbox

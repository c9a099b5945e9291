// Small file and digest helpers the sandbox library shares: an owning file
// descriptor, all-or-nothing file replacement, and SHA-256 in hex.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"

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

// Writes all of `bytes` to `fd`; `name` is for the error message.
absl::Status WriteAll(const Fd& fd, std::string_view bytes, const std::string& name);

// Makes `path` hold `bytes` with permission bits `mode`, all or nothing: a
// temporary file in the same directory, fsync, rename over `path`, then the
// directory synced. The temporary file is removed on every error.
absl::Status ReplaceAtomically(const std::string& path, std::string_view bytes, unsigned mode);

// Lowercase hex SHA-256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);

}  // namespace mojoup::sandbox

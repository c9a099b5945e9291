// Fd: owns one file descriptor and closes it when destroyed.
//
//   mojoup::internal::Fd fd(::open(path, O_RDONLY | O_CLOEXEC));
//   if (!fd.ok()) return errno;
//   ::read(fd.get(), buffer, size);
//
// Close() closes early, so that a failing close (a delayed write error) is
// seen; Reset() closes and forgets.
#pragma once

#include <utility>

namespace mojoup::internal {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }
  // Closes now and returns close(2)'s result (0 when there was nothing to close).
  int Close();
  // Closes now, ignoring errors.
  void Reset();
  // Gives the descriptor up, unclosed, to the caller.
  int Release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

}  // namespace mojoup::internal

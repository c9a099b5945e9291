#include "mojoup/internal/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "fmt/format.h"

namespace mojoup::internal {

absl::StatusOr<Fd> LockFile(const std::string& path, std::chrono::milliseconds timeout,
                            unsigned mode) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, mode));
  if (!fd.ok()) {
    return absl::PermissionDeniedError(
        fmt::format("{}: cannot open the lock file: {}", path, std::strerror(errno)));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      return absl::InternalError(fmt::format("{}: cannot lock: {}", path, std::strerror(errno)));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return absl::DeadlineExceededError(
          fmt::format("{}: another mojoup-node has held this lock for {} ms; try again", path,
                      timeout.count()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return fd;
}

}  // namespace mojoup::internal

#include "mojoup/internal/fd.h"

#include <unistd.h>

namespace mojoup::internal {

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    Reset();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

int Fd::Close() {
  if (fd_ < 0) return 0;
  return ::close(std::exchange(fd_, -1));
}

void Fd::Reset() {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
}

}  // namespace mojoup::internal

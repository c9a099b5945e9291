#include "protocol/protocol.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fmt/format.h"

namespace mojoup::service {

std::string EncodeFrame(FrameType type, std::string_view data) {
  std::string frame(kFrameHeader, '\0');
  frame[0] = static_cast<char>(type);
  const auto size = static_cast<std::uint32_t>(data.size());
  for (int i = 0; i < 4; ++i) frame[4 + i] = static_cast<char>((size >> (24 - 8 * i)) & 0xff);
  frame.append(data);
  return frame;
}

absl::StatusOr<std::optional<std::pair<FrameType, std::string>>> FrameReader::Next() {
  if (buffer_.size() < kFrameHeader) return std::nullopt;
  const auto type = static_cast<std::uint8_t>(buffer_[0]);
  if (type > static_cast<std::uint8_t>(FrameType::kDetach)) {
    return absl::InvalidArgumentError(fmt::format("attach stream: unknown frame type {}", type));
  }
  std::uint32_t size = 0;
  for (int i = 0; i < 4; ++i) size = (size << 8) | static_cast<std::uint8_t>(buffer_[4 + i]);
  if (size > kMaxFrame) {
    return absl::InvalidArgumentError(
        fmt::format("attach stream: a frame of {} bytes; expected at most {}", size, kMaxFrame));
  }
  if (buffer_.size() < kFrameHeader + size) return std::nullopt;
  std::pair<FrameType, std::string> frame{static_cast<FrameType>(type),
                                          buffer_.substr(kFrameHeader, size)};
  buffer_.erase(0, kFrameHeader + size);
  return frame;
}

absl::Status SendPacket(int fd, std::string_view data, int pass) {
  iovec iov{const_cast<char*>(data.data()), data.size()};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (pass >= 0) {
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &pass, sizeof(int));
  }
  for (;;) {
    if (::sendmsg(fd, &message, MSG_NOSIGNAL) >= 0) return absl::OkStatus();
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {
      pollfd wait{fd, POLLOUT, 0};
      if (::poll(&wait, 1, 5000) > 0) continue;
    }
    return absl::UnavailableError(fmt::format("cannot send: {}", std::strerror(errno)));
  }
}

absl::StatusOr<std::string> ReceivePacket(int fd, std::chrono::milliseconds timeout, int* passed) {
  if (passed != nullptr) *passed = -1;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd wait{fd, POLLIN, 0};
    const int ready = ::poll(&wait, 1, static_cast<int>(std::max<long long>(0, left.count())));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return absl::DeadlineExceededError("no answer in time");
    std::string data(kMaxFrame, '\0');
    iovec iov{data.data(), data.size()};
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    const ssize_t got = ::recvmsg(fd, &message, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got < 0)
      return absl::UnavailableError(fmt::format("cannot read: {}", std::strerror(errno)));
    for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
         header = CMSG_NXTHDR(&message, header)) {
      if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
      int fd_passed = -1;
      std::memcpy(&fd_passed, CMSG_DATA(header), sizeof(int));
      if (passed != nullptr && *passed < 0) {
        *passed = fd_passed;
      } else {
        ::close(fd_passed);
      }
    }
    if (got == 0) return absl::NotFoundError("the peer closed");
    if ((message.msg_flags & MSG_TRUNC) != 0) {
      return absl::InvalidArgumentError("a packet over 1 MiB");
    }
    data.resize(static_cast<std::size_t>(got));
    return data;
  }
}

absl::StatusOr<std::string> ReceiveWorkerPacket(int fd) {
  std::string data(kMaxWorkerPacket, '\0');
  iovec iov{data.data(), data.size()};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  ssize_t got = -1;
  do {
    got = ::recvmsg(fd, &message, MSG_DONTWAIT);
  } while (got < 0 && errno == EINTR);
  if (got < 0 && errno == EAGAIN) return absl::DeadlineExceededError("no packet yet");
  if (got < 0) return absl::UnavailableError(fmt::format("cannot read: {}", std::strerror(errno)));
  if (got == 0) return absl::NotFoundError("the peer closed");
  if ((message.msg_flags & MSG_TRUNC) != 0) {
    return absl::InvalidArgumentError(fmt::format("a packet over {} bytes", kMaxWorkerPacket));
  }
  data.resize(static_cast<std::size_t>(got));
  return data;
}

namespace {

absl::StatusOr<sockaddr_un> UnixAddress(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    return absl::InvalidArgumentError(
        fmt::format("{}: a socket path this long cannot be used", path));
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

}  // namespace

absl::StatusOr<int> ConnectUnix(const std::string& path, int type) {
  auto address = UnixAddress(path);
  if (!address.ok()) return address.status();
  const int fd = ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(fmt::format("socket: {}", std::strerror(errno)));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&*address), sizeof *address) != 0) {
    const int error = errno;
    ::close(fd);
    return absl::UnavailableError(fmt::format("{}: {}", path, std::strerror(error)));
  }
  return fd;
}

absl::StatusOr<int> ListenUnix(const std::string& path, int type, mode_t mode) {
  auto address = UnixAddress(path);
  if (!address.ok()) return address.status();
  const int fd = ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(fmt::format("socket: {}", std::strerror(errno)));
  ::unlink(path.c_str());
  // Bound with the mode already right: nobody connects before it is.
  const mode_t before = ::umask(0777 & ~mode);
  const int bound = ::bind(fd, reinterpret_cast<sockaddr*>(&*address), sizeof *address);
  ::umask(before);
  if (bound != 0 || ::listen(fd, SOMAXCONN) != 0) {
    const int error = errno;
    ::close(fd);
    return absl::FailedPreconditionError(
        fmt::format("cannot listen on {}: {}", path, std::strerror(error)));
  }
  return fd;
}

}  // namespace mojoup::service

#include "runtime/native/stream_pump.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace mojoup::sandbox {
namespace {

constexpr std::size_t kChunk = 64 * 1024;

// Writes all of `data`, waiting out a non-blocking descriptor's EAGAIN.
bool WriteAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t put = ::write(fd, data, size);
    if (put > 0) {
      data += put;
      size -= static_cast<std::size_t>(put);
      continue;
    }
    if (put < 0 && errno == EINTR) continue;
    if (put < 0 && errno == EAGAIN) {
      pollfd wait{fd, POLLOUT, 0};
      ::poll(&wait, 1, -1);
      continue;
    }
    return false;
  }
  return true;
}

// Caller stdin to the connection, until stdin ends or `stop` is readable.
void PumpStdin(int in, int connection, int stop) {
  std::string chunk(kChunk, '\0');
  pollfd fds[2] = {{in, POLLIN, 0}, {stop, POLLIN, 0}};
  while (true) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents != 0) return;  // the command is gone: leave stdin unread
    ssize_t got = ::read(in, chunk.data(), chunk.size());
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) break;
    if (!WriteAll(connection, chunk.data(), static_cast<std::size_t>(got))) return;
  }
  ::shutdown(connection, SHUT_WR);
}

}  // namespace

absl::Status PumpStreams(int connection, std::string pending, const Stdio& stdio) {
  // The connection comes from an event loop, non-blocking; here it blocks.
  if (int flags = ::fcntl(connection, F_GETFL); flags >= 0 && (flags & O_NONBLOCK) != 0) {
    ::fcntl(connection, F_SETFL, flags & ~O_NONBLOCK);
  }
  int stop[2];
  if (::pipe2(stop, O_CLOEXEC) != 0) {
    ::close(connection);
    return absl::InternalError(std::string("cannot make a pipe: ") + std::strerror(errno));
  }
  std::thread up;
  if (stdio.in >= 0) {
    up = std::thread(PumpStdin, stdio.in, connection, stop[0]);
  } else {
    ::shutdown(connection, SHUT_WR);
  }

  FrameSplitter frames;
  bool output_ok = true;
  bool told = false;
  // A reader of ours that went away must not stop the command's output from
  // draining; the caller hears of it once, to end the command as a pipeline
  // would.
  auto put = [&](int fd, const char* bytes, std::size_t length) {
    if (fd < 0) return;
    if (WriteAll(fd, bytes, length)) return;
    const bool gone = errno == EPIPE;
    output_ok = false;
    if (gone && fd == stdio.out && !told && stdio.output_closed) {
      told = true;
      stdio.output_closed();
    }
  };
  auto deliver = [&](const char* data, std::size_t size) {
    if (stdio.tty) {
      put(stdio.out, data, size);
      return;
    }
    frames.Feed(data, size, [&](unsigned char stream, const char* bytes, std::size_t length) {
      put(stream == 2 ? stdio.err : stdio.out, bytes, length);
    });
  };
  deliver(pending.data(), pending.size());
  std::string chunk(kChunk, '\0');
  absl::Status status;
  while (true) {
    ssize_t got = ::read(connection, chunk.data(), chunk.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      status = absl::UnavailableError(std::string("the sandbox's output stream broke: ") +
                                      std::strerror(errno));
      break;
    }
    if (got == 0) break;
    deliver(chunk.data(), static_cast<std::size_t>(got));
  }
  [[maybe_unused]] ssize_t woke = ::write(stop[1], "x", 1);
  if (up.joinable()) up.join();
  ::close(stop[0]);
  ::close(stop[1]);
  ::close(connection);
  return status;
}

}  // namespace mojoup::sandbox

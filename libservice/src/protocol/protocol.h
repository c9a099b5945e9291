// How the service, its workers and its clients reach each other: the
// attach stream's frames, packets on the service's unix sockets, and the
// sockets themselves. What they say is protocol/messages.h.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "mojoup/service/client.h"
#include "mojoup/service/reason.h"
#include "protocol/messages.h"

namespace mojoup::service {

// The attach stream after the 101 answer: frames of a 1-byte type, 3 zero
// bytes and a 4-byte big-endian length, then that many bytes (as Docker's
// attach stream, with types of our own).
enum class FrameType : std::uint8_t {
  kStdin = 0,   // client -> session
  kStdout = 1,  // session -> client
  kStderr = 2,
  kExit = 3,      // session -> client: the exit code, in decimal
  kResize = 4,    // client -> session: "ROWS COLUMNS"
  kSignal = 5,    // client -> session: the signal number, in decimal
  kStdinEnd = 6,  // client -> session: its input ended
  kNotice = 7,    // session -> client: one sentence
  kDetach = 8,    // client -> session: the client goes, the session stays
};
inline constexpr std::size_t kFrameHeader = 8;
inline constexpr std::size_t kMaxFrame = 1 << 20;
// The most the service reads of a request's body, and a client of an
// answer's: larger is refused (413) before any of it is parsed.
inline constexpr std::size_t kMaxRequestBody = 1 << 20;
inline constexpr std::size_t kMaxAnswerBody = 16 << 20;

std::string EncodeFrame(FrameType type, std::string_view data);

// Collects bytes and hands out whole frames; an error for a frame over
// kMaxFrame or of an unknown type.
class FrameReader {
 public:
  void Add(std::string_view bytes) { buffer_.append(bytes); }
  // The next whole frame, nullopt when more bytes are needed.
  absl::StatusOr<std::optional<std::pair<FrameType, std::string>>> Next();

 private:
  std::string buffer_;
};

// One packet on a SOCK_SEQPACKET socket, with a descriptor passed alongside
// (SCM_RIGHTS) when `pass` >= 0.
absl::Status SendPacket(int fd, std::string_view data, int pass = -1);
// The next packet, waiting at most `timeout`; DeadlineExceeded when none
// came, NotFound when the peer closed. A descriptor passed with it is put
// in `*passed` (close-on-exec), else -1.
absl::StatusOr<std::string> ReceivePacket(int fd, std::chrono::milliseconds timeout,
                                          int* passed = nullptr);

// The most a worker's packet to the service on its control or watch
// connection can be: a tally (ParseWorkerTally reads at most 4 KiB), its
// exit, the answer to "watch".
inline constexpr std::size_t kMaxWorkerPacket = 4096;
// The next of those packets if one is there, without waiting: read into
// kMaxWorkerPacket with no room for descriptors, so any a worker passes
// along is dropped by the kernel. DeadlineExceeded when none is there,
// NotFound when the peer closed, InvalidArgument for a larger one (dropped).
absl::StatusOr<std::string> ReceiveWorkerPacket(int fd);

// A unix socket of `type` (SOCK_STREAM, SOCK_SEQPACKET), close-on-exec:
// connected to `path` (Unavailable when nothing answers there), or
// listening on it, made anew with `mode` already set when it is bound.
absl::StatusOr<int> ConnectUnix(const std::string& path, int type);
absl::StatusOr<int> ListenUnix(const std::string& path, int type, mode_t mode);
inline absl::StatusOr<int> ConnectPacket(const std::string& path) {
  return ConnectUnix(path, SOCK_SEQPACKET);
}

}  // namespace mojoup::service

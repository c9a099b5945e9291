// Moves a session's standard streams between the caller's file descriptors
// and a hijacked Engine API attach connection.
//
// Without a terminal, the daemon multiplexes stdout and stderr in frames (an
// 8-byte header: stream, three zero bytes, big-endian length); with one, the
// stream is raw. Caller stdin goes up until it ends, then the connection's
// write side is shut so the command sees end of file.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "mojoup/sandbox/backend.h"

namespace mojoup::sandbox {

// Returns when the connection's read side ends (the command closed its
// output, normally by exiting). Takes ownership of `connection`.
absl::Status PumpStreams(int connection, std::string pending, const Stdio& stdio);

// Splits multiplexed attach output. Feed bytes in any pieces; each complete
// frame's payload goes to `out` (stream 1) or `err` (stream 2).
class FrameSplitter {
 public:
  template <class Sink>
  void Feed(const char* data, std::size_t size, Sink&& sink) {
    for (std::size_t i = 0; i < size;) {
      if (header_used_ < sizeof header_) {
        header_[header_used_++] = static_cast<unsigned char>(data[i++]);
        if (header_used_ == sizeof header_) {
          left_ = (std::size_t{header_[4]} << 24) | (std::size_t{header_[5]} << 16) |
                  (std::size_t{header_[6]} << 8) | std::size_t{header_[7]};
          if (left_ == 0) header_used_ = 0;
        }
        continue;
      }
      const std::size_t take = std::min(left_, size - i);
      sink(header_[0], data + i, take);
      i += take;
      left_ -= take;
      if (left_ == 0) header_used_ = 0;
    }
  }

 private:
  unsigned char header_[8] = {};
  std::size_t header_used_ = 0;
  std::size_t left_ = 0;
};

}  // namespace mojoup::sandbox

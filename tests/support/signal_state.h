// A process's signal state: set for a while by a test, and read back from
// what a child reports of its own (/proc/PID/status).
//
//   mojoup::test::SignalState state({SIGINT}, {SIGPIPE});  // blocked, ignored
//   ... start a child ...
//   auto ignored = mojoup::test::SignalMask(status_text, "SigIgn");
//   CHECK_FALSE(mojoup::test::HasSignal(*ignored, SIGPIPE));
#pragma once

#include <signal.h>

#include <optional>
#include <string>
#include <vector>

namespace mojoup::test {

// The mask `field` ("SigBlk", "SigIgn") of a /proc/PID/status text, or
// nullopt when it has none.
inline std::optional<unsigned long long> SignalMask(const std::string& status,
                                                    const std::string& field) {
  const std::size_t at = status.find(field + ":\t");
  if (at == std::string::npos || (at > 0 && status[at - 1] != '\n')) return std::nullopt;
  return std::stoull(status.substr(at + field.size() + 2, 16), nullptr, 16);
}

inline bool HasSignal(unsigned long long mask, int signal) { return (mask >> (signal - 1)) & 1U; }

// Blocks `blocked` in this thread and ignores `ignored` in this process
// until it is destroyed, when both are as they were.
class SignalState {
 public:
  SignalState(const std::vector<int>& blocked, const std::vector<int>& ignored) {
    sigset_t set;
    sigemptyset(&set);
    for (int signal : blocked) sigaddset(&set, signal);
    ::pthread_sigmask(SIG_BLOCK, &set, &mask_before_);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    for (int signal : ignored) {
      struct sigaction before {};
      ::sigaction(signal, &ignore, &before);
      actions_before_.emplace_back(signal, before);
    }
  }
  ~SignalState() {
    ::pthread_sigmask(SIG_SETMASK, &mask_before_, nullptr);
    for (const auto& [signal, before] : actions_before_) ::sigaction(signal, &before, nullptr);
  }
  SignalState(const SignalState&) = delete;
  SignalState& operator=(const SignalState&) = delete;

 private:
  sigset_t mask_before_;
  std::vector<std::pair<int, struct sigaction>> actions_before_;
};

}  // namespace mojoup::test

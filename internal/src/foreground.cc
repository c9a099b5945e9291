#include "mojoup/internal/foreground.h"

#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>

#include <atomic>
#include <optional>
#include <thread>
#include <utility>

namespace mojoup::internal {
namespace {

// Wakes the forwarder when it is done (ignored by default, never forwarded).
constexpr int kWake = SIGURG;

sigset_t ForegroundSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, kWake}) sigaddset(&set, signal);
  return set;
}

// Waits for the foreground signals on a thread of its own until destroyed.
class SignalForwarder {
 public:
  explicit SignalForwarder(std::function<void(int signal)> on_signal)
      : thread_([this, on_signal = std::move(on_signal)] {
          sigset_t set = ForegroundSignals();
          while (!done_) {
            int signal = 0;
            if (sigwait(&set, &signal) == 0 && signal != kWake) on_signal(signal);
          }
        }) {}
  ~SignalForwarder() {
    done_ = true;
    pthread_kill(thread_.native_handle(), kWake);
    thread_.join();
  }
  SignalForwarder(const SignalForwarder&) = delete;
  SignalForwarder& operator=(const SignalForwarder&) = delete;

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// The terminal in raw mode; restored on scope exit.
class RawTerminal {
 public:
  explicit RawTerminal(int fd) : fd_(fd) {
    if (tcgetattr(fd_, &saved_) != 0) return;
    termios raw = saved_;
    cfmakeraw(&raw);
    active_ = tcsetattr(fd_, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) tcsetattr(fd_, TCSANOW, &saved_);
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

}  // namespace

bool TerminalSize(int fd, unsigned short& rows, unsigned short& columns) {
  winsize size{};
  if (ioctl(fd, TIOCGWINSZ, &size) != 0) return false;
  rows = size.ws_row;
  columns = size.ws_col;
  return true;
}

void BlockForegroundSignals() {
  sigset_t set = ForegroundSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

absl::StatusOr<int> RunInForeground(const ForegroundCommand& command) {
  unsigned short rows = 0, columns = 0;
  std::optional<RawTerminal> raw;
  if (command.terminal) {
    TerminalSize(1, rows, columns);
    raw.emplace(0);
  }
  int interrupts = 0;
  SignalForwarder forward([&command, &interrupts](int signal) {
    if (signal == SIGWINCH) {
      unsigned short now_rows = 0, now_columns = 0;
      if (TerminalSize(1, now_rows, now_columns)) command.resize(now_rows, now_columns);
      return;
    }
    // A second interrupt means now.
    command.signal(command.kill_on_second_interrupt && ++interrupts > 1 ? SIGKILL : signal);
  });
  return command.wait(rows, columns);
}

}  // namespace mojoup::internal

#include "terminal.h"

#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>

#include <atomic>
#include <functional>
#include <optional>
#include <thread>

namespace mojoup::cli {
namespace {

// Wakes the forwarder when it is done (ignored by default, never forwarded).
constexpr int kWake = SIGURG;

sigset_t SessionSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, kWake}) sigaddset(&set, signal);
  return set;
}

// Waits for the session signals on a thread of its own until destroyed.
class SignalForwarder {
 public:
  explicit SignalForwarder(std::function<void(int signal)> on_signal)
      : thread_([this, on_signal = std::move(on_signal)] {
          sigset_t set = SessionSignals();
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

void BlockSessionSignals() {
  sigset_t set = SessionSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

absl::StatusOr<int> RunInForeground(RunningCommand& run) {
  sandbox::Stdio stdio;
  std::optional<RawTerminal> raw;
  if (run.terminal()) {
    TerminalSize(1, stdio.rows, stdio.columns);
    raw.emplace(0);
  }
  const bool sandboxed = !run.record().id.empty();
  int interrupts = 0;
  SignalForwarder forward([&run, &interrupts, sandboxed](int signal) {
    if (signal == SIGWINCH) {
      unsigned short rows = 0, columns = 0;
      if (TerminalSize(1, rows, columns)) run.Resize(rows, columns).IgnoreError();
      return;
    }
    // A second interrupt means now: take the sandbox away.
    run.Signal(sandboxed && ++interrupts > 1 ? SIGKILL : signal).IgnoreError();
  });
  return run.Wait(stdio);
}

}  // namespace mojoup::cli

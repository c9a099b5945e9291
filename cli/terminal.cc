#include "terminal.h"

#include <pthread.h>
#include <sys/ioctl.h>

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

}  // namespace

void BlockSessionSignals() {
  sigset_t set = SessionSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

SignalForwarder::SignalForwarder(std::function<void(int signal)> on_signal)
    : thread_([this, on_signal = std::move(on_signal)] {
        sigset_t set = SessionSignals();
        while (!done_) {
          int signal = 0;
          if (sigwait(&set, &signal) == 0 && signal != kWake) on_signal(signal);
        }
      }) {}

SignalForwarder::~SignalForwarder() {
  done_ = true;
  pthread_kill(thread_.native_handle(), kWake);
  thread_.join();
}

RawTerminal::RawTerminal(int fd) : fd_(fd) {
  if (tcgetattr(fd_, &saved_) != 0) return;
  termios raw = saved_;
  cfmakeraw(&raw);
  active_ = tcsetattr(fd_, TCSANOW, &raw) == 0;
}

RawTerminal::~RawTerminal() {
  if (active_) tcsetattr(fd_, TCSANOW, &saved_);
}

bool TerminalSize(int fd, unsigned short& rows, unsigned short& columns) {
  winsize size{};
  if (ioctl(fd, TIOCGWINSZ, &size) != 0) return false;
  rows = size.ws_row;
  columns = size.ws_col;
  return true;
}

}  // namespace mojoup::cli

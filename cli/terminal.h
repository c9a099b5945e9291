// What a command line needs while a command runs in the foreground: signals
// passed on to it, and the terminal in raw mode while the sandbox owns it.
#pragma once

#include <signal.h>
#include <termios.h>

#include <atomic>
#include <functional>
#include <thread>

namespace mojoup::cli {

// Blocks, in this thread and every thread it starts from now on, the signals
// a session's owner passes on (SIGINT, SIGTERM, SIGHUP, SIGQUIT), SIGWINCH,
// and the forwarder's own wake-up, so that only SignalForwarder takes them.
void BlockSessionSignals();

// Waits for the session signals on a thread of its own until destroyed.
class SignalForwarder {
 public:
  explicit SignalForwarder(std::function<void(int signal)> on_signal);
  ~SignalForwarder();
  SignalForwarder(const SignalForwarder&) = delete;
  SignalForwarder& operator=(const SignalForwarder&) = delete;

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// The terminal in raw mode; restored on scope exit.
class RawTerminal {
 public:
  explicit RawTerminal(int fd);
  ~RawTerminal();
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

// The terminal's size on `fd`; false when it is not a terminal.
bool TerminalSize(int fd, unsigned short& rows, unsigned short& columns);

}  // namespace mojoup::cli

// BackgroundProcess: a long-running program under test (mojoup-node proxy),
// with its stdout read line by line and a deadline on every wait.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace mojoup::test {

class BackgroundProcess {
 public:
  // argv with `env` (NAME=VALUE) added to this process's environment.
  BackgroundProcess(const std::vector<std::string>& env, const std::vector<std::string>& argv);
  ~BackgroundProcess();  // Stop()
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  // The next line of stdout, or nullopt at EOF or after `timeout`.
  std::optional<std::string> ReadLine(std::chrono::milliseconds timeout);
  // Everything it wrote to stderr so far (for failure messages).
  std::string Stderr();
  // SIGTERM, then SIGKILL after `grace`; the exit status as waitpid gives it.
  int Stop(std::chrono::milliseconds grace = std::chrono::seconds(5));
  // Waits for it to exit by itself: its status, or nullopt after `timeout`.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
  int out_ = -1;
  int err_ = -1;
  std::string pending_;
  std::optional<int> status_;
};

}  // namespace mojoup::test

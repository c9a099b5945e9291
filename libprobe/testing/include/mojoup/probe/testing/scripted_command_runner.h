// ScriptedCommandRunner: a CommandRunner that answers from a table instead of
// starting programs. Keys are the argv joined with spaces; an unknown command
// is "not started" with ENOENT, as for a program that is not installed.
//
//   ScriptedCommandRunner runner;
//   runner.Answer("wslinfo --networking-mode", {.outcome = kExited, .exit_code = 0,
//                                               .out = "mirrored\n"});
#pragma once

#include <cerrno>
#include <map>
#include <mutex>
#include <vector>

#include "mojoup/probe/command_runner.h"

namespace mojoup::probe::testing {

class ScriptedCommandRunner : public CommandRunner {
 public:
  void Answer(const std::string& command_line, CommandResult result) {
    std::lock_guard lock(mu_);
    answers_[command_line] = std::move(result);
  }
  // Convenience: a command that exits 0 and prints `out`.
  void Prints(const std::string& command_line, std::string out) {
    CommandResult result;
    result.outcome = CommandResult::Outcome::kExited;
    result.exit_code = 0;
    result.out = std::move(out);
    Answer(command_line, std::move(result));
  }

  CommandResult Run(const std::vector<std::string>& argv, std::chrono::milliseconds) override {
    std::string line;
    for (const std::string& arg : argv) line += (line.empty() ? "" : " ") + arg;
    std::lock_guard lock(mu_);
    calls_.push_back(line);
    if (auto it = answers_.find(line); it != answers_.end()) return it->second;
    CommandResult missing;
    missing.outcome = CommandResult::Outcome::kNotStarted;
    missing.spawn_error = ENOENT;
    return missing;
  }

  // Answered as Run answers the same command line; the environment is
  // recorded, one list per call (environments()).
  CommandResult RunWithEnvironment(const std::vector<std::string>& argv,
                                   const std::vector<std::string>& environment,
                                   std::chrono::milliseconds timeout) override {
    {
      std::lock_guard lock(mu_);
      environments_.push_back(environment);
    }
    return Run(argv, timeout);
  }

  std::vector<std::vector<std::string>> environments() {
    std::lock_guard lock(mu_);
    return environments_;
  }

  std::vector<std::string> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, CommandResult> answers_;
  std::vector<std::string> calls_;
  std::vector<std::vector<std::string>> environments_;
};

}  // namespace mojoup::probe::testing

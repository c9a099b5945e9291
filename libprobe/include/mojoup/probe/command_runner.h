// CommandRunner: runs a program with a deadline and captures its output.
//
// The probe asks `openshell` and `wslinfo` questions through this seam. The real
// runner starts the program in its own process group with stdin from /dev/null,
// and kills the whole group when the deadline passes, so a wedged program never
// hangs the caller.
//
//   auto runner = mojoup::probe::MakeSystemCommandRunner();
//   CommandResult r = runner->Run({"openshell", "--version"}, std::chrono::seconds(2));
//   if (r.outcome == CommandResult::Outcome::kExited && r.exit_code == 0) use(r.out);
#pragma once

#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace mojoup::probe {

struct CommandResult {
  enum class Outcome {
    kExited,      // exit_code is valid
    kSignaled,    // signal is valid
    kTimedOut,    // killed at the deadline
    kNotStarted,  // spawn_error is valid (ENOENT, EACCES, ...)
  };
  Outcome outcome = Outcome::kNotStarted;
  int exit_code = -1;
  int signal = 0;
  int spawn_error = 0;
  std::string out;
  std::string err;

  bool Succeeded() const { return outcome == Outcome::kExited && exit_code == 0; }
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // argv[0] is a path or a name looked up on PATH.
  virtual CommandResult Run(const std::vector<std::string>& argv,
                            std::chrono::milliseconds timeout) = 0;
  // The same with NAME=VALUE entries added to (or replacing in) this
  // process's environment: for secrets, which a command line would show to
  // every user of the host. A runner that cannot pass them does not start
  // the program (kNotStarted, ENOSYS) rather than run it without them.
  virtual CommandResult RunWithEnvironment(const std::vector<std::string>& argv,
                                           const std::vector<std::string>& environment,
                                           std::chrono::milliseconds timeout) {
    if (environment.empty()) return Run(argv, timeout);
    CommandResult result;
    result.spawn_error = ENOSYS;
    return result;
  }
};

// Output beyond this many bytes per stream is dropped.
inline constexpr std::size_t kMaxCommandOutput = 1 << 20;

std::unique_ptr<CommandRunner> MakeSystemCommandRunner();

}  // namespace mojoup::probe

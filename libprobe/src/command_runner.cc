#include "mojoup/probe/command_runner.h"

#include <signal.h>

#include <cerrno>
#include <string>

#include "mojoup/internal/spawn.h"

namespace mojoup::probe {
namespace {

using Clock = std::chrono::steady_clock;

class SystemCommandRunner final : public CommandRunner {
 public:
  CommandResult Run(const std::vector<std::string>& argv,
                    std::chrono::milliseconds timeout) override {
    return RunWithEnvironment(argv, {}, timeout);
  }

  CommandResult RunWithEnvironment(const std::vector<std::string>& argv,
                                   const std::vector<std::string>& environment,
                                   std::chrono::milliseconds timeout) override {
    CommandResult result;
    if (argv.empty()) {
      result.spawn_error = EINVAL;
      return result;
    }
    // NAME=VALUE each: a bare NAME would match every variable of this process.
    for (const std::string& entry : environment) {
      const auto equals = entry.find('=');
      if (equals == std::string::npos || equals == 0) {
        result.spawn_error = EINVAL;
        return result;
      }
    }
    mojoup::internal::SpawnOptions options;
    options.argv = argv;
    // This process's environment, with `environment`'s names replaced.
    options.environment = mojoup::internal::CurrentEnvironment(environment);
    options.in = mojoup::internal::Stream::Null();
    options.out = mojoup::internal::Stream::Capture();
    options.err = mojoup::internal::Stream::Capture();
    // Its own process group, so a deadline kills everything it started.
    options.group = mojoup::internal::SpawnOptions::Group::kGroup;
    options.default_signals = {SIGPIPE};
    auto child = mojoup::internal::Spawn(options);
    if (!child.ok()) {
      const int error = mojoup::internal::SpawnErrno(child.status());
      result.spawn_error = error != 0 ? error : EINVAL;
      return result;
    }
    mojoup::internal::ChildExit done = child->Wait(Clock::now() + timeout, kMaxCommandOutput);
    result.out = std::move(done.out);
    result.err = std::move(done.err);
    if (done.timed_out) {
      result.outcome = CommandResult::Outcome::kTimedOut;
    } else if (done.Exited()) {
      result.outcome = CommandResult::Outcome::kExited;
      result.exit_code = done.exit_code;
    } else {
      result.outcome = CommandResult::Outcome::kSignaled;
      result.signal = done.signal;
    }
    return result;
  }
};

}  // namespace

std::unique_ptr<CommandRunner> MakeSystemCommandRunner() {
  return std::make_unique<SystemCommandRunner>();
}

}  // namespace mojoup::probe

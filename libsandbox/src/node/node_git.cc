// doctor's host.git check: whether the host's git takes any directory of
// git's shape for a repository. Sessions cannot plant one that runs (the
// node disarms every place git would find a repository after each
// session), but git that refuses bare repositories outside an explicit
// --git-dir is a second wall.
#include <cerrno>

#include "fmt/format.h"
#include "node/node_state.h"

namespace mojoup {
namespace {

constexpr std::chrono::milliseconds kGitTimeout{2000};

}  // namespace

probe::Check GitCheck(probe::CommandRunner& commands) {
  probe::Check check;
  check.id = std::string(probe::check_id::kHostGit);
  check.required = false;  // sessions run safely either way
  const auto started = std::chrono::steady_clock::now();
  // git 2.39's setup.c: safe.bareRepository is "all" (the default) or
  // "explicit" (bare repositories only through --git-dir or GIT_DIR).
  probe::CommandResult got =
      commands.Run({"git", "config", "--get", "safe.bareRepository"}, kGitTimeout);
  check.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  if (got.outcome == probe::CommandResult::Outcome::kNotStarted && got.spawn_error == ENOENT) {
    check.status = probe::Status::kSkip;
    check.summary = "git is not installed on this host, so no repository here is run by it.";
    return check;
  }
  if (got.outcome != probe::CommandResult::Outcome::kExited ||
      (got.exit_code != 0 && got.exit_code != 1)) {
    check.status = probe::Status::kWarn;
    check.summary = "git on this host did not say how it treats bare repositories.";
    check.detail = fmt::format("`git config --get safe.bareRepository`: {}", got.err);
    check.remedy = "Run `git config --get safe.bareRepository` yourself and fix what it says.";
    return check;
  }
  std::string value = got.out.substr(0, got.out.find('\n'));
  if (value == "explicit") {
    check.status = probe::Status::kPass;
    check.summary =
        "git on this host takes bare repositories only when named "
        "(safe.bareRepository is explicit).";
    return check;
  }
  check.status = probe::Status::kWarn;
  check.summary = fmt::format(
      "git on this host takes any directory holding HEAD, objects and refs for a repository "
      "and runs its config (safe.bareRepository is {}); the node disarms those a session "
      "plants, but nothing else does.",
      value.empty() ? "unset, so all" : value);
  check.remedy =
      "Run `git config --global safe.bareRepository explicit` as each user who runs sessions "
      "(or `--system` as root).";
  return check;
}

}  // namespace mojoup

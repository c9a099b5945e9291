// PolicyWatch: was this repository's policy written by a sandboxed session?
//
// A session cannot write the .mojoup/ it runs under (it is mounted
// read-only), but it can create one where there was none, or a .git or
// .mojoup in a subdirectory, which makes that subdirectory a repository root
// with a policy of the session's choosing. So the node remembers when
// sandboxed sessions could write which repository, and before a run takes a
// repository's policy on trust it asks whether what decides that policy
// changed inside one of those windows. The kernel sets a file's change time
// (ctime) itself, so a session cannot backdate it.
//
//   PolicyWatch watch(state_dir);
//   if (auto change = watch.FindChange(repo_root)) {
//     // ask the user: change->Sentence(); if it is theirs:
//     watch.Accept(repo_root);
//   }
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"

namespace mojoup::sandbox {

struct PolicyChange {
  std::string path;                  // what changed (the policy file, .mojoup, a .git, a directory)
  std::string repo;                  // the repository the session ran on
  std::string session;               // the session's id
  std::string started_at, ended_at;  // RFC 3339; ended_at empty while it runs

  // "…/.mojoup/policy.json changed while sandboxed session ID ran on REPO
  // (START to END)".
  std::string Sentence() const;
};

class PolicyWatch {
 public:
  using Clock = std::chrono::system_clock;

  explicit PolicyWatch(std::string state_dir);

  // A session on `repo` begins (before its sandbox exists) and ends (after
  // its sandbox is gone).
  absl::Status SessionStarted(const std::string& repo, const std::string& session,
                              Clock::time_point when);
  absl::Status SessionEnded(const std::string& repo, const std::string& session,
                            Clock::time_point when);

  // For the repository root a run found (the directory whose .mojoup/ or .git
  // made it the root): the most recent change, to what decides its policy,
  // made while a sandboxed session could write it and not accepted since.
  // `known` gives the change times (nanoseconds) of paths the caller read
  // through the very descriptors it took the policy from, so that what is
  // checked is what is used; other paths are looked up.
  std::optional<PolicyChange> FindChange(
      const std::string& root, const std::map<std::string, std::int64_t>& known = {}) const;

  // The user says the policy of `root` as it is now (or as `known` says it
  // was read) is theirs.
  absl::Status Accept(const std::string& root,
                      const std::map<std::string, std::int64_t>& known = {});

 private:
  std::string dir_;
};

}  // namespace mojoup::sandbox

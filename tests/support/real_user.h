// A node operator as they really are: not root, in the docker group, with the
// repository under their own $HOME. Tests that walk a user's path (the escape
// suite, the session paths) run `mojoup-node` as this user.
//
//   MOJOUP_REQUIRE_REAL_USER(user);             // or SKIP, saying why
//   UserNode node(*user);                       // ~/src/project-XXXX, a git repository
//   Run run = node.Sh("echo hi > file");        // mojoup-node run -- /bin/sh -c ...
//   REQUIRE(node.Leftovers() == 0);
//
// The user (mojoup-tester) is created once per machine when the test runs as
// root, as CI does; a non-root test run needs it to exist already (created by
// a root run, or by hand) and SKIPs with the reason otherwise.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "sandbox_image.h"
#include "test_support.h"

// Declares `user` (const RealUser*): the normal user, on a real dockerd with
// the test image; or SKIPs saying which of the two this machine lacks.
#define MOJOUP_REQUIRE_REAL_USER(user)                                          \
  std::string why_##user = mojoup::test::WhyNoSandboxDocker();                  \
  if (!why_##user.empty()) MOJOUP_SKIP("needs a real dockerd: " << why_##user); \
  const mojoup::test::RealUser* user = mojoup::test::RealUser::Get(why_##user); \
  if (user == nullptr) MOJOUP_SKIP(why_##user)

namespace mojoup::test {

class RealUser {
 public:
  // The user, or nullptr with `why` saying what this machine lacks.
  static const RealUser* Get(std::string& why);
  // A second local user (mojoup-outsider), outside the docker group, with a
  // home of its own: the attacker next door. Its `bin` is not installed.
  static const RealUser* Outsider(std::string& why);
  // A second user in the docker group (mojoup-tester2): two people on one node.
  static const RealUser* Second(std::string& why);

  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
  // A directory of the user's holding copies of this build's mojoup-node and
  // mojoup-sandbox-init, as an installation would (the build tree may not be
  // reachable by other users).
  std::string bin;

  // The user's basic environment: HOME, USER, LOGNAME, PATH (bin first).
  std::vector<std::string> Environment() const;

  // Runs argv as the user (real and effective uid and gid, the user's
  // supplementary groups), with Environment() plus `env` and nothing else of
  // this process's environment, in `cwd` (default: the user's home).
  Run As(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
         std::chrono::milliseconds timeout = std::chrono::seconds(60),
         const std::string& cwd = "") const;

  // The argv prefix that As() uses, for programs started in the background.
  std::vector<std::string> Prefix(const std::vector<std::string>& env = {},
                                  const std::string& cwd = "") const;

  // Writes `text` to `path` (parents created), owned by the user, with `mode`.
  void Write(const std::string& path, const std::string& text, mode_t mode = 0644) const;

  // Files named pwned* in the home: what a planted command would create on
  // the host, as the user, if it ran.
  std::vector<std::string> Pwned() const;
  void ClearPwned() const;
};

// A run's exit code and output, for a failing test's INFO.
std::string Described(const Run& run);

// A native-runtime node of the user's: a git repository with one commit under
// ~/src/, a node config allowing the user, and a state directory, all the
// user's own. Everything is removed at scope exit (containers are not: a test
// asserts Leftovers()).
class UserNode {
 public:
  explicit UserNode(const RealUser& user, const std::string& image = "");
  ~UserNode();
  UserNode(const UserNode&) = delete;
  UserNode& operator=(const UserNode&) = delete;

  const RealUser& user;
  std::string root;              // ~/.mojoup-test-XXXX: config and state
  std::string repo;              // ~/src/project-XXXX
  std::string config;            // the node config file
  std::string state;             // MOJOUP_STATE_DIR
  std::vector<std::string> env;  // MOJOUP_NODE_CONFIG, MOJOUP_STATE_DIR, NO_COLOR

  // Writes the repository's .mojoup/policy.json (as the user).
  void Policy(const std::string& json) const;
  // `mojoup-node ARGS...` as the user, from `cwd` (default: the repository).
  Run Cli(const std::vector<std::string>& args, const std::vector<std::string>& extra_env = {},
          std::chrono::milliseconds timeout = std::chrono::seconds(90),
          const std::string& cwd = "") const;
  // `mojoup-node run --repo REPO [flags] -- /bin/sh -c SCRIPT` as the user.
  Run Sh(const std::string& script, const std::vector<std::string>& flags = {},
         const std::vector<std::string>& extra_env = {}) const;
  // `git ARGS...` on the host, as the user, in the repository.
  Run Git(const std::vector<std::string>& args) const;
  // Containers labelled with this node's state directory, plus entries left
  // in its sessions/ directory.
  std::size_t Leftovers() const;
};

}  // namespace mojoup::test

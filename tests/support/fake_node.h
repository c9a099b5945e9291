// A node for end-to-end tests of the built CLI: its Docker is the fake daemon,
// its openshell the fake one, its config a file of its own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mojoup/probe/testing/fake_docker_daemon.h"
#include "mojoup/probe/testing/fake_openshell.h"
#include "test_support.h"

namespace mojoup::test {

inline const std::string kSystemPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

struct FakeNode {
  TempDir dir;
  std::unique_ptr<probe::testing::FakeDockerDaemon> daemon;
  // Environment entries; [0] DOCKER_HOST, [1] PATH, [2] MOJOUP_NODE_CONFIG.
  std::vector<std::string> env;
  std::string cli = BinDir() + "/mojoup-node";

  explicit FakeNode(
      probe::testing::FakeDockerDaemon::Mode mode = probe::testing::FakeDockerDaemon::Mode::kAnswer,
      probe::testing::FakeOpenShellOptions openshell = {}) {
    daemon = std::make_unique<probe::testing::FakeDockerDaemon>(dir / "docker.sock", mode);
    probe::testing::WriteFakeOpenShell(dir.path(), openshell);
    env = {"DOCKER_HOST=" + daemon->host(), "PATH=" + dir.path() + ":" + kSystemPath,
           "MOJOUP_NODE_CONFIG=" + config(), "NO_COLOR="};
  }

  std::string config() const { return dir / "node.json"; }

  // Runs `mojoup-node ARGS...`, optionally under `prefix` (setpriv, hold-listener).
  Run Cli(std::vector<std::string> args, std::vector<std::string> prefix = {}) const {
    std::vector<std::string> argv = std::move(prefix);
    argv.push_back(cli);
    argv.insert(argv.end(), args.begin(), args.end());
    return RunWithEnv(env, argv);
  }
};

inline std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace mojoup::test

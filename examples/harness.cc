// An integration test of a program built on mojoup::Node, with the installed
// test doubles in place of the world: a scripted kernel, a fake Docker daemon
// on a real unix socket, a scripted command runner and an in-memory sandbox
// runtime. It needs no Docker and no OpenShell, and leaves nothing behind.
//
//   A repository whose policy requires a sandbox, on a node that can run one:
//   the decision is "sandboxed", Run returns the sandboxed command's exit
//   code, and no session is left on record.
//
// Exit 0 when every check holds; otherwise 1, naming the first that did not.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "mojoup/mojoup.h"
#include "mojoup/probe/testing/fake_docker_daemon.h"
#include "mojoup/probe/testing/mock_kernel.h"
#include "mojoup/probe/testing/scripted_command_runner.h"
#include "mojoup/sandbox/testing/in_memory_backend.h"

namespace {

namespace fs = std::filesystem;
using mojoup::probe::testing::FakeDockerDaemon;

// Not assert(): it must hold in release builds too.
#define CHECK(condition)                                                               \
  do {                                                                                 \
    if (!(condition)) {                                                                \
      std::cerr << "harness: " << __FILE__ << ":" << __LINE__ << ": " #condition "\n"; \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (false)

void Write(const fs::path& path, const std::string& contents) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << contents;
}

// A temporary directory, removed with everything in it at the end.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string name = (fs::temp_directory_path() / "mojoup-harness-XXXXXX").string();
    CHECK(::mkdtemp(name.data()) != nullptr);
    path = name;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

}  // namespace

int main() {
  TempDir dir;

  // The repository: a git work tree (as `git init` leaves it) whose policy
  // requires a sandbox.
  const fs::path repo = dir.path / "repo";
  fs::create_directories(repo / ".git/objects");
  fs::create_directories(repo / ".git/refs/heads");
  Write(repo / ".git/HEAD", "ref: refs/heads/main\n");
  Write(repo / ".git/config", "[core]\n\trepositoryformatversion = 0\n");
  Write(repo / ".mojoup/policy.json", R"({"agents": {"sandbox": "required"}})");

  // The node: the native runtime, with the doubles below standing in for
  // Docker and the kernel; anyone may run agents in its sandboxes.
  const fs::path config = dir.path / "node.json";
  Write(config, R"({"node.sandbox.engine": "docker", "node.sandbox.role": true,
                    "node.sandbox.runtime": "native", "node.sandbox.image": "harness:1",
                    "node.sandbox.allowed_users": "*"})");

  FakeDockerDaemon daemon((dir.path / "docker.sock").string(), FakeDockerDaemon::Mode::kAnswer);
  mojoup::probe::testing::MockKernel kernel;  // a healthy Linux host
  kernel.env["DOCKER_HOST"] = daemon.host();
  std::unique_ptr<mojoup::probe::DockerApi> docker = mojoup::probe::MakeDockerApi();
  mojoup::probe::testing::ScriptedCommandRunner commands;
  mojoup::sandbox::testing::InMemoryBackend backend;
  backend.SetScript([](const mojoup::sandbox::SandboxSpec& spec, const mojoup::sandbox::Stdio&) {
    return spec.command == std::vector<std::string>{"make", "test"} ? 7 : 99;
  });

  mojoup::NodeOptions options;
  options.config_path = config.string();
  options.state_dir = (dir.path / "state").string();
  options.supervisor = "/bin/true";  // never started: the runtime is in memory
  options.kernel = &kernel;
  options.docker = docker.get();
  options.commands = &commands;
  options.backend = &backend;
  absl::StatusOr<mojoup::Node> node = mojoup::Node::Open(std::move(options));
  if (!node.ok()) std::cerr << "harness: " << node.status().message() << "\n";
  CHECK(node.ok());

  CHECK(node->Doctor().verdict.can_sandbox);
  absl::StatusOr<mojoup::Explanation> explained = node->Explain(repo.string());
  if (!explained.ok()) std::cerr << "harness: " << explained.status().message() << "\n";
  CHECK(explained.ok());
  CHECK(explained->decision.result == mojoup::policy::SandboxDecision::Result::kSandboxed);

  mojoup::RunRequest request;
  request.workdir = repo.string();
  request.command = {"make", "test"};
  absl::StatusOr<mojoup::RunResult> result = node->Run(std::move(request));
  if (!result.ok()) std::cerr << "harness: " << result.status().message() << "\n";
  CHECK(result.ok());
  CHECK(result->decision.result == mojoup::policy::SandboxDecision::Result::kSandboxed);
  CHECK(result->exit_code == 7);
  CHECK(result->closed.errors.empty());

  absl::StatusOr<std::vector<mojoup::sandbox::SessionRecord>> sessions = node->Sessions();
  CHECK(sessions.ok());
  CHECK(sessions->empty());
  CHECK(backend.sandboxes().empty());

  std::cout << "harness: sandboxed, exit code 7, nothing left behind\n";
  return 0;
}

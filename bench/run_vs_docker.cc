// bench_run_vs_docker [--runs N] [--agent]
//
// 1. `mojoup-node run -- true` against `docker run --rm --network none IMAGE
//    true`, both as whole processes on the same daemon and image, alternating
//    runs; medians and their ratio (goal <= 1.1). With --agent the image is
//    the agent image (`mojoup-node image build`) and the command is a real
//    agent's start, `claude --version` (with --tool claude-code).
// 2. The session's phases through the library (SessionManager on the native
//    backend): start (record, staging, proxy, create), run (attach, start,
//    wait) and teardown (remove the container, stop the proxy, write back,
//    remove staging and record); medians.
//
// The image is the one the tests assemble (tests/support/make_sandbox_image.sh),
// or with --agent DefaultAgentImage(), which must be built already.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "mojoup/policy/decision.h"
#include "mojoup/probe/docker_api.h"
#include "mojoup/probe/kernel.h"
#include "mojoup/sandbox/agent_image.h"
#include "mojoup/sandbox/native_backend.h"
#include "mojoup/sandbox/session.h"
#include "timing.h"

namespace {

namespace fs = std::filesystem;
using mojoup::bench::Median;
using mojoup::bench::TimeOnce;
using Clock = std::chrono::steady_clock;

constexpr const char* kTestImage = "mojoup-test-sandbox:1";

double Ms(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// The command line: false (after saying how to call it) when it is wrong.
bool ParseArgs(int argc, char** argv, int& runs, bool& agent) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::max(5, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--agent") == 0) {
      agent = true;
    } else {
      std::cerr << "usage: bench_run_vs_docker [--runs N (>= 5)] [--agent]\n";
      return false;
    }
  }
  return true;
}

// Whether `image` is on the node's Docker: the agent image must be built
// already, the tests' image is assembled here. Says why not.
bool ImageReady(bool agent, const std::string& image) {
  int exit_code = 0;
  if (agent) {
    if (TimeOnce({"docker", "image", "inspect", image}, &exit_code) < 0 || exit_code != 0) {
      std::cerr << "bench: the agent image " << image
                << " is not on this node's Docker; build it with `mojoup-node image build`\n";
      return false;
    }
  } else if (TimeOnce({MOJOUP_SOURCE_DIR "/tests/support/make_sandbox_image.sh", kTestImage},
                      &exit_code) < 0 ||
             exit_code != 0) {
    std::cerr << "bench: cannot assemble the image " << kTestImage << "; is dockerd running?\n";
    return false;
  }
  return true;
}

// A temp dir with a git repository (repo/), a home and a node config
// running `image` natively, which the environment names; empty when it
// cannot be made.
std::string MakeDir(const std::string& image) {
  char dir_template[] = "/tmp/mojoup-bench-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return "";
  const std::string dir = fs::canonical(dir_template).string();
  const std::string repo = dir + "/repo";
  fs::create_directories(repo);
  if (std::system(("git init -q " + repo).c_str()) != 0) {
    std::cerr << "bench: cannot make a git repository at " << repo << "; is git installed?\n";
    return "";
  }
  fs::create_directories(dir + "/home");
  std::ofstream(dir + "/node.json") << fmt::format(
      R"({{"node.sandbox.engine": "docker", "node.sandbox.role": true,
          "node.sandbox.runtime": "native", "node.sandbox.image": "{}",
          "node.sandbox.allowed_users": "{}"}})",
      image, mojoup::policy::CurrentUserName());
  setenv("MOJOUP_NODE_CONFIG", (dir + "/node.json").c_str(), 1);
  setenv("MOJOUP_STATE_DIR", (dir + "/state").c_str(), 1);
  setenv("HOME", (dir + "/home").c_str(), 1);
  return dir;
}

// 1. Whole commands, alternating, after a warm-up run of each: false when
// that failed.
bool WholeCommands(const std::vector<std::string>& ours, const std::vector<std::string>& docker,
                   int runs, std::vector<double>& ours_ms, std::vector<double>& docker_ms) {
  int ours_exit = 0;
  int docker_exit = 0;
  TimeOnce(ours, &ours_exit);
  TimeOnce(docker, &docker_exit);
  if (ours_exit != 0 || docker_exit != 0) {
    std::cerr << "bench: a warm-up run failed (mojoup-node exit " << ours_exit
              << ", docker exit " << docker_exit << ")\n";
    return false;
  }
  for (int i = 0; i < runs; ++i) {
    ours_ms.push_back(TimeOnce(ours, &ours_exit));
    docker_ms.push_back(TimeOnce(docker, &docker_exit));
  }
  return true;
}

// The medians of a session's phases through the library.
struct Phases {
  std::vector<double> start_ms;
  std::vector<double> run_ms;
  std::vector<double> teardown_ms;
};

// 2. The phases, through the library (SessionManager on the native
// backend), `runs` times: false (and why said) when a session failed.
bool LibraryPhases(const std::string& cli, const std::string& dir, const std::string& image,
                   const std::vector<std::string>& command, bool agent, int runs, Phases& phases) {
  auto kernel = mojoup::probe::MakeSystemKernel();
  auto endpoint = mojoup::probe::ResolveDockerEndpoint(*kernel);
  if (!endpoint.ok()) {
    std::cerr << "bench: " << endpoint.status().message() << "\n";
    return false;
  }
  auto backend = mojoup::sandbox::MakeNativeBackend(*endpoint);
  mojoup::sandbox::SessionManagerOptions options;
  options.state_dir = dir + "/state";
  options.backend = backend.get();
  options.supervisor = mojoup::sandbox::FindSupervisor(cli);
  mojoup::sandbox::SessionManager manager(options);
  int null_fd = ::open("/dev/null", O_RDWR);
  for (int i = 0; i < runs; ++i) {
    mojoup::sandbox::SessionSpec spec;
    spec.user = mojoup::policy::CurrentUserName();
    spec.uid = getuid();
    spec.gid = getgid();
    spec.home = dir + "/home";
    spec.repo = dir + "/repo";
    spec.command = command;
    spec.image = image;
    if (agent) spec.tool = "claude-code";
    auto t0 = Clock::now();
    auto session = manager.Start(std::move(spec));
    auto t1 = Clock::now();
    if (!session.ok()) {
      std::cerr << "bench: " << session.status().message() << "\n";
      return false;
    }
    mojoup::sandbox::Stdio stdio;
    stdio.in = stdio.out = stdio.err = null_fd;
    auto code = (*session)->Run(stdio);
    auto t2 = Clock::now();
    auto closed = (*session)->Close();
    auto t3 = Clock::now();
    if (!code.ok() || *code != 0 || !closed.errors.empty()) {
      std::cerr << "bench: a library session failed\n";
      return false;
    }
    phases.start_ms.push_back(Ms(t0, t1));
    phases.run_ms.push_back(Ms(t1, t2));
    phases.teardown_ms.push_back(Ms(t2, t3));
  }
  ::close(null_fd);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 15;
  bool agent = false;
  if (!ParseArgs(argc, argv, runs, agent)) return 2;
  const std::string image = agent ? mojoup::sandbox::DefaultAgentImage() : kTestImage;
  const std::vector<std::string> command =
      agent ? std::vector<std::string>{"claude", "--version"} : std::vector<std::string>{"true"};
  const fs::path self = fs::canonical("/proc/self/exe");
  const std::string cli = (self.parent_path() / "mojoup-node").string();
  if (!ImageReady(agent, image)) return 1;
  const std::string dir = MakeDir(image);
  if (dir.empty()) return 1;

  std::vector<std::string> ours = {cli, "run", "--repo", dir + "/repo"};
  if (agent) ours.insert(ours.end(), {"--tool", "claude-code"});
  ours.push_back("--");
  ours.insert(ours.end(), command.begin(), command.end());
  std::vector<std::string> docker = {"docker", "run", "--rm", "--network", "none", image};
  docker.insert(docker.end(), command.begin(), command.end());
  std::vector<double> ours_ms;
  std::vector<double> docker_ms;
  if (!WholeCommands(ours, docker, runs, ours_ms, docker_ms)) {
    fs::remove_all(dir);
    return 1;
  }
  Phases phases;
  if (!LibraryPhases(cli, dir, image, command, agent, runs, phases)) return 1;
  fs::remove_all(dir);

  const double ours_median = Median(ours_ms);
  const double docker_median = Median(docker_ms);
  std::cout << fmt::format(
      "image {}, command `{}`, runs each: {}\n"
      "1. mojoup-node run -- COMMAND:                 {:7.1f} ms median\n"
      "   docker run --rm --network none IMAGE COMMAND:{:6.1f} ms median\n"
      "   ratio mojoup / docker:                      {:7.2f} (goal <= 1.1)\n"
      "2. one session through the library, medians:\n"
      "   start (record, staging, proxy, create):     {:7.1f} ms\n"
      "   run (attach, start, wait):                  {:7.1f} ms\n"
      "   teardown (remove, proxy, write-back, state):{:7.1f} ms\n",
      image, fmt::join(command, " "), runs, ours_median, docker_median, ours_median / docker_median,
      Median(phases.start_ms), Median(phases.run_ms), Median(phases.teardown_ms));
  return 0;
}

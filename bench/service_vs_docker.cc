// bench_service_vs_docker [--rounds N] [--sessions N]
//
// 1. N (20) concurrent sessions started through the sandbox service
//    (`mojoup-node run -- true` while `mojoup-node serve` answers) against N
//    concurrent `docker run --rm --network none IMAGE true`, on the same
//    daemon and image, and N concurrent foreground runs (no service), the
//    order rotating round by round; the median and the slowest of each, and
//    the ratios to docker (goal <= 1.1).
// 2. The service's own memory with N detached sessions live (VmRSS of the
//    serve process, and of its workers together), then what is left once
//    they are stopped, and the service's exit code after SIGTERM.
//
// The image is the one the tests assemble (tests/support/make_sandbox_image.sh).
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "fmt/format.h"
#include "mojoup/policy/decision.h"
#include "mojoup/sandbox/service.h"
#include "timing.h"

namespace {

namespace fs = std::filesystem;
using mojoup::bench::Median;
using mojoup::bench::TimeOnce;

constexpr const char* kTestImage = "mojoup-test-sandbox:5";

// Wall times of `count` runs of argv at once.
std::vector<double> AtOnce(const std::vector<std::string>& argv, int count, int& failures) {
  std::vector<double> times(static_cast<std::size_t>(count));
  std::vector<int> codes(static_cast<std::size_t>(count));
  std::vector<std::thread> threads;
  for (int i = 0; i < count; ++i) {
    threads.emplace_back([&, i] { times[i] = TimeOnce(argv, &codes[i]); });
  }
  for (std::thread& thread : threads) thread.join();
  for (int code : codes) failures += code != 0 ? 1 : 0;
  return times;
}

double Max(const std::vector<double>& values) {
  return values.empty() ? 0 : *std::max_element(values.begin(), values.end());
}

// VmRSS of `pid` in KiB; 0 when gone.
long RssKib(int pid) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

// The service's workers: children of `service` running __session-worker.
std::vector<int> Workers(int service) {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const std::size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    int ppid = 0;
    char state = 0;
    if (std::sscanf(line.c_str() + close + 2, "%c %d", &state, &ppid) != 2 || ppid != service) {
      continue;
    }
    std::ifstream cmdline(entry.path() / "cmdline");
    std::string args((std::istreambuf_iterator<char>(cmdline)), {});
    if (args.find("__session-worker") != std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

std::string Output(const std::string& command) {
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    while (std::size_t got = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, got);
    ::pclose(pipe);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3;
  int sessions = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--sessions") == 0 && i + 1 < argc) {
      sessions = std::max(1, std::atoi(argv[++i]));
    } else {
      std::cerr << "usage: bench_service_vs_docker [--rounds N] [--sessions N]\n";
      return 2;
    }
  }
  const fs::path self = fs::canonical("/proc/self/exe");
  const std::string cli = (self.parent_path() / "mojoup-node").string();
  int exit_code = 0;
  if (TimeOnce({MOJOUP_SOURCE_DIR "/tests/support/make_sandbox_image.sh", kTestImage},
               &exit_code) < 0 ||
      exit_code != 0) {
    std::cerr << "bench: cannot assemble the image " << kTestImage << "; is dockerd running?\n";
    return 1;
  }
  char dir_template[] = "/tmp/mojoup-bench-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return 1;
  const std::string dir = fs::canonical(dir_template).string();
  const std::string repo = dir + "/repo";
  const std::string state = dir + "/state";
  fs::create_directories(repo);
  fs::create_directory(state);
  fs::permissions(state, fs::perms::owner_all);
  if (std::system(("git init -q " + repo).c_str()) != 0) {
    std::cerr << "bench: cannot make a git repository at " << repo << "\n";
    return 1;
  }
  fs::create_directories(dir + "/home");
  std::ofstream(dir + "/node.json") << fmt::format(
      R"({{"node.sandbox.engine": "docker", "node.sandbox.role": true,
          "node.sandbox.runtime": "native", "node.sandbox.image": "{}",
          "node.sandbox.allowed_users": "{}", "node.service.max_sessions": "{}",
          "node.service.max_sessions_per_user": "{}"}})",
      kTestImage, mojoup::policy::CurrentUserName(), 2 * sessions, 2 * sessions);
  setenv("MOJOUP_NODE_CONFIG", (dir + "/node.json").c_str(), 1);
  setenv("MOJOUP_STATE_DIR", state.c_str(), 1);
  setenv("MOJOUP_SERVICE_SOCKET", (state + "/node.sock").c_str(), 1);
  setenv("HOME", (dir + "/home").c_str(), 1);

  // The service, its log to a file.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, (dir + "/serve.log").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> serve_args = {cli, "serve"};
  std::vector<char*> serve_argv;
  for (std::string& arg : serve_args) serve_argv.push_back(arg.data());
  serve_argv.push_back(nullptr);
  pid_t service = 0;
  if (posix_spawn(&service, cli.c_str(), &actions, nullptr, serve_argv.data(), environ) != 0) {
    std::cerr << "bench: cannot start mojoup-node serve\n";
    return 1;
  }
  posix_spawn_file_actions_destroy(&actions);
  bool up = false;
  for (int i = 0; i < 100 && !up; ++i) {
    up = mojoup::ServiceClient::Connect().ok();
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!up) {
    std::cerr << "bench: the service did not answer; see " << dir << "/serve.log\n";
    ::kill(service, SIGKILL);
    return 1;
  }

  // 1. Starts at once.
  const std::vector<std::string> ours = {cli, "run", "--repo", repo, "--", "true"};
  const std::vector<std::string> docker = {"docker", "run", "--rm", "--network", "none",
                                           kTestImage, "true"};
  int failures = 0;
  TimeOnce(ours, &exit_code);
  failures += exit_code != 0;
  TimeOnce(docker, &exit_code);
  failures += exit_code != 0;
  // The same run without the service (its socket named elsewhere), for
  // what the service itself adds.
  std::vector<std::string> alone = {"env", "MOJOUP_SERVICE_SOCKET=" + dir + "/none.sock"};
  alone.insert(alone.end(), ours.begin(), ours.end());
  std::vector<double> ours_ms, docker_ms, alone_ms;
  const std::vector<std::string>* peers[] = {&ours, &docker, &alone};
  std::vector<double>* results[] = {&ours_ms, &docker_ms, &alone_ms};
  for (int round = 0; round < rounds; ++round) {
    for (int turn = 0; turn < 3; ++turn) {
      const int which = (round + turn) % 3;
      std::vector<double> times = AtOnce(*peers[which], sessions, failures);
      results[which]->insert(results[which]->end(), times.begin(), times.end());
    }
  }

  // 2. Memory with the sessions live.
  std::vector<std::string> ids;
  for (int i = 0; i < sessions; ++i) {
    std::string id = Output(fmt::format("'{}' run --detach --repo '{}' -- sleep 120 2>/dev/null", cli,
                                        repo));
    while (!id.empty() && id.back() == '\n') id.pop_back();
    if (id.size() == 16) ids.push_back(id);
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double service_kib = static_cast<double>(RssKib(service));
  double workers_kib = 0;
  const std::vector<int> workers = Workers(service);
  for (int pid : workers) workers_kib += static_cast<double>(RssKib(pid));
  for (const std::string& id : ids) TimeOnce({cli, "stop", id}, &exit_code);
  ::kill(service, SIGTERM);
  int status = 0;
  ::waitpid(service, &status, 0);
  const std::string left = Output(
      fmt::format("docker ps -aq --filter label=mojoup.state={} | wc -l", state));
  std::size_t records = 0;
  std::error_code ec;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(state + "/sessions", ec)) {
    ++records;
  }
  fs::remove_all(dir);

  std::cout << fmt::format(
      "image {}, {} sessions at once, {} rounds, failed runs: {}\n"
      "1. through the service, mojoup-node run -- true:   median {:7.1f} ms, max {:7.1f} ms\n"
      "   docker run --rm --network none IMAGE true:       median {:7.1f} ms, max {:7.1f} ms\n"
      "   ratio service / docker:                          median {:5.2f}, max {:5.2f} (goal <= "
      "1.1)\n"
      "   foreground run, no service:                      median {:7.1f} ms, max {:7.1f} ms "
      "(ratio to docker {:.2f})\n"
      "2. with {} detached sessions live ({} workers): service RSS {:.1f} MiB, workers {:.1f} "
      "MiB in all ({:.1f} MiB each)\n"
      "   after stopping them: {} containers and {} session records left; service exit {}\n",
      kTestImage, sessions, rounds, failures, Median(ours_ms), Max(ours_ms), Median(docker_ms),
      Max(docker_ms), Median(ours_ms) / Median(docker_ms), Max(ours_ms) / Max(docker_ms),
      Median(alone_ms), Max(alone_ms), Median(alone_ms) / Median(docker_ms),
      ids.size(), workers.size(), service_kib / 1024.0, workers_kib / 1024.0,
      workers.empty() ? 0.0 : workers_kib / 1024.0 / static_cast<double>(workers.size()),
      std::atoi(left.c_str()), records, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  return failures == 0 ? 0 : 1;
}

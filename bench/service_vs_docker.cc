// bench_service_vs_docker [--rounds N] [--sessions N]
//
// 1. N (20) concurrent `mojoup-node run -- true` started through the sandbox
//    service (`mojoup-node serve` answering on $MOJOUP_SERVICE_SOCKET)
//    against N concurrent `docker run --rm --network none IMAGE true`, on the
//    same daemon and image, and N concurrent foreground runs (no service
//    answers), the order rotating round by round; each run's wall time, the
//    median and the slowest of each, and the ratios to docker (goal <= 1.1).
// 2. The service's own memory with N detached sessions (`run --detach --
//    sleep 30`) live: VmRSS of the serve process, and of its workers (its
//    children running __session-worker) together; then `stop --all`, and what
//    is left (containers labelled with this state directory, session records).
// 3. SIGTERM to the service, which drains and exits: its exit code.
//
// Everything lives in a private temp dir (config written with `mojoup-node
// config set`, state, socket, repository), removed at the end. The image is
// the one the tests assemble (tests/support/make_sandbox_image.sh).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include "fmt/format.h"
#include "mojoup/policy/decision.h"
#include "mojoup/service/client.h"
#include "mojoup/service/server.h"
#include "timing.h"

namespace {

namespace fs = std::filesystem;
using mojoup::bench::Median;
using mojoup::bench::TimeOnce;
using Clock = std::chrono::steady_clock;

// The tests' image (tests/support/sandbox_image.h, kSandboxImage).
constexpr const char* kTestImage = "mojoup-test-sandbox:8";

std::vector<char*> Argv(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  return argv;
}

// Runs argv with stdin on /dev/null, its stdout into `out` and its stderr
// appended to the file `err_path`; its exit code (128 + signal), -1 when it
// did not start.
int Capture(const std::vector<std::string>& args, const std::string& err_path, std::string& out) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0600);
  std::vector<char*> argv = Argv(args);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    return -1;
  }
  char buffer[4096];
  for (ssize_t got; (got = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) {
    out.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Wall times of `count` runs of argv at once; runs that failed (or did not
// start) are counted in `failures`.
std::vector<double> AtOnce(const std::vector<std::string>& argv, int count, int& failures) {
  std::vector<double> times(static_cast<std::size_t>(count));
  std::vector<int> codes(static_cast<std::size_t>(count));
  std::vector<std::thread> threads;
  for (int i = 0; i < count; ++i) {
    threads.emplace_back([&, i] { times[i] = TimeOnce(argv, &codes[i]); });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<double> ok;
  for (int i = 0; i < count; ++i) {
    if (codes[i] != 0 || times[i] < 0) {
      ++failures;
    } else {
      ok.push_back(times[i]);
    }
  }
  return ok;
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

// The service's workers: children of `service` whose cmdline has __session-worker.
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

// Containers labelled with this state directory (any state), as
// tests/support's Leftovers() counts them; -1 when docker did not answer.
int Containers(const std::string& state, const std::string& err_path) {
  std::string out;
  if (Capture({"docker", "ps", "-aq", "--filter", "label=mojoup.state=" + state}, err_path, out) !=
      0) {
    return -1;
  }
  return static_cast<int>(std::count(out.begin(), out.end(), '\n'));
}

// Entries left in the state's sessions/ directory.
int Records(const std::string& state) {
  int records = 0;
  std::error_code ec;
  for (fs::directory_iterator it(state + "/sessions", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++records;
  }
  return records;
}

// Waits up to `timeout` for `pid`; its exit code (128 + signal), or -1 when
// it is still running.
int WaitFor(pid_t pid, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (got < 0 || Clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// The bench's private temp dir and the files in it.
struct Dirs {
  std::string dir;
  std::string repo;
  std::string state;
  std::string socket;
  std::string serve_log;
  std::string cli_log;
};

// The command line: false (after saying how to call it) when it is wrong.
bool ParseArgs(int argc, char** argv, int& rounds, int& sessions) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--sessions") == 0 && i + 1 < argc) {
      sessions = std::max(1, std::atoi(argv[++i]));
    } else {
      std::cerr << "usage: bench_service_vs_docker [--rounds N] [--sessions N]\n";
      return false;
    }
  }
  return true;
}

// The temp dir with a git repository, a private state directory and a node
// config (written with `mojoup-node config set`) that lets `sessions` and
// more run at once; the environment names them. Nothing (the dir removed,
// and why said) when one of them cannot be made.
std::optional<Dirs> MakeDirs(const std::string& cli, int sessions) {
  char dir_template[] = "/tmp/mojoup-bench-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return std::nullopt;
  Dirs d;
  d.dir = fs::canonical(dir_template).string();
  d.repo = d.dir + "/repo";
  d.state = d.dir + "/state";
  d.socket = d.state + "/node.sock";
  d.serve_log = d.dir + "/serve.log";
  d.cli_log = d.dir + "/cli.log";
  fs::create_directories(d.repo);
  fs::create_directory(d.state);
  fs::permissions(d.state, fs::perms::owner_all);
  fs::create_directories(d.dir + "/home");
  if (std::system(("git init -q " + d.repo).c_str()) != 0) {
    std::cerr << "bench: cannot make a git repository at " << d.repo << "; is git installed?\n";
    fs::remove_all(d.dir);
    return std::nullopt;
  }
  setenv("MOJOUP_NODE_CONFIG", (d.dir + "/node.json").c_str(), 1);
  setenv("MOJOUP_STATE_DIR", d.state.c_str(), 1);
  setenv("MOJOUP_SERVICE_SOCKET", d.socket.c_str(), 1);
  setenv("HOME", (d.dir + "/home").c_str(), 1);
  const std::string limit = std::to_string(std::max(40, 2 * sessions));
  const std::vector<std::pair<std::string, std::string>> settings = {
      {"node.sandbox.engine", "docker"},
      {"node.sandbox.role", "true"},
      {"node.sandbox.runtime", "native"},
      {"node.sandbox.image", kTestImage},
      {"node.sandbox.allowed_users", mojoup::policy::CurrentUserName()},
      {"node.service.max_sessions", limit},
      {"node.service.max_sessions_per_user", limit},
  };
  for (const auto& [key, value] : settings) {
    std::string out;
    if (Capture({cli, "config", "set", key, value}, d.cli_log, out) != 0) {
      std::cerr << "bench: `mojoup-node config set " << key << " " << value << "` failed:\n"
                << Slurp(d.cli_log);
      fs::remove_all(d.dir);
      return std::nullopt;
    }
  }
  return d;
}

// `mojoup-node serve`, its stdout and stderr to serve.log; -1 when it did not start.
pid_t StartService(const std::string& cli, const Dirs& d) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, d.serve_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> serve_argv = Argv({cli, "serve"});
  pid_t service = 0;
  const int spawned =
      posix_spawn(&service, cli.c_str(), &actions, nullptr, serve_argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return spawned == 0 ? service : -1;
}

// Removes the containers labelled with the state directory.
void RemoveContainers(const std::string& state) {
  std::string ids;
  Capture({"docker", "ps", "-aq", "--filter", "label=mojoup.state=" + state}, "/dev/null", ids);
  if (!ids.empty()) std::system(("docker rm -f " + ids + " >/dev/null 2>&1").c_str());
}

// On a failure: what the service and the CLI said, the service and any
// sandboxes gone, the temp dir removed; the exit code, 1.
int Fail(const std::string& why, pid_t service, const Dirs& d) {
  std::cerr << "bench: " << why << "\n--- serve.log\n"
            << Slurp(d.serve_log) << "--- mojoup-node stderr\n"
            << Slurp(d.cli_log);
  ::kill(service, SIGTERM);
  if (WaitFor(service, std::chrono::seconds(30)) < 0) {
    ::kill(service, SIGKILL);
    ::waitpid(service, nullptr, 0);
  }
  RemoveContainers(d.state);
  fs::remove_all(d.dir);
  return 1;
}

double MillisecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// 1. Starts at once, round by round in rotating order: through the service
// (0), docker (1), and foreground without it (2: the socket named where
// nothing answers).
struct Starts {
  std::vector<double> results[3];
  int failures[3] = {0, 0, 0};
  std::string error;  // why the phase stopped short
};
Starts StartsAtOnce(const std::string& cli, const Dirs& d, int rounds, int sessions) {
  const std::vector<std::string> command = {"true"};
  std::vector<std::string> ours = {cli, "run", "--repo", d.repo, "--"};
  ours.insert(ours.end(), command.begin(), command.end());
  std::vector<std::string> docker = {"docker", "run", "--rm", "--network", "none", kTestImage};
  docker.insert(docker.end(), command.begin(), command.end());
  std::vector<std::string> alone = {"env", "MOJOUP_SERVICE_SOCKET=" + d.dir + "/none.sock"};
  alone.insert(alone.end(), ours.begin(), ours.end());
  const std::vector<std::string>* peers[] = {&ours, &docker, &alone};
  Starts starts;
  int warm_failures = 0;
  for (const auto* peer : peers) AtOnce(*peer, 1, warm_failures);
  if (warm_failures != 0) {
    starts.error = "a warm-up run failed";
    return starts;
  }
  for (int round = 0; round < rounds; ++round) {
    for (int turn = 0; turn < 3; ++turn) {
      const int which = (round + turn) % 3;
      std::vector<double> times = AtOnce(*peers[which], sessions, starts.failures[which]);
      starts.results[which].insert(starts.results[which].end(), times.begin(), times.end());
      if (which == 0 && !mojoup::ServiceClient::Connect(d.socket).ok()) {
        starts.error = "the service stopped answering during round " + std::to_string(round + 1);
        return starts;
      }
    }
  }
  return starts;
}

// 2. Memory with `sessions` detached sessions live, then `stop --all` and
// what it left.
struct Memory {
  std::size_t started = 0;
  int detach_failures = 0;
  double detach_ms = 0;
  std::size_t running = 0;
  double running_ms = 0;
  double service_kib = 0;
  std::size_t workers = 0;
  double workers_kib = 0;
  int live_containers = 0;
  int stop_code = 0;
  int stopped = 0;
  double stop_ms = 0;
  int left_containers = 0;
  int left_records = 0;
  int left_workers = 0;
  std::string error;  // why the phase stopped short
};
Memory MemoryLive(const std::string& cli, const Dirs& d, pid_t service, int sessions) {
  Memory m;
  std::vector<std::string> detach = {cli, "run", "--detach", "--repo", d.repo, "--", "sleep", "30"};
  const auto detach_t0 = Clock::now();
  for (int i = 0; i < sessions; ++i) {
    std::string id;
    const int code = Capture(detach, d.cli_log, id);
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    if (code != 0 || id.empty()) {
      ++m.detach_failures;
    } else {
      ++m.started;
    }
  }
  m.detach_ms = MillisecondsSince(detach_t0);
  // Until every session runs (or 25 s; they sleep 30).
  const auto wait_t0 = Clock::now();
  for (;;) {
    auto client = mojoup::ServiceClient::Connect(d.socket);
    if (!client.ok()) {
      m.error = "the service stopped answering with sessions detached";
      return m;
    }
    auto listed = client->Sessions();
    m.running = 0;
    if (listed.ok()) {
      for (const mojoup::ServiceSession& s : *listed) m.running += s.state == "running" ? 1 : 0;
    }
    if (m.running >= m.started || Clock::now() - wait_t0 > std::chrono::seconds(25)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  m.running_ms = MillisecondsSince(detach_t0);
  m.service_kib = static_cast<double>(RssKib(service));
  const std::vector<int> workers = Workers(service);
  m.workers = workers.size();
  for (int pid : workers) m.workers_kib += static_cast<double>(RssKib(pid));
  m.live_containers = Containers(d.state, d.cli_log);
  std::string stop_out;
  const auto stop_t0 = Clock::now();
  m.stop_code = Capture({cli, "stop", "--all"}, d.cli_log, stop_out);
  m.stop_ms = MillisecondsSince(stop_t0);
  m.stopped = static_cast<int>(std::count(stop_out.begin(), stop_out.end(), '\n'));
  m.left_containers = Containers(d.state, d.cli_log);
  m.left_records = Records(d.state);
  m.left_workers = static_cast<int>(Workers(service).size());
  return m;
}

// 3. SIGTERM: the service drains and exits (or is killed after 60 s).
struct Drain {
  int service_exit = 0;
  double term_ms = 0;
  bool hung = false;
  int after_containers = 0;
  int after_records = 0;
};
Drain DrainService(pid_t service, const Dirs& d) {
  Drain drain;
  ::kill(service, SIGTERM);
  const auto term_t0 = Clock::now();
  drain.service_exit = WaitFor(service, std::chrono::seconds(60));
  drain.term_ms = MillisecondsSince(term_t0);
  drain.hung = drain.service_exit < 0;
  if (drain.hung) {
    ::kill(service, SIGKILL);
    ::waitpid(service, nullptr, 0);
  }
  drain.after_containers = Containers(d.state, d.cli_log);
  drain.after_records = Records(d.state);
  return drain;
}

// The report on stdout; true when something failed or was left behind.
bool Report(int rounds, int sessions, double serve_up_ms, const Starts& s, const Memory& m,
            const Drain& drain) {
  const int leftovers = std::max(0, m.left_containers) + m.left_records;
  const double ours_median = Median(s.results[0]);
  const double docker_median = Median(s.results[1]);
  const double alone_median = Median(s.results[2]);
  std::cout << fmt::format(
      "image {}, command `true`, {} sessions at once, rounds: {} (order rotating), service up in "
      "{:.0f} ms\n"
      "1. mojoup-node run -- COMMAND, through the service: {:7.1f} ms median, {:7.1f} ms max "
      "({} failed)\n"
      "   docker run --rm --network none IMAGE COMMAND:    {:7.1f} ms median, {:7.1f} ms max "
      "({} failed)\n"
      "   ratio service / docker:                          {:7.2f} median, {:7.2f} max (goal "
      "<= 1.1)\n"
      "   mojoup-node run -- COMMAND, no service:          {:7.1f} ms median, {:7.1f} ms max "
      "({} failed; ratio to docker {:.2f} median, {:.2f} max)\n"
      "2. {} x run --detach -- sleep 30: {} started ({} failed) in {:.0f} ms, {} running after "
      "{:.0f} ms, {} containers\n"
      "   service RSS (VmRSS of serve):                    {:7.1f} MiB\n"
      "   workers' RSS ({} __session-worker children):     {:7.1f} MiB in all, {:.1f} MiB each\n"
      "   stop --all: exit {}, {} stopped, {:.0f} ms\n"
      "   leftovers: {} ({} containers labelled mojoup.state, {} session records, {} workers)\n"
      "3. SIGTERM: service exit {} after {:.0f} ms{}; leftovers after it: {} containers, {} "
      "records\n",
      kTestImage, sessions, rounds, serve_up_ms, ours_median, Max(s.results[0]), s.failures[0],
      docker_median, Max(s.results[1]), s.failures[1], ours_median / docker_median,
      Max(s.results[0]) / Max(s.results[1]), alone_median, Max(s.results[2]), s.failures[2],
      alone_median / docker_median, Max(s.results[2]) / Max(s.results[1]), sessions, m.started,
      m.detach_failures, m.detach_ms, m.running, m.running_ms, m.live_containers,
      m.service_kib / 1024.0, m.workers, m.workers_kib / 1024.0,
      m.workers == 0 ? 0.0 : m.workers_kib / 1024.0 / static_cast<double>(m.workers), m.stop_code,
      m.stopped, m.stop_ms, leftovers, m.left_containers, m.left_records, m.left_workers,
      drain.hung ? "none (killed)" : std::to_string(drain.service_exit), drain.term_ms,
      drain.hung ? ", did not exit within 60 s" : "", drain.after_containers, drain.after_records);
  return s.failures[0] + s.failures[1] + s.failures[2] + m.detach_failures != 0 ||
         m.stop_code != 0 || leftovers != 0 || m.left_workers != 0 || drain.service_exit != 0 ||
         drain.after_containers != 0 || drain.after_records != 0;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3;
  int sessions = 20;
  if (!ParseArgs(argc, argv, rounds, sessions)) return 2;
  const fs::path self = fs::canonical("/proc/self/exe");
  const std::string cli = (self.parent_path() / "mojoup-node").string();
  int exit_code = 0;
  if (TimeOnce({MOJOUP_SOURCE_DIR "/tests/support/make_sandbox_image.sh", kTestImage}, &exit_code) <
          0 ||
      exit_code != 0) {
    std::cerr << "bench: cannot assemble the image " << kTestImage << "; is dockerd running?\n";
    return 1;
  }
  const std::optional<Dirs> dirs = MakeDirs(cli, sessions);
  if (!dirs) return 1;
  const Dirs& d = *dirs;
  const pid_t service = StartService(cli, d);
  if (service < 0) {
    std::cerr << "bench: cannot start mojoup-node serve\n";
    fs::remove_all(d.dir);
    return 1;
  }
  bool up = false;
  const auto serve_t0 = Clock::now();
  while (!up && Clock::now() - serve_t0 < std::chrono::seconds(20)) {
    up = mojoup::ServiceClient::Connect(d.socket).ok();
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!up) return Fail("the service did not answer on " + d.socket + " within 20 s", service, d);
  const double serve_up_ms = MillisecondsSince(serve_t0);

  const Starts starts = StartsAtOnce(cli, d, rounds, sessions);
  if (!starts.error.empty()) return Fail(starts.error, service, d);
  const Memory memory = MemoryLive(cli, d, service, sessions);
  if (!memory.error.empty()) return Fail(memory.error, service, d);
  const Drain drain = DrainService(service, d);
  const std::string serve_text = Slurp(d.serve_log);
  const std::string cli_text = Slurp(d.cli_log);
  if (drain.after_containers > 0) RemoveContainers(d.state);
  fs::remove_all(d.dir);

  const bool bad = Report(rounds, sessions, serve_up_ms, starts, memory, drain);
  if (bad) {
    std::cerr << "--- serve.log\n" << serve_text << "--- mojoup-node stderr\n" << cli_text;
  }
  return bad ? 1 : 0;
}

// The sandbox service (`mojoup-node serve`) as its users meet it: normal
// users in the docker group with repositories under $HOME, on the real
// dockerd, with no XDG_RUNTIME_DIR. Each case starts its own service.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "../support/background_process.h"
#include "../support/echo_server.h"
#include "../support/real_user.h"
#include "../support/signin_files.h"
#include "../support/system_service.h"
#include "../support/test_support.h"
#include "fmt/format.h"

namespace fs = std::filesystem;
using mojoup::test::BackgroundProcess;
using mojoup::test::Described;
using mojoup::test::RealUser;
using mojoup::test::Run;
using mojoup::test::RunWithEnv;
using mojoup::test::UserNode;

namespace {

bool HasProgram(const std::string& name) {
  return RunWithEnv({}, {"sh", "-c", "command -v " + name}).result.exit_code == 0;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A service of the user's own, for `node`: its socket is <state>/node.sock,
// where the user's `run` looks first.
class UserService {
 public:
  explicit UserService(const UserNode& node, const std::vector<std::string>& extra = {})
      : node_(node) {
    std::vector<std::string> env = node.env;
    env.insert(env.end(), extra.begin(), extra.end());
    std::vector<std::string> argv = node.user.Prefix(env, node.repo);
    argv.push_back(node.user.bin + "/mojoup-node");
    argv.push_back("serve");
    process_ = std::make_unique<BackgroundProcess>(std::vector<std::string>{}, argv);
    WaitReady();
  }

  void WaitReady() {
    for (int i = 0; i < 100; ++i) {
      if (node_.Cli({"service", "node"}).result.exit_code == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL("the service did not answer: " << process_->Stderr());
  }
  BackgroundProcess& process() { return *process_; }
  std::string Log() { return process_->Stderr(); }

 private:
  const UserNode& node_;
  std::unique_ptr<BackgroundProcess> process_;
};

// What `attach` and `run` print and return, for comparing both ways.
struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome Of(const Run& run) { return {run.result.exit_code, run.result.out, run.result.err}; }

// Lines of `text` that are not the node's own notices ("mojoup-node: ...").
std::string CommandErr(const std::string& text) {
  std::string kept;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (line.rfind("mojoup-node", 0) != 0) kept += line + "\n";
    start = end + 1;
  }
  return kept;
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

}  // namespace

TEST_CASE("run through the user's service ends as foreground run does", "[service]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  const std::vector<std::string> scripts = {
      "echo out; echo err >&2; exit 3",
      "read line; echo got:$line",
      "kill -TERM $$",
      "test -d \"$PWD\" && pwd",
  };
  std::vector<Outcome> foreground;
  for (const std::string& script : scripts) {
    foreground.push_back(Of(node.Cli({"run", "--", "/bin/sh", "-c", "echo hi | true; " + script},
                                     {}, std::chrono::seconds(90))));
  }
  UserService service(node);
  for (std::size_t i = 0; i < scripts.size(); ++i) {
    INFO(scripts[i]);
    // stdin: `read` gets what the caller's stdin holds, then its end.
    Run through = node.Cli({"run", "--", "/bin/sh", "-c", "echo hi | true; " + scripts[i]});
    INFO(Described(through));
    CHECK(through.result.exit_code == foreground[i].code);
    CHECK(through.result.out == foreground[i].out);
    CHECK(CommandErr(through.result.err) == CommandErr(foreground[i].err));
  }
  // From inside a session the service is out of reach: its socket is not
  // in the sandbox, so a session cannot start, steer or attach to others.
  Run inside = node.Cli({"run", "--", "/bin/sh", "-c",
                         "if [ -e " + node.state + "/node.sock ] || [ -e /run/mojoup/node.sock ]; "
                         "then echo reachable; else echo absent; fi"});
  CHECK(inside.result.out == "absent\n");
  // It did go through the service: the service's log says nothing of a
  // foreground run, and a detached session lists there.
  Run detached = node.Cli({"run", "--detach", "--", "/bin/sh", "-c", "sleep 2"});
  REQUIRE(detached.result.exit_code == 0);
  Run listed = node.Cli({"service", "sessions"});
  CHECK(Contains(listed.result.out, Trimmed(detached.result.out)));
  CHECK(node.Cli({"attach", Trimmed(detached.result.out)}).result.exit_code == 0);
  CHECK(service.process().Stop(std::chrono::seconds(30)) == 0);
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("a signal to run through the service reaches the command, and a terminal is one",
          "[service]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  if (!HasProgram("script")) MOJOUP_SKIP("needs script(1) (bsdutils)");
  UserNode node(*user);
  UserService service(node);
  // SIGTERM to run: the command ends of it, 143 as in the foreground.
  std::vector<std::string> argv = user->Prefix(node.env, node.repo);
  argv.insert(argv.end(),
              {user->bin + "/mojoup-node", "run", "--", "/bin/sh", "-c",
               "trap 'echo trapped; exit 42' TERM; echo ready; while :; do sleep 0.1; done"});
  BackgroundProcess run({}, argv);
  auto ready = run.ReadLine(std::chrono::seconds(60));
  REQUIRE(ready == std::optional<std::string>("ready"));
  ::kill(run.pid(), SIGTERM);
  auto trapped = run.ReadLine(std::chrono::seconds(30));
  CHECK(trapped == std::optional<std::string>("trapped"));
  const int status = run.Stop(std::chrono::seconds(30));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 42);
  // Under a terminal, the session has one.
  const std::string inner = user->bin +
                            "/mojoup-node run -- /bin/sh -c 'test -t 0 && test -t 1 && echo "
                            "on-a-tty; stty size'";
  Run tty = user->As({"script", "-qec", inner, "/dev/null"}, node.env, std::chrono::seconds(90),
                     node.repo);
  INFO(Described(tty));
  CHECK(Contains(tty.result.out, "on-a-tty"));
  CHECK(service.process().Stop(std::chrono::seconds(30)) == 0);
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("a detached session runs without its client and attach gets its output", "[service]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  UserService service(node);
  Run detached = node.Cli(
      {"run", "--detach", "--", "/bin/sh", "-c", "echo early; sleep 2; echo late >&2; exit 9"});
  INFO(Described(detached));
  REQUIRE(detached.result.exit_code == 0);
  const std::string id = Trimmed(detached.result.out);
  REQUIRE(id.size() == 16);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // No client was attached: "early" is in the scrollback.
  Run attached = node.Cli({"attach", id});
  CHECK(attached.result.exit_code == 9);
  CHECK(attached.result.out == "early\n");
  CHECK(Contains(attached.result.err, "late"));
  // Ended: nothing to attach to, and it says so.
  Run again = node.Cli({"attach", id});
  CHECK(again.result.exit_code == 1);
  CHECK(Contains(again.result.err, "no running session"));
  // SIGTERM or SIGHUP to attach detaches; the session runs on.
  Run slow =
      node.Cli({"run", "--detach", "--", "/bin/sh", "-c", "echo before; sleep 3; echo after"});
  REQUIRE(slow.result.exit_code == 0);
  const std::string slow_id = Trimmed(slow.result.out);
  std::vector<std::string> argv = user->Prefix(node.env, node.repo);
  argv.insert(argv.end(), {user->bin + "/mojoup-node", "attach", slow_id});
  BackgroundProcess watching({}, argv);
  CHECK(watching.ReadLine(std::chrono::seconds(30)) == std::optional<std::string>("before"));
  ::kill(watching.pid(), SIGTERM);
  const std::optional<int> left = watching.Wait(std::chrono::seconds(30));
  REQUIRE(left.has_value());
  CHECK(WIFEXITED(*left));
  CHECK(WEXITSTATUS(*left) == 0);
  CHECK(Contains(watching.Stderr(), "detached from " + slow_id));
  Run rest = node.Cli({"attach", slow_id});
  CHECK(rest.result.exit_code == 0);
  CHECK(Contains(rest.result.out, "after"));
  // --detach with no service says how to get one.
  CHECK(service.process().Stop(std::chrono::seconds(30)) == 0);
  Run without = node.Cli({"run", "--detach", "--", "true"});
  CHECK(without.result.exit_code == 1);
  CHECK(Contains(without.result.err, "mojoup-node serve"));
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("a credential reaches a session through the service from its client alone", "[service]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  // The service, and so its workers, never had the key: only the client has.
  UserService service(node);
  const std::string real = "tk-live-REALKEY0123456789abcdefghijklmnopqrstuvwxyz";
  Run detached = node.Cli({"run", "--detach", "--credential", "TEST_KEY=api.example.com", "--",
                           "/bin/sh", "-c", "echo \"stand-in:$TEST_KEY\"; sleep 2"},
                          {"TEST_KEY=" + real});
  INFO(Described(detached));
  REQUIRE(detached.result.exit_code == 0);
  const std::string id = Trimmed(detached.result.out);
  REQUIRE(id.size() == 16);
  Run attached = node.Cli({"attach", id});
  INFO(Described(attached));
  CHECK(attached.result.exit_code == 0);
  CHECK(Contains(attached.result.out, "stand-in:tk-live-"));
  CHECK_FALSE(Contains(attached.result.out, real));
  CHECK(service.process().Stop(std::chrono::seconds(30)) == 0);
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("the service's limits refuse at once, each in one sentence", "[service]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  REQUIRE(node.Cli({"config", "set", "node.service.max_sessions", "1"}).result.exit_code == 0);
  {
    UserService service(node);
    Run first = node.Cli({"run", "--detach", "--", "sleep", "30"});
    REQUIRE(first.result.exit_code == 0);
    Run second = node.Cli({"run", "--detach", "--", "true"});
    CHECK(second.result.exit_code == 1);
    CHECK(Contains(second.result.err, "node.service.max_sessions"));
    CHECK(node.Cli({"stop", Trimmed(first.result.out)}).result.exit_code == 0);
    CHECK(service.process().Stop(std::chrono::seconds(30)) == 0);
  }
  REQUIRE(node.Cli({"config", "unset", "node.service.max_sessions"}).result.exit_code == 0);
  REQUIRE(
      node.Cli({"config", "set", "node.service.min_free_disk_mb", "10000000"}).result.exit_code ==
      0);
  {
    UserService service(node);
    Run refused = node.Cli({"run", "--detach", "--", "true"});
    CHECK(refused.result.exit_code == 1);
    CHECK(Contains(refused.result.err, "MiB are free on"));
    CHECK(Contains(refused.result.err, "node.service.min_free_disk_mb"));
    CHECK(service.process().Stop(std::chrono::seconds(30)) == 0);
  }
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("drain lets running sessions finish, then the service exits 0", "[service]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  // Each session stages the user's codex sign-in, as stand-ins.
  const std::string home = node.root + "/home";
  const std::string auth = home + "/.codex/auth.json";
  const std::string mine = mojoup::test::CodexAuth("ada", 1);
  user->Write(auth, mine, 0600);
  const std::vector<std::string> with_home = {"HOME=" + home};
  UserService service(node, with_home);
  for (int i = 0; i < 3; ++i) {
    Run detached = node.Cli(
        {"run", "--detach", "--tool", "codex", "--", "/bin/sh", "-c",
         "sleep 3; if grep -q 'rt_ada-1\"' $HOME/.codex/auth.json; then echo real; "
         "elif grep -q rt_ada- $HOME/.codex/auth.json; then echo stand-in; else echo none; fi >> " +
             node.repo + "/drained"},
        with_home);
    INFO(Described(detached));
    REQUIRE(detached.result.exit_code == 0);
  }
  Run drain = node.Cli({"service", "drain"});
  CHECK(drain.result.exit_code == 0);
  // No new session while draining.
  Run refused = node.Cli({"run", "--detach", "--", "true"});
  CHECK(refused.result.exit_code == 1);
  CHECK(Contains(refused.result.err, "draining"));
  // It exits by itself once they are done.
  const std::optional<int> status = service.process().Wait(std::chrono::seconds(60));
  REQUIRE(status.has_value());
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
  std::ifstream drained(node.repo + "/drained");
  std::string all((std::istreambuf_iterator<char>(drained)), {});
  CHECK(all == "stand-in\nstand-in\nstand-in\n");  // every session finished its work
  // The sign-in is the user's still, and nothing of the sessions is left.
  std::ifstream kept(auth);
  CHECK(std::string((std::istreambuf_iterator<char>(kept)), {}) == mine);
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("drain past its timeout stops the sessions as stop does", "[service]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  REQUIRE(node.Cli({"config", "set", "node.service.drain_timeout", "1"}).result.exit_code == 0);
  UserService service(node);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(node.Cli({"run", "--detach", "--", "sleep", "300"}).result.exit_code == 0);
  }
  ::kill(service.process().pid(), SIGTERM);
  const auto began = std::chrono::steady_clock::now();
  const std::optional<int> status = service.process().Wait(std::chrono::seconds(60));
  REQUIRE(status.has_value());
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
  CHECK(std::chrono::steady_clock::now() - began < std::chrono::seconds(45));
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("a second SIGTERM stops the sessions without waiting out the drain", "[service]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  UserService service(node);  // the default drain_timeout: 300 s
  for (int i = 0; i < 2; ++i) {
    REQUIRE(node.Cli({"run", "--detach", "--", "sleep", "300"}).result.exit_code == 0);
  }
  ::kill(service.process().pid(), SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(!service.process().Wait(std::chrono::seconds(2)).has_value());  // draining, waiting
  ::kill(service.process().pid(), SIGTERM);
  const std::optional<int> status = service.process().Wait(std::chrono::seconds(45));
  REQUIRE(status.has_value());
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
  CHECK(Contains(service.Log(), "again: stopping 2 session(s) now"));
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("a service killed mid-session and started again loses nothing and leaves nothing",
          "[service]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  auto service = std::make_unique<UserService>(node);
  Run kept = node.Cli({"run", "--detach", "--", "/bin/sh", "-c", "sleep 4; echo survived; exit 6"});
  REQUIRE(kept.result.exit_code == 0);
  Run orphan = node.Cli({"run", "--detach", "--", "sleep", "300"});
  REQUIRE(orphan.result.exit_code == 0);
  // The orphan's worker dies with the service: its sandbox must not stay.
  Run workers = RunWithEnv(
      {}, {"pgrep", "-P", std::to_string(service->process().pid()), "-f", "__session-worker"});
  ::kill(service->process().pid(), SIGKILL);
  service->process().Stop();
  std::vector<int> pids;
  std::istringstream lines(workers.result.out);
  for (int pid; lines >> pid;) pids.push_back(pid);
  REQUIRE(pids.size() == 2);
  // The worker of the second session is the younger one.
  ::kill(*std::max_element(pids.begin(), pids.end()), SIGKILL);
  service = std::make_unique<UserService>(node);
  Run attached = node.Cli({"attach", Trimmed(kept.result.out)});
  CHECK(attached.result.exit_code == 6);
  CHECK(Contains(attached.result.out, "survived"));
  CHECK(Contains(service->Log(), "taken back after a restart"));
  for (int i = 0; i < 100 && node.Leftovers() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  CHECK(service->process().Stop(std::chrono::seconds(30)) == 0);
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("the verdict follows Docker going away and coming back", "[service]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  const std::string link = node.root + "/docker.sock";
  REQUIRE(::symlink("/var/run/docker.sock", link.c_str()) == 0);
  UserService service(node, {"DOCKER_HOST=unix://" + link});
  CHECK(Contains(node.Cli({"service", "node"}).result.out, "\"can_sandbox\":true"));
  ::unlink(link.c_str());
  ::kill(service.process().pid(), SIGHUP);
  std::string answer;
  for (int i = 0; i < 100; ++i) {
    answer = node.Cli({"service", "node"}).result.out;
    if (Contains(answer, "\"can_sandbox\":false")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  CHECK(Contains(answer, "This machine cannot sandbox agents"));
  CHECK(Contains(answer, "\"failing_check\":\"docker.daemon\""));
  Run refused = node.Cli({"run", "--detach", "--", "true"});
  CHECK(refused.result.exit_code == 1);
  CHECK(Contains(refused.result.err, "This machine cannot sandbox agents"));
  REQUIRE(::symlink("/var/run/docker.sock", link.c_str()) == 0);
  ::kill(service.process().pid(), SIGHUP);
  for (int i = 0; i < 100; ++i) {
    answer = node.Cli({"service", "node"}).result.out;
    if (Contains(answer, "\"can_sandbox\":true")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  CHECK(Contains(answer, "Agents run in a sandbox."));
  CHECK(service.process().Stop(std::chrono::seconds(30)) == 0);
}

TEST_CASE("/metrics is Prometheus's text format, as promtool reads it", "[service]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  if (!HasProgram("promtool")) MOJOUP_SKIP("needs promtool (Debian: prometheus)");
  UserNode node(*user);
  const int port = 20000 + static_cast<int>(::getpid() % 20000);
  const std::string listen = "127.0.0.1:" + std::to_string(port);
  REQUIRE(node.Cli({"config", "set", "node.service.metrics_listen", listen}).result.exit_code == 0);
  REQUIRE(node.Cli({"config", "set", "node.service.max_sessions", "1"}).result.exit_code == 0);
  UserService service(node);
  Run first = node.Cli({"run", "--", "true"});
  INFO(Described(first) << service.Log());
  CHECK(first.result.exit_code == 0);
  Run held = node.Cli({"run", "--detach", "--", "sleep", "30"});
  REQUIRE(held.result.exit_code == 0);
  CHECK(node.Cli({"run", "--detach", "--", "true"}).result.exit_code == 1);  // refused
  Run metrics = RunWithEnv({}, {"curl", "-sf", "http://" + listen + "/metrics"});
  REQUIRE(metrics.result.exit_code == 0);
  CHECK(Contains(metrics.result.out, "mojoup_sessions_started_total 2"));
  CHECK(Contains(metrics.result.out, "mojoup_session_refusals_total{reason=\"max_sessions\"} 1"));
  CHECK(Contains(metrics.result.out, "mojoup_sessions{state=\"running\""));
  CHECK(Contains(metrics.result.out, "mojoup_can_sandbox{failing_check=\"\"} 1"));
  CHECK(Contains(metrics.result.out, "mojoup_session_start_seconds_bucket{le=\"+Inf\"} 2"));
  const std::string file = node.root + "/metrics.txt";
  std::ofstream(file) << metrics.result.out;
  Run checked = RunWithEnv({}, {"sh", "-c", "promtool check metrics < " + file});
  INFO(Described(checked));
  CHECK(checked.result.exit_code == 0);
  CHECK(RunWithEnv({}, {"curl", "-sf", "http://" + listen + "/readyz"}).result.out == "ready\n");
  CHECK(Contains(RunWithEnv({}, {"curl", "-sf", "http://" + listen + "/status.json"}).result.out,
                 "\"schema\":\"mojoup.status/v1\""));
  CHECK(node.Cli({"stop", Trimmed(held.result.out)}).result.exit_code == 0);
  CHECK(service.process().Stop(std::chrono::seconds(30)) == 0);
}

// A body the service will not read is an answer in one sentence, 400 or 413,
// never a crash or a dropped connection; the service goes on.
TEST_CASE("a body too deep or too large is refused in one sentence and the service goes on",
          "[service]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  if (!HasProgram("curl")) MOJOUP_SKIP("needs curl");
  UserNode node(*user);
  UserService service(node);
  const std::string socket = node.state + "/node.sock";
  // `bytes` of `fill`, posted by the user's curl: the body, then the status.
  auto post = [&](std::size_t bytes, char fill, const std::string& headers) {
    const std::string script = fmt::format(
        "head -c {} /dev/zero | tr '\\0' '{}' | curl -sS --max-time 60 --unix-socket {} {} "
        "-H 'Content-Type: application/json' --data-binary @- -w '\\n%{{http_code}}' "
        "http://mojoup-node/v1/sessions",
        bytes, fill, socket, headers);
    Run run = node.user.As({"sh", "-c", script});
    INFO(Described(run) << service.Log());
    REQUIRE(run.result.exit_code == 0);
    const std::string out = Trimmed(run.result.out);
    const std::size_t last = out.rfind('\n');
    REQUIRE(last != std::string::npos);
    return std::pair{std::stoi(out.substr(last + 1)), out.substr(0, last)};
  };
  auto [deep_status, deep_body] = post(1000000, '[', "");
  CHECK(deep_status == 400);
  CHECK(Contains(deep_body, "\"error\":\"the start request nests deeper than 64 levels\""));
  auto [long_status, long_body] = post(64 << 20, 'x', "");
  CHECK(long_status == 413);
  CHECK(Contains(long_body, "\"error\":\"the request body is larger than the 1048576 bytes"));
  // Chunked, the limit is passed mid-body, with the client still sending.
  auto [chunked_status, chunked_body] = post(8 << 20, 'x', "-H 'Transfer-Encoding: chunked'");
  CHECK(chunked_status == 413);
  CHECK(Contains(chunked_body, "\"reason\":\"too_large\""));
  Run after = node.Cli({"service", "node"});
  INFO(Described(after) << service.Log());
  CHECK(after.result.exit_code == 0);
  CHECK(service.process().Stop(std::chrono::seconds(30)) == 0);
}

// The system service: root, serving several users, each session as its user.
TEST_CASE("the system service runs each user's sessions as that user, apart", "[service]") {
  MOJOUP_REQUIRE_SYSTEM_SERVICE_USERS(alice, bob, outsider);
  mojoup::test::SystemService system(*alice, alice->name + "," + bob->name);
  BackgroundProcess& service = *system.process;
  UserNode alice_node(*alice), bob_node(*bob);
  const std::vector<std::string> env = system.env;
  const std::string dir = system.dir;
  Run a = alice_node.Cli({"run", "--detach", "--", "/bin/sh", "-c", "id -u; sleep 3"}, env);
  Run b = bob_node.Cli({"run", "--detach", "--", "/bin/sh", "-c", "id -u; sleep 3"}, env);
  INFO(Described(a) << Described(b) << service.Stderr());
  REQUIRE(a.result.exit_code == 0);
  REQUIRE(b.result.exit_code == 0);
  const std::string a_id = Trimmed(a.result.out), b_id = Trimmed(b.result.out);
  // Each is refused the other's session.
  Run steal = alice_node.Cli({"attach", b_id}, env);
  CHECK(steal.result.exit_code == 1);
  CHECK(Contains(steal.result.err, "no session " + b_id + " of yours"));
  Run stop = bob_node.Cli({"stop", a_id}, env);
  CHECK(stop.result.exit_code != 0);
  CHECK(!Contains(bob_node.Cli({"service", "sessions"}, env).result.out, a_id));
  // Each session ran as its own user; both attached at once.
  Run mine, theirs;
  std::thread attach_a([&] { mine = alice_node.Cli({"attach", a_id}, env); });
  theirs = bob_node.Cli({"attach", b_id}, env);
  attach_a.join();
  CHECK(Trimmed(mine.result.out) == std::to_string(alice->uid));
  CHECK(Trimmed(theirs.result.out) == std::to_string(bob->uid));
  // A user outside node.sandbox.allowed_users is refused in one sentence.
  Run outside = outsider->As({dir + "/bin/mojoup-node", "service", "sessions"}, env);
  CHECK(outside.result.exit_code == 1);
  CHECK(Contains(outside.result.err, "may not run agents in this node's sandboxes"));
  CHECK(service.Stop(std::chrono::seconds(30)) == 0);
}

TEST_CASE("ask through the service: approvals and the audit over its API, for their owner",
          "[service][ask]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"node.proxy.ask", "on"}, {"node.proxy.ask_hold", "60"}}) {
    REQUIRE(node.Cli({"config", "set", key, value}).result.exit_code == 0);
  }
  node.Policy(R"({"agents": {"network": {"ask": true}}})");
  mojoup::test::EchoServer upstream;
  const std::string port = std::to_string(upstream.port());
  UserService service(node);
  Run detached = node.Cli({"run", "--detach", "--resolve", "held.test:" + port + ":127.0.0.1",
                           "--", "/bin/sh", "-c",
                           "curl -s -o /dev/null -w 'held:%{http_code}\\n' http://held.test:" +
                               port + "/one"});
  INFO(Described(detached));
  REQUIRE(detached.result.exit_code == 0);
  const std::string id = Trimmed(detached.result.out);
  // The API as a console calls it: curl on the service's socket, as the user.
  auto api = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"curl", "-sS", "--max-time", "40", "--unix-socket",
                                     node.state + "/node.sock"};
    argv.insert(argv.end(), args.begin(), args.end());
    return user->As(argv);
  };
  const std::string base = "http://node/v1/sessions/" + id;
  // A long poll from version 0 returns once the request is asked.
  Run asked;
  REQUIRE(mojoup::test::WaitFor(
      [&] {
        asked = api({base + "/approvals?after=0&wait=20000"});
        return Contains(asked.result.out, "\"state\":\"pending\"");
      },
      std::chrono::seconds(60)));
  CHECK(Contains(asked.result.out, "\"host\":\"held.test\""));
  Run bad = api({"-X", "POST", "-d", "{\"decision\":\"maybe\"}", base + "/approvals/1"});
  CHECK(Contains(bad.result.out, "must be approve or deny"));
  Run approved = api({"-X", "POST", "-d", "{\"decision\":\"approve\"}", base + "/approvals/1"});
  INFO(Described(approved));
  CHECK(Contains(approved.result.out, "\"state\":\"approved\""));
  CHECK(Contains(approved.result.out, "\"by\":\"" + user->name + "\""));
  Run attached = node.Cli({"attach", id});
  CHECK(attached.result.out == "held:200\n");
  Run audit = api({base + "/audit?since=1"});
  INFO(Described(audit));
  CHECK(Contains(audit.result.out, "\"seq\":2,"));
  CHECK_FALSE(Contains(audit.result.out, "\"seq\":1,"));
  CHECK(Contains(audit.result.out, "\"event\":\"approval.decision\""));
  CHECK(Contains(audit.result.out, "\"event\":\"session.end\""));
  CHECK(api({base + "/approvals/1"}).result.out.find("approvals take GET") != std::string::npos);
  CHECK(service.process().Stop(std::chrono::seconds(30)) == 0);
  CHECK(node.Leftovers() == 0);
}

namespace {

// The service's /metrics at `listen`, as a scraper reads it.
std::string Scrape(const std::string& listen) {
  return RunWithEnv({}, {"curl", "-sf", "--max-time", "10", "http://" + listen + "/metrics"})
      .result.out;
}

// Waits until /metrics holds every one of `lines`; the last scrape.
std::string ScrapeUntil(const std::string& listen, const std::vector<std::string>& lines) {
  std::string text;
  mojoup::test::WaitFor(
      [&] {
        text = Scrape(listen);
        return std::all_of(lines.begin(), lines.end(),
                           [&](const std::string& line) { return Contains(text, line + "\n"); });
      },
      std::chrono::seconds(60));
  return text;
}

}  // namespace

// The counters move as the operator decides, come through a service
// restart with the session, and stay after the session ended.
TEST_CASE("/metrics counts the sessions' egress decisions and approvals pending",
          "[service][ask]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  if (!HasProgram("curl")) MOJOUP_SKIP("needs curl");
  UserNode node(*user);
  const std::string listen = "127.0.0.1:" + std::to_string(40000 + ::getpid() % 20000);
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"node.proxy.ask", "on"},
                                                        {"node.proxy.ask_hold", "120"},
                                                        {"node.service.metrics_listen", listen}}) {
    REQUIRE(node.Cli({"config", "set", key, value}).result.exit_code == 0);
  }
  node.Policy(R"({"agents": {"network": {"ask": true}}})");
  mojoup::test::EchoServer upstream;
  const std::string port = std::to_string(upstream.port());
  auto service = std::make_unique<UserService>(node);
  const std::string script = fmt::format(
      "for h in held denied; do curl -s -o /dev/null -w \"$h:%{{http_code}}\\n\" "
      "http://$h.test:{}/; done",
      port);
  Run detached =
      node.Cli({"run", "--detach", "--resolve", "held.test:" + port + ":127.0.0.1", "--resolve",
                "denied.test:" + port + ":127.0.0.1", "--", "/bin/sh", "-c", script});
  INFO(Described(detached));
  REQUIRE(detached.result.exit_code == 0);
  const std::string id = Trimmed(detached.result.out);
  std::string text = ScrapeUntil(listen, {"mojoup_approvals_pending 1"});
  INFO(text << service->Log());
  REQUIRE(Contains(text, "mojoup_approvals_pending 1\n"));
  CHECK(Contains(text, "mojoup_egress_decisions_total{outcome=\"allowed\"} 0\n"));
  // Killed and started again: the session's worker is taken back and its
  // numbers with it.
  ::kill(service->process().pid(), SIGKILL);
  service->process().Stop();
  service = std::make_unique<UserService>(node);
  text = ScrapeUntil(listen, {"mojoup_approvals_pending 1"});
  CHECK(Contains(text, "mojoup_approvals_pending 1\n"));
  CHECK(Contains(service->Log(), "taken back after a restart"));
  Run approved = node.Cli({"approve", id, "1"});
  INFO(Described(approved));
  CHECK(approved.result.exit_code == 0);
  text = ScrapeUntil(listen, {"mojoup_egress_decisions_total{outcome=\"allowed\"} 1",
                              "mojoup_approvals_decided_total{state=\"approved\"} 1",
                              "mojoup_approvals_pending 1"});
  CHECK(Contains(text, "mojoup_egress_decisions_total{outcome=\"allowed\"} 1\n"));
  CHECK(Contains(text, "mojoup_approvals_decided_total{state=\"approved\"} 1\n"));
  Run denied = node.Cli({"deny", id, "2", "--reason", "not this one"});
  INFO(Described(denied));
  CHECK(denied.result.exit_code == 0);
  Run attached = node.Cli({"attach", id});
  CHECK(attached.result.out == "held:200\ndenied:403\n");
  // The session ended: its counts stay, nothing is pending.
  text = ScrapeUntil(
      listen, {"mojoup_sessions_ended_total{outcome=\"success\"} 1", "mojoup_approvals_pending 0"});
  for (const std::string line :
       {"mojoup_egress_decisions_total{outcome=\"allowed\"} 1",
        "mojoup_egress_decisions_total{outcome=\"denied\"} 1",
        "mojoup_egress_decisions_total{outcome=\"asked\"} 0",
        "mojoup_egress_decisions_total{outcome=\"error\"} 0", "mojoup_approvals_pending 0",
        "mojoup_approvals_decided_total{state=\"approved\"} 1",
        "mojoup_approvals_decided_total{state=\"denied\"} 1",
        "mojoup_approvals_decided_total{state=\"expired\"} 0"}) {
    CHECK(Contains(text, line + "\n"));
  }
  if (HasProgram("promtool")) {
    const std::string file = node.root + "/tallies.txt";
    std::ofstream(file) << text;
    Run checked = RunWithEnv({}, {"sh", "-c", "promtool check metrics < " + file});
    INFO(Described(checked));
    CHECK(checked.result.exit_code == 0);
  }
  CHECK(service->process().Stop(std::chrono::seconds(30)) == 0);
  CHECK(node.Leftovers() == 0);
}

// `mojoup-node run`, `status` and `stop` against the real dockerd, with an
// image the tests assemble from this host's busybox and curl.
#include <rapidjson/document.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "../support/background_process.h"
#include "../support/echo_server.h"
#include "../support/fake_node.h"
#include "../support/sandbox_image.h"
#include "../support/signin_files.h"
#include "../support/test_support.h"
#include "mojoup/credproxy/session_ca.h"
#include "mojoup/policy/decision.h"
#include "mojoup/probe/docker_api.h"
#include "mojoup/probe/kernel.h"
#include "mojoup/sandbox/node.h"

namespace {

using mojoup::test::WaitFor;

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using mojoup::test::BackgroundProcess;
using mojoup::test::BinDir;
using mojoup::test::EchoServer;
using mojoup::test::Run;
using mojoup::test::RunWithEnv;
using mojoup::test::Slurp;
using mojoup::test::TempDir;

constexpr const char* kImage = mojoup::test::kSandboxImage;
constexpr const char* kRealKey = "tk-live-REALKEY0123456789abcdefghijklmnopqrstuvwxyz";

// The sandboxes Docker has with the label mojoup.state=<state>.
std::size_t ContainersOf(const std::string& state) {
  auto ids = mojoup::test::ContainersLabelled("mojoup.state=" + state);
  REQUIRE(ids.has_value());
  return ids->size();
}

// A node with the native runtime, a repository and a home of its own.
struct Node {
  TempDir dir;
  std::string repo;
  std::string home;
  std::string state;
  std::vector<std::string> env;

  Node() {
    repo = fs::canonical(dir.path()).string() + "/work/repo";
    home = fs::canonical(dir.path()).string() + "/home";
    state = fs::canonical(dir.path()).string() + "/state";
    mojoup::test::MakeGitDir(repo + "/.git");
    fs::create_directories(home);
    Configure(kImage);
    env = {"MOJOUP_NODE_CONFIG=" + (dir / "node.json"), "MOJOUP_STATE_DIR=" + state, "HOME=" + home,
           "NO_COLOR=1", "TEST_KEY=" + std::string(kRealKey)};
  }

  // The native runtime with `image`, the sandbox role on, this user allowed.
  void Configure(const std::string& image) const {
    dir.Write("node.json",
              "{\"node.sandbox.engine\": \"docker\", \"node.sandbox.role\": true, "
              "\"node.sandbox.runtime\": \"native\", \"node.sandbox.image\": \"" +
                  image + "\", \"node.sandbox.allowed_users\": \"" +
                  mojoup::policy::CurrentUserName() + "\"}");
  }

  void Policy(const std::string& json) const {
    fs::create_directories(repo + "/.mojoup");
    std::ofstream(repo + "/.mojoup/policy.json") << json;
  }

  std::vector<std::string> Cli(std::vector<std::string> args) const {
    std::vector<std::string> argv{BinDir() + "/mojoup-node"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  // `mojoup-node run [flags] -- sh -c SCRIPT`
  Run Sh(const std::string& script, std::vector<std::string> flags = {}) const {
    std::vector<std::string> args{"run", "--repo", repo};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", script});
    return RunWithEnv(env, Cli(args), std::chrono::seconds(60));
  }

  std::size_t Leftovers() const {
    std::size_t left = ContainersOf(state);
    if (fs::exists(state + "/sessions")) {
      for ([[maybe_unused]] const auto& entry : fs::directory_iterator(state + "/sessions")) ++left;
    }
    return left;
  }
};

// An HTTPS echo server as allowed.test, under a CA of its own, which the
// repository's policy allows on its port.
struct AllowedUpstream {
  std::unique_ptr<mojoup::credproxy::SessionCa> ca;
  std::string ca_file;
  EchoServer server;
  std::string port;

  explicit AllowedUpstream(const Node& node)
      : ca(*mojoup::credproxy::SessionCa::Create("upstream test CA")),
        ca_file(node.dir.Write("upstream-ca.pem", ca->certificate_pem())),
        server(*ca->ServerContext("allowed.test")),
        port(std::to_string(server.port())) {
    node.Policy(R"({"agents": {"network": {"allow": [{"host": "allowed.test", "ports": [)" + port +
                "]}]}}}");
  }

  // The run's flags: TEST_KEY bound to it, its name pinned to 127.0.0.1,
  // its CA trusted; then `more`.
  std::vector<std::string> Flags(std::vector<std::string> more = {}) const {
    std::vector<std::string> flags = {"--credential",  "TEST_KEY=allowed.test",
                                      "--resolve",     "allowed.test:" + port + ":127.0.0.1",
                                      "--upstream-ca", ca_file};
    flags.insert(flags.end(), more.begin(), more.end());
    return flags;
  }
};

#define REQUIRE_DOCKER()                                                    \
  do {                                                                      \
    static const std::string missing = mojoup::test::WhyNoSandboxDocker();  \
    if (!missing.empty()) MOJOUP_SKIP("needs a real dockerd: " << missing); \
  } while (false)

TEST_CASE("run: the command runs in the repository's own path and its code comes back", "[run]") {
  REQUIRE_DOCKER();
  Node node;
  Run run = node.Sh("pwd; echo to-stderr >&2; exit 3");
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 3);
  REQUIRE(run.result.out == node.repo + "\n");
  REQUIRE_THAT(run.result.err, Contains("to-stderr"));
  REQUIRE_THAT(run.result.err, StartsWith("mojoup-node: Sandboxed: "));
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("run: stdin reaches the command", "[run]") {
  REQUIRE_DOCKER();
  Node node;
  std::ofstream(node.dir / "input") << "line one\nline two\n";
  Run run = RunWithEnv(node.env,
                       {"/bin/sh", "-c",
                        node.Cli({"run", "--repo", node.repo, "--", "wc", "-l"})[0] +
                            " run --repo " + node.repo + " -- wc -l < " + (node.dir / "input")},
                       std::chrono::seconds(60));
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("2"));
}

TEST_CASE("run: writes land in the repository, owned by the user, elsewhere they fail",
          "[run][landlock]") {
  REQUIRE_DOCKER();
  Node node;
  Run run = node.Sh(
      "echo hello > written.txt && touch $HOME/in-home /tmp/in-tmp && "
      "if touch /outside 2>/dev/null; then echo WROTE-OUTSIDE; fi; "
      "if touch /etc/outside 2>/dev/null; then echo WROTE-ETC; fi; echo done");
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(run.result.out == "done\n");
  REQUIRE(Slurp(node.repo + "/written.txt") == "hello\n");
  struct stat info {};
  REQUIRE(stat((node.repo + "/written.txt").c_str(), &info) == 0);
  REQUIRE(info.st_uid == getuid());
  REQUIRE(info.st_gid == getgid());
}

TEST_CASE("run: the network is the proxy's: allowed host yes, denied host 403, direct no",
          "[run][network]") {
  REQUIRE_DOCKER();
  Node node;
  AllowedUpstream allowed(node);
  EchoServer& upstream = allowed.server;
  const std::string& port = allowed.port;
  Run run = node.Sh("curl -sS -H \"x-api-key: $TEST_KEY\" https://allowed.test:" + port +
                        "/hello; echo; "
                        "curl -s -D - -o /dev/null http://denied.test/ | tr -d '\\r' | grep -i "
                        "'^x-mojoup-proxy-error'; "
                        "curl -s -o /dev/null -w 'denied:%{http_code}\\n' http://denied.test/; "
                        "if curl -s --noproxy '*' --max-time 3 http://127.0.0.1:" +
                        port + "/ >/dev/null; then echo DIRECT-WORKED; else echo direct:failed; fi",
                    allowed.Flags());
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("\"method\": \"GET\""));
  REQUIRE_THAT(run.result.out, Contains("X-Mojoup-Proxy-Error: blocked-by-policy"));
  REQUIRE_THAT(run.result.out, Contains("denied:403"));
  REQUIRE_THAT(run.result.out, Contains("direct:failed"));
  REQUIRE_THAT(run.result.out, !Contains("DIRECT-WORKED"));
  // Upstream got the real key; the sandbox only ever had the stand-in.
  auto seen = upstream.seen();
  REQUIRE(seen.size() == 1);
  REQUIRE(seen[0].Header("x-api-key") == kRealKey);
  REQUIRE_THAT(run.result.out, !Contains(kRealKey));
}

TEST_CASE("run: the session's audit is complete, with no gap, mirrored, and read by `audit`",
          "[run][audit]") {
  REQUIRE_DOCKER();
  Node node;
  AllowedUpstream allowed(node);
  const std::string mirror = node.dir / "mirror.jsonl";
  // With a credential bound to it, the proxy reads the requests to allowed.test.
  Run run = node.Sh("curl -sS -H \"x-api-key: $TEST_KEY\" https://allowed.test:" + allowed.port +
                        "/hello?secret=1 >/dev/null; curl -s -o /dev/null http://denied.test/; "
                        "exit 5",
                    allowed.Flags({"--audit", mirror}));
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 5);
  std::vector<std::string> ids;
  for (const auto& entry : fs::directory_iterator(node.state + "/audit")) {
    ids.push_back(entry.path().stem().string());
  }
  REQUIRE(ids.size() == 1);
  // `audit` checks every line: the schema, the members, seq from 1 with no gap.
  Run audit = RunWithEnv(node.env, node.Cli({"audit", ids[0]}));
  INFO(audit.result.err);
  REQUIRE(audit.result.exit_code == 0);
  const std::string path = node.state + "/audit/" + ids[0] + ".jsonl";
  REQUIRE(audit.result.out == Slurp(path));
  REQUIRE(Slurp(mirror) == Slurp(path));
  std::vector<rapidjson::Document> lines;
  std::istringstream in(audit.result.out);
  for (std::string line; std::getline(in, line);) {
    lines.emplace_back().Parse(line.c_str());
    REQUIRE(lines.back()["seq"].GetUint64() == lines.size());
  }
  REQUIRE(lines.size() >= 4);
  auto text = [](const rapidjson::Value& v, const char* name) {
    return v.HasMember(name) ? std::string(v[name].GetString()) : std::string();
  };
  CHECK(text(lines.front(), "event") == "session.start");
  CHECK(text(lines.front(), "runtime") == "native");
  CHECK(text(lines.back(), "event") == "session.end");
  CHECK(lines.back()["exit_code"].GetInt() == 5);
  CHECK(lines.back()["allowed"].GetInt() >= 1);
  CHECK(lines.back()["denied"].GetInt() == 1);
  bool passed = false;
  bool refused = false;
  for (const auto& line : lines) {
    if (text(line, "event") != "egress") continue;
    passed |= text(line, "host") == "allowed.test" && text(line, "decision") == "allow" &&
              text(line, "path") == "/hello" && line.HasMember("credentials") &&
              std::string(line["credentials"][0].GetString()) == "TEST_KEY";
    refused |= text(line, "host") == "denied.test" && text(line, "decision") == "deny" &&
               text(line, "reason") == "blocked-by-policy";
  }
  CHECK(passed);
  CHECK(refused);
  Run ocsf = RunWithEnv(node.env, node.Cli({"audit", ids[0], "--ocsf", "--since", "1"}));
  REQUIRE(ocsf.result.exit_code == 0);
  CHECK(std::count(ocsf.result.out.begin(), ocsf.result.out.end(), '\n') ==
        static_cast<long>(lines.size()) - 1);
  CHECK_THAT(ocsf.result.out, Contains("\"class_uid\":2004"));
}

TEST_CASE("run: the stand-in is in the environment, the real key nowhere in the sandbox",
          "[run][credential]") {
  REQUIRE_DOCKER();
  Node node;
  Run run = node.Sh(
      "echo \"stand-in:$TEST_KEY\"; "
      "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c REALKEY; "
      "grep -rsl REALKEY /bin /etc /home /tmp /usr /.mojoup \"$HOME\" \"$PWD\" | head -3; "
      "echo end",
      {"--credential", "TEST_KEY=api.example.com"});
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("stand-in:tk-live-"));
  REQUIRE_THAT(run.result.out, !Contains(kRealKey));
  REQUIRE_THAT(run.result.out, Contains("\n0\nend\n"));
}

TEST_CASE("run: the sign-in is there with stand-ins for its tokens, and the sandbox's copy stays in",
          "[run][signin]") {
  REQUIRE_DOCKER();
  Node node;
  fs::create_directories(node.home + "/.codex");
  const std::string auth = node.home + "/.codex/auth.json";
  const std::string mine = mojoup::test::CodexAuth("ada", 1);
  std::ofstream(auth) << mine;
  chmod(auth.c_str(), 0600);
  // What the sandbox writes in its copy, a refresh of its own making.
  Run run = node.Sh(
      "cat $HOME/.codex/auth.json; echo; ls $MOJOUP_STATE_DIR 2>&1 | head -1; "
      "printf '%s' '" +
          mojoup::test::CodexAuth("ada", 2) + "' > $HOME/.codex/auth.json",
      {"--tool", "codex"});
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  // The file's shape and claims, not its secrets.
  const std::string jwt = mojoup::test::Jwt(mojoup::test::OpenAiClaims("ada", 1));
  CHECK(run.result.out.find(jwt) == std::string::npos);
  CHECK(run.result.out.find("rt_ada-1\"") == std::string::npos);
  // A JWT's stand-in keeps its header and claims, which the tool reads.
  CHECK_THAT(run.result.out, Contains(jwt.substr(0, jwt.rfind('.') + 1)));
  CHECK_THAT(run.result.out, Contains(R"("account_id":"acct-ada")"));
  CHECK_THAT(run.result.out, Contains(R"("refresh_token":"rt_ada-)"));
  // Never a source of tokens: the host file is as it was, nothing beside it.
  CHECK(Slurp(auth) == mine);
  for (const auto& entry : fs::directory_iterator(node.home + "/.codex")) {
    CHECK(entry.path().filename() == "auth.json");
  }
  CHECK(run.result.err.find("written back") == std::string::npos);
  REQUIRE(node.Leftovers() == 0);

  SECTION("a tool with no sign-in file on the host is not an error") {
    Run bare = node.Sh("true", {"--tool", "claude-code"});
    REQUIRE(bare.result.exit_code == 0);
    REQUIRE_THAT(bare.result.err, Contains("no claude-code sign-in file on this host"));
  }
}

// Starts `run -- sleep 600` and waits until its record says running.
std::unique_ptr<BackgroundProcess> StartSleeper(const Node& node) {
  return std::make_unique<BackgroundProcess>(
      node.env, node.Cli({"run", "--repo", node.repo, "--", "sleep", "600"}));
}

std::size_t RunningRecords(const Node& node) {
  std::size_t running = 0;
  if (!fs::exists(node.state + "/sessions")) return 0;
  for (const auto& entry : fs::directory_iterator(node.state + "/sessions")) {
    if (entry.path().extension() == ".json" &&
        Slurp(entry.path().string()).find("\"state\":\"running\"") != std::string::npos) {
      ++running;
    }
  }
  return running;
}

TEST_CASE("run: 20 sessions SIGKILLed mid-session leave nothing after `status`", "[run][reap]") {
  REQUIRE_DOCKER();
  Node node;
  constexpr std::size_t kSessions = 20;
  std::vector<std::unique_ptr<BackgroundProcess>> sessions;
  for (std::size_t i = 0; i < kSessions; ++i) sessions.push_back(StartSleeper(node));
  REQUIRE(WaitFor([&] { return RunningRecords(node) == kSessions; }, std::chrono::seconds(90)));
  REQUIRE(ContainersOf(node.state) == kSessions);
  for (auto& session : sessions) kill(session->pid(), SIGKILL);
  for (auto& session : sessions) session->Stop();

  Run status = RunWithEnv(node.env, node.Cli({"status", "--json"}), std::chrono::seconds(90));
  INFO(status.result.err);
  REQUIRE(status.result.exit_code == 0);
  rapidjson::Document doc;
  doc.Parse(status.result.out.c_str());
  REQUIRE(doc.IsObject());
  REQUIRE(std::string(doc["schema"].GetString()) == "mojoup.status/v1");
  REQUIRE(doc["sessions"].Size() == 0);
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("status lists a running session, stop ends it and removes everything",
          "[run][status][stop]") {
  REQUIRE_DOCKER();
  Node node;
  auto sleeper = StartSleeper(node);
  REQUIRE(WaitFor([&] { return RunningRecords(node) == 1; }, std::chrono::seconds(30)));

  Run status = RunWithEnv(node.env, node.Cli({"status", "--json"}), std::chrono::seconds(30));
  rapidjson::Document doc;
  doc.Parse(status.result.out.c_str());
  REQUIRE(doc.IsObject());
  REQUIRE(doc["sessions"].Size() == 1);
  const auto& session = doc["sessions"][0];
  const std::string id = session["id"].GetString();
  REQUIRE(std::string(session["repo"].GetString()) == node.repo);
  REQUIRE(std::string(session["runtime"].GetString()) == "native");
  REQUIRE(std::string(session["state"].GetString()) == "running");
  REQUIRE(session["pid"].GetInt() == sleeper->pid());

  Run text = RunWithEnv(node.env, node.Cli({"status"}), std::chrono::seconds(30));
  REQUIRE_THAT(text.result.out, Contains(id));

  Run stop = RunWithEnv(node.env, node.Cli({"stop", id}), std::chrono::seconds(60));
  INFO(stop.result.err);
  REQUIRE(stop.result.exit_code == 0);
  REQUIRE(stop.result.out == "stopped " + id + "\n");
  // The owner saw its command end by SIGTERM and exits with its code.
  int exit_status = sleeper->Stop(std::chrono::seconds(20));
  REQUIRE(WIFEXITED(exit_status));
  REQUIRE(WEXITSTATUS(exit_status) == 128 + SIGTERM);
  REQUIRE(node.Leftovers() == 0);

  Run again = RunWithEnv(node.env, node.Cli({"stop", id}), std::chrono::seconds(30));
  REQUIRE(again.result.exit_code == 1);
  REQUIRE_THAT(again.result.err, Contains("no session " + id));
}

TEST_CASE("run: SIGTERM to mojoup-node reaches the command and cleans up", "[run][signal]") {
  REQUIRE_DOCKER();
  Node node;
  auto sleeper = StartSleeper(node);
  REQUIRE(WaitFor([&] { return RunningRecords(node) == 1; }, std::chrono::seconds(30)));
  int exit_status = sleeper->Stop(std::chrono::seconds(20));  // SIGTERM first
  REQUIRE(WIFEXITED(exit_status));
  REQUIRE(WEXITSTATUS(exit_status) == 128 + SIGTERM);
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("run: a signal before the sandbox starts ends the command once it does",
          "[run][signal]") {
  REQUIRE_DOCKER();
  Node node;
  mojoup::NodeOptions options;
  options.config_path = node.dir / "node.json";
  options.state_dir = node.state;
  options.supervisor = BinDir() + "/mojoup-sandbox-init";
  auto opened = mojoup::Node::Open(std::move(options));
  REQUIRE(opened.ok());
  mojoup::RunRequest request;
  request.workdir = node.repo;
  request.command = {"sleep", "600"};
  auto launch = opened->Start(std::move(request));
  REQUIRE(launch.ok());
  REQUIRE(launch->run != nullptr);
  // The sandbox is created, not started: Docker itself would drop this.
  REQUIRE(launch->run->Signal(SIGTERM).ok());
  mojoup::sandbox::Stdio stdio;
  stdio.in = -1;
  auto code = launch->run->Wait(stdio);
  REQUIRE(code.ok());
  REQUIRE(*code == 128 + SIGTERM);
  launch->run->Close();
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("run: bad usage exits 2 and says what was wrong", "[run][usage]") {
  Node node;
  Run run = RunWithEnv(node.env, node.Cli({"run", "--repo", node.repo}));
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.err, Contains("give the command to run after --"));
  run = RunWithEnv(node.env, node.Cli({"run", "--repo", node.dir / "nope", "--", "true"}));
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.err, Contains("not a directory"));
  run = RunWithEnv(node.env, node.Cli({"run", "--tool", "vim", "--", "true"}));
  REQUIRE(run.result.exit_code == 2);
  run = RunWithEnv(node.env, node.Cli({"run", "--credential", "UNKNOWN_NAME", "--", "true"}));
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.err, Contains("UNKNOWN_NAME=HOST"));
  run = RunWithEnv(node.env, node.Cli({"stop"}));
  REQUIRE(run.result.exit_code == 2);
}

TEST_CASE("run: a user not allowed runs unsandboxed, with the reason", "[run][decision]") {
  Node node;
  node.dir.Write("node.json", R"({"node.sandbox.engine": "docker", "node.sandbox.role": true,
      "node.sandbox.runtime": "native", "node.sandbox.allowed_users": "someone-else"})");
  Run run = RunWithEnv(
      node.env, node.Cli({"run", "--repo", node.repo, "--", "/bin/sh", "-c", "pwd; exit 4"}));
  REQUIRE(run.result.exit_code == 4);
  REQUIRE(run.result.out == node.repo + "\n");
  REQUIRE_THAT(run.result.err, StartsWith("mojoup-node: Warning: running without a sandbox"));
  REQUIRE_THAT(run.result.err, Contains("you may not run agents in this node's sandboxes"));

  SECTION("and a repository that requires a sandbox is refused") {
    node.Policy(R"({"agents": {"sandbox": "required"}})");
    Run refused = RunWithEnv(node.env, node.Cli({"run", "--repo", node.repo, "--", "true"}));
    REQUIRE(refused.result.exit_code == 1);
    REQUIRE_THAT(refused.result.err,
                 StartsWith("mojoup-node: This repository requires a sandbox, but"));
  }
}

}  // namespace

namespace {

TEST_CASE("run: with a terminal, the command gets one", "[run][tty]") {
  REQUIRE_DOCKER();
  if (!RunWithEnv({}, {"script", "--version"}).result.Succeeded()) {
    MOJOUP_SKIP("needs script(1) from util-linux to give mojoup-node a terminal");
  }
  Node node;
  const std::string command = BinDir() + "/mojoup-node run --repo " + node.repo +
                              " -- sh -c 'tty; test -t 0 && echo stdin-is-tty; exit 5'";
  Run run =
      RunWithEnv(node.env, {"script", "-qec", command, "/dev/null"}, std::chrono::seconds(60));
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 5);
  REQUIRE_THAT(run.result.out, Contains("/dev/pts/"));
  REQUIRE_THAT(run.result.out, Contains("stdin-is-tty"));
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("stop --all ends every session", "[run][stop]") {
  REQUIRE_DOCKER();
  Node node;
  auto first = StartSleeper(node);
  auto second = StartSleeper(node);
  REQUIRE(WaitFor([&] { return RunningRecords(node) == 2; }, std::chrono::seconds(30)));
  Run stop = RunWithEnv(node.env, node.Cli({"stop", "--all"}), std::chrono::seconds(60));
  INFO(stop.result.err);
  REQUIRE(stop.result.exit_code == 0);
  REQUIRE(std::count(stop.result.out.begin(), stop.result.out.end(), '\n') == 2);
  first->Stop(std::chrono::seconds(20));
  second->Stop(std::chrono::seconds(20));
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("run: an image the node does not have is named, and nothing is left", "[run]") {
  REQUIRE_DOCKER();
  Node node;
  node.Configure("mojoup-no-such-image:0");
  Run run = node.Sh("true");
  REQUIRE(run.result.exit_code == 1);
  REQUIRE_THAT(run.result.err, Contains("mojoup-no-such-image:0"));
  REQUIRE(node.Leftovers() == 0);
}

}  // namespace

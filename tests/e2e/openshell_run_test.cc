// `mojoup-node run`, `status` and `stop` with node.sandbox.runtime openshell,
// against the fake `openshell` backed by real containers on the real dockerd,
// playing the releases of libsandbox/testing/FAKE_OPENSHELL.md: v0.0.92 (the
// oldest the runtime drives), v0.0.111, a 0.1.x release with its gateway
// configured for same-path mounts, and one whose credentials go through
// OpenShell's providers. OpenShell does not run sandboxes as root, so the
// CLI runs as `nobody` (with the docker group, to reach the daemon).
#include <absl/cleanup/cleanup.h>
#include <grp.h>
#include <poll.h>
#include <pty.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>
#include <tuple>

#include "../support/background_process.h"
#include "../support/echo_server.h"
#include "../support/sandbox_image.h"
#include "../support/signin_files.h"
#include "../support/test_support.h"
#include "mojoup/credproxy/session_ca.h"
#include "mojoup/internal/sha256.h"
#include "mojoup/probe/docker_api.h"
#include "mojoup/probe/kernel.h"
#include "mojoup/sandbox/testing/fake_openshell_sandbox.h"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using mojoup::test::BackgroundProcess;
using mojoup::test::BinDir;
using mojoup::test::EchoServer;
using mojoup::test::Run;
using mojoup::test::RunWithEnv;
using mojoup::test::Slurp;
using mojoup::test::TempDir;

constexpr const char* kImage = mojoup::test::kSandboxImage;
constexpr const char* kRealKey = "tk-live-REALKEY0123456789abcdefghijklmnopqrstuvwxyz";
constexpr uid_t kNobody = 65534;

// Why these tests cannot run here, or "".
std::string Missing() {
  if (geteuid() != 0) return "needs root, to run the CLI as nobody with the docker group";
  if (getgrnam("docker") == nullptr) return "needs a docker group";
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) return why;
  return mojoup::test::WhyNoOpenShellNetwork();
}

#define REQUIRE_WORLD()                                                        \
  do {                                                                         \
    static const std::string missing = Missing();                              \
    if (!missing.empty()) MOJOUP_SKIP("openshell runtime tests: " << missing); \
  } while (false)

using FakeOptions = mojoup::sandbox::testing::FakeOpenShellSandboxOptions;

// A release of OpenShell as the fake plays it, with its gateway set up the way
// docs/openshell.md says a node's must be.
struct Release {
  std::string name;
  FakeOptions options;
};

FakeOptions Version(const std::string& version) {
  FakeOptions options;
  options.version = version;
  if (version.rfind("0.1.", 0) == 0) {
    // 0.1.x: caller driver config and host binds need the gateway's consent.
    options.allow_driver_config = true;
    options.bind_mount_admission = "disabled";
  }
  return options;
}

std::vector<Release> Releases() {
  return {{"v0.0.92", Version("0.0.92")},
          {"v0.0.111", Version("0.0.111")},
          {"v0.1.10", Version("0.1.10")}};
}

// A node with the openshell runtime; everything the CLI touches belongs to nobody.
struct Node {
  TempDir dir;
  std::string root = fs::canonical(dir.path()).string();
  std::string repo = root + "/work/repo";
  std::string home = root + "/home";
  std::string state = root + "/state";
  std::string bin = root + "/bin";
  std::string calls;
  std::vector<std::string> env;

  explicit Node(mojoup::sandbox::testing::FakeOpenShellSandboxOptions options = {}) {
    mojoup::test::MakeGitDir(repo + "/.git");
    fs::create_directories(home);
    fs::create_directories(state);
    fs::create_directories(bin);
    calls = mojoup::sandbox::testing::InstallFakeOpenShellSandbox(bin, BinDir() + "/fake-openshell",
                                                                  options);
    Configure("");
    for (const std::string& path : {repo, home, state, calls}) {
      REQUIRE(chown(path.c_str(), kNobody, kNobody) == 0);
    }
    for (const auto& entry : fs::recursive_directory_iterator(repo + "/.git")) {
      REQUIRE(chown(entry.path().c_str(), kNobody, kNobody) == 0);
    }
    REQUIRE(chown((repo + "/.git").c_str(), kNobody, kNobody) == 0);
    env = {"MOJOUP_NODE_CONFIG=" + (dir / "node.json"),
           "MOJOUP_STATE_DIR=" + state,
           "HOME=" + home,
           "NO_COLOR=1",
           "TEST_KEY=" + std::string(kRealKey),
           "PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin"};
  }

  // The node's config: the openshell runtime for nobody, and `more` keys
  // (`, "key": value...`).
  void Configure(const std::string& more) {
    dir.Write("node.json", R"({"node.sandbox.engine": "docker", "node.sandbox.role": true,
        "node.sandbox.runtime": "openshell", "node.sandbox.image": ")" +
                               std::string(kImage) +
                               R"(", "node.sandbox.allowed_users": "nobody")" + more + "}");
  }

  // A test that failed midway may have left a session whose `run` is gone:
  // `status` reaps it, so no sandbox outlives its test.
  ~Node() { RunWithEnv(env, Cli({"status"}), std::chrono::seconds(90)); }

  // `mojoup-node ARGS` as nobody, with the docker group.
  std::vector<std::string> Cli(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {"setpriv",
                                     "--reuid=65534",
                                     "--regid=65534",
                                     "--groups=" + std::to_string(getgrnam("docker")->gr_gid),
                                     "--",
                                     BinDir() + "/mojoup-node"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  Run Sh(const std::string& script, std::vector<std::string> flags = {}) const {
    std::vector<std::string> args{"run", "--repo", repo};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", script});
    return RunWithEnv(env, Cli(args), std::chrono::seconds(90));
  }

  // Sandboxes the fake knows, records and staging left in the state directory.
  std::size_t Leftovers() const {
    Run listed = RunWithEnv(env, {bin + "/openshell", "sandbox", "list", "-o", "json"});
    rapidjson::Document doc;
    doc.Parse(listed.result.out.c_str());
    std::size_t left = 0;
    if (doc.IsArray()) {
      for (const auto& item : doc.GetArray()) {
        if (item.HasMember("labels") && item["labels"].HasMember("mojoup.session")) ++left;
      }
    }
    if (fs::exists(state + "/sessions")) {
      for ([[maybe_unused]] const auto& entry : fs::directory_iterator(state + "/sessions")) ++left;
    }
    return left + Providers().size();
  }

  // The providers the fake's gateway holds.
  std::vector<std::string> Providers() const {
    Run listed = RunWithEnv(env, {bin + "/openshell", "provider", "list", "--names"});
    std::vector<std::string> names;
    std::istringstream lines(listed.result.out);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) names.push_back(line);
    }
    return names;
  }
};

TEST_CASE("openshell runtime: repository at its path, owner kept, keys through the base URL",
          "[openshell-run]") {
  REQUIRE_WORLD();
  const Release release = GENERATE(from_range(Releases()));
  INFO("OpenShell " << release.name);
  Node node(release.options);
  auto upstream_ca = *mojoup::credproxy::SessionCa::Create("upstream test CA");
  const std::string ca_file = node.dir.Write("upstream-ca.pem", upstream_ca->certificate_pem());
  EchoServer upstream{*upstream_ca->ServerContext("allowed.test")};
  const std::string port = std::to_string(upstream.port());
  fs::create_directories(node.repo + "/.mojoup");
  std::ofstream(node.repo + "/.mojoup/policy.json")
      << R"({"agents": {"network": {"allow": [{"host": "allowed.test", "ports": [)" << port
      << "]}]}}}";
  Run run = node.Sh(
      "pwd; id -u; echo hi > written.txt; "
      "curl -sS -H \"x-api-key: $TEST_KEY\" \"$MOJOUP_PROXY_URL/allowed.test:" +
          port + "/hello\"; echo; echo \"stand-in:$TEST_KEY\"",
      {"--credential", "TEST_KEY=allowed.test", "--resolve", "allowed.test:" + port + ":127.0.0.1",
       "--upstream-ca", ca_file});
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains(node.repo + "\n65534\n"));
  struct stat info {};
  REQUIRE(stat((node.repo + "/written.txt").c_str(), &info) == 0);
  REQUIRE(info.st_uid == kNobody);
  REQUIRE_THAT(run.result.out, Contains("\"method\": \"GET\""));
  REQUIRE_THAT(run.result.out, Contains("stand-in:tk-live-"));
  REQUIRE_THAT(run.result.out, !Contains(kRealKey));
  auto seen = upstream.seen();
  REQUIRE(seen.size() == 1);
  REQUIRE(seen[0].Header("x-api-key") == kRealKey);
  // The policy went to OpenShell as a file, with the user's uid; the name
  // fits its 19 characters, and the image is never a community one.
  const std::string calls = Slurp(node.calls);
  REQUIRE_THAT(calls, Contains("\"--driver-config-json\""));
  REQUIRE_THAT(calls, Contains("\"--from\",\"docker.io/library/" + std::string(kImage) + "\""));
  REQUIRE(std::regex_search(calls, std::regex(R"("--name","mojoup-[0-9a-f]{12}")")));
  const bool v111 = release.name != "v0.0.92";
  REQUIRE_THAT(calls,
               Contains(v111 ? R"("--detach","--","sleep","infinity"])" : R"("--","true"])"));
  // 0.1.x runs the command without a login shell.
  const bool v01 = release.name.rfind("v0.1.", 0) == 0;
  REQUIRE(v01 == (calls.find("\"--no-login-shell\"") != std::string::npos));
  // OpenShell's supervisor points the command at its own CA bundle, for the
  // proxy that terminates its TLS; an --env of ours would override it.
  for (const char* variable : {"SSL_CERT_FILE=", "REQUESTS_CA_BUNDLE=", "CURL_CA_BUNDLE=",
                               "GIT_SSL_CAINFO=", "NODE_EXTRA_CA_CERTS=", "CODEX_CA_CERTIFICATE="}) {
    REQUIRE_THAT(calls, !Contains(std::string("\"") + variable));
  }
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("openshell runtime: exit code, sign-ins staged with stand-ins, the sandbox's copy stays in",
          "[openshell-run]") {
  REQUIRE_WORLD();
  const Release release = GENERATE(from_range(Releases()));
  INFO("OpenShell " << release.name);
  Node node(release.options);
  const std::string auth = node.home + "/.codex/auth.json";
  fs::create_directories(node.home + "/.codex");
  std::ofstream(auth) << mojoup::test::CodexAuth("ada", 1);
  for (const std::string& path : {node.home + "/.codex", auth}) {
    REQUIRE(chown(path.c_str(), kNobody, kNobody) == 0);
  }
  Run run = node.Sh("cat $HOME/.codex/auth.json; printf '%s' '" +
                        mojoup::test::CodexAuth("ada", 2) + "' > $HOME/.codex/auth.json; exit 6",
                    {"--tool", "codex"});
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 6);
  // The shape and the claims, never the refresh token.
  REQUIRE_THAT(run.result.out, Contains(R"("account_id":"acct-ada")"));
  REQUIRE(run.result.out.find("rt_ada-1\"") == std::string::npos);
  REQUIRE(Slurp(auth) == mojoup::test::CodexAuth("ada", 1));
  REQUIRE(run.result.err.find("written back") == std::string::npos);
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("openshell runtime: a sign-in swapped for another account's never comes back",
          "[openshell-run]") {
  // The openshell runtime shares the staging home with the native one: what
  // the agent writes into its copy stays in the sandbox here too.
  REQUIRE_WORLD();
  Node node;
  const std::string credentials = node.home + "/.claude/.credentials.json";
  fs::create_directories(node.home + "/.claude");
  std::ofstream(credentials) << mojoup::test::ClaudeCredentials("ada", 1);
  for (const std::string& path : {node.home + "/.claude", credentials}) {
    REQUIRE(chown(path.c_str(), kNobody, kNobody) == 0);
  }
  REQUIRE(chmod(credentials.c_str(), 0600) == 0);
  const std::string eve = mojoup::test::ClaudeCredentials("eve", 2, "pro", "default_claude_pro");
  // Claude Code replaces the file by rename; so does the agent.
  Run run = node.Sh("printf '%s' '" + eve +
                        "' > $HOME/.claude/.credentials.json.new && mv "
                        "$HOME/.claude/.credentials.json.new $HOME/.claude/.credentials.json",
                    {"--tool", "claude-code"});
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(Slurp(credentials) == mojoup::test::ClaudeCredentials("ada", 1));
  for (const auto& entry : fs::directory_iterator(node.home + "/.claude")) {
    CHECK(entry.path().filename() == ".credentials.json");  // nothing kept beside it
  }
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("openshell runtime: a SIGKILLed node leaves nothing after status", "[openshell-run]") {
  REQUIRE_WORLD();
  const Release release = GENERATE(from_range(Releases()));
  INFO("OpenShell " << release.name);
  Node node(release.options);
  std::vector<std::unique_ptr<BackgroundProcess>> sessions;
  for (int i = 0; i < 3; ++i) {
    sessions.push_back(std::make_unique<BackgroundProcess>(
        node.env, node.Cli({"run", "--repo", node.repo, "--", "sleep", "600"})));
  }
  auto running = [&] {
    std::size_t count = 0;
    if (!fs::exists(node.state + "/sessions")) return count;
    for (const auto& entry : fs::directory_iterator(node.state + "/sessions")) {
      if (entry.path().extension() == ".json" &&
          Slurp(entry.path().string()).find("\"state\":\"running\"") != std::string::npos) {
        ++count;
      }
    }
    return count;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (running() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (auto& session : sessions) UNSCOPED_INFO(session->Stderr());
  REQUIRE(running() == 3);
  for (auto& session : sessions) kill(session->pid(), SIGKILL);
  for (auto& session : sessions) session->Stop();
  Run status = RunWithEnv(node.env, node.Cli({"status", "--json"}), std::chrono::seconds(90));
  INFO(status.result.err);
  REQUIRE(status.result.exit_code == 0);
  REQUIRE_THAT(status.result.out, Contains("\"sessions\":[]"));
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("openshell runtime: status lists a session, stop ends it", "[openshell-run]") {
  REQUIRE_WORLD();
  const Release release = GENERATE(from_range(Releases()));
  INFO("OpenShell " << release.name);
  Node node(release.options);
  BackgroundProcess sleeper(node.env, node.Cli({"run", "--repo", node.repo, "--", "sleep", "600"}));
  std::string id;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (id.empty() && std::chrono::steady_clock::now() < deadline) {
    Run status = RunWithEnv(node.env, node.Cli({"status", "--json"}), std::chrono::seconds(30));
    rapidjson::Document doc;
    doc.Parse(status.result.out.c_str());
    if (doc.IsObject() && doc["sessions"].Size() == 1 &&
        std::string(doc["sessions"][0]["state"].GetString()) == "running") {
      REQUIRE(std::string(doc["sessions"][0]["runtime"].GetString()) == "openshell");
      id = doc["sessions"][0]["id"].GetString();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  REQUIRE_FALSE(id.empty());
  const auto started = std::chrono::steady_clock::now();
  Run stop = RunWithEnv(node.env, node.Cli({"stop", id}), std::chrono::seconds(60));
  INFO(stop.result.err);
  REQUIRE(stop.result.exit_code == 0);
  // The command got SIGTERM: no waiting out the grace period.
  REQUIRE(std::chrono::steady_clock::now() - started < std::chrono::seconds(9));
  sleeper.Stop(std::chrono::seconds(20));
  REQUIRE(node.Leftovers() == 0);
}

// A 0.1.x gateway with GitHub's provider profile imported: the session's
// GitHub token (for the agent's git; no base URL carries it) goes through a
// per-session OpenShell provider.
FakeOptions WithProviders() {
  FakeOptions options = Version("0.1.10");
  options.imported_profiles = {"github"};
  return options;
}

// A policy that allows what the github profile's endpoints are: a provider
// is used only when the policy allows every one.
void AllowGitHub(const std::string& repo) {
  fs::create_directories(repo + "/.mojoup");
  std::ofstream(repo + "/.mojoup/policy.json")
      << R"({"agents": {"network": {"allow": [{"host": "api.github.com", "ports": [443]}, )"
      << R"({"host": "github.com", "ports": [443]}]}}})";
}

constexpr const char* kGitHubToken = "ghp_REALTOKEN0123456789abcdefghijklmnopqrstu";

TEST_CASE("openshell runtime with providers: path, exit code, key kept out, sign-in stays in",
          "[openshell-run]") {
  // Claude Code's git reads GITHUB_TOKEN, which its base URL does not carry.
  REQUIRE_WORLD();
  Node node(WithProviders());
  AllowGitHub(node.repo);
  node.env.push_back("GITHUB_TOKEN=" + std::string(kGitHubToken));
  const std::string credentials = node.home + "/.claude/.credentials.json";
  fs::create_directories(node.home + "/.claude");
  std::ofstream(credentials) << mojoup::test::ClaudeCredentials("ada", 1);
  for (const std::string& path : {node.home + "/.claude", credentials}) {
    REQUIRE(chown(path.c_str(), kNobody, kNobody) == 0);
  }
  REQUIRE(chmod(credentials.c_str(), 0600) == 0);
  Run run = node.Sh("pwd; echo \"$GITHUB_TOKEN\" > token.txt; printf '%s' '" +
                        mojoup::test::ClaudeCredentials("ada", 2) +
                        "' > $HOME/.claude/.credentials.json; exit 7",
                    {"--tool", "claude-code", "--credential", "GITHUB_TOKEN"});
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 7);
  REQUIRE(run.result.out == node.repo + "\n");
  // The sandbox held OpenShell's placeholder, never the token.
  const std::string seen = Slurp(node.repo + "/token.txt");
  REQUIRE(std::regex_search(seen, std::regex(R"(^openshell:resolve:env:v[0-9]+_GITHUB_TOKEN\n$)")));
  REQUIRE_THAT(run.result.out + run.result.err, !Contains(kGitHubToken));
  // OpenShell got the token through the CLI's environment, not its command
  // line, in a provider of the session's own that is gone with it.
  const std::string calls = Slurp(node.calls);
  REQUIRE(std::regex_search(
      calls,
      std::regex(
          R"(\["[^"]*openshell","provider","create","--name","(mojoup-[0-9a-f]{12})-github","--type","github","--credential","GITHUB_TOKEN"\])")));
  REQUIRE(std::regex_search(calls, std::regex(R"("--provider","mojoup-[0-9a-f]{12}-github")")));
  REQUIRE_THAT(calls, !Contains(kGitHubToken));
  REQUIRE(Slurp(credentials) == mojoup::test::ClaudeCredentials("ada", 1));
  REQUIRE(run.result.err.find("written back") == std::string::npos);
  REQUIRE(node.Providers().empty());
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("openshell runtime with providers: a SIGKILLed node leaves no provider",
          "[openshell-run]") {
  REQUIRE_WORLD();
  Node node(WithProviders());
  AllowGitHub(node.repo);
  node.env.push_back("GITHUB_TOKEN=" + std::string(kGitHubToken));
  std::vector<std::unique_ptr<BackgroundProcess>> sessions;
  for (int i = 0; i < 2; ++i) {
    sessions.push_back(std::make_unique<BackgroundProcess>(
        node.env, node.Cli({"run", "--repo", node.repo, "--tool", "claude-code", "--credential",
                            "GITHUB_TOKEN", "--", "sleep", "600"})));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (node.Providers().size() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (auto& session : sessions) UNSCOPED_INFO(session->Stderr());
  REQUIRE(node.Providers().size() == 2);
  for (auto& session : sessions) kill(session->pid(), SIGKILL);
  for (auto& session : sessions) session->Stop();
  Run status = RunWithEnv(node.env, node.Cli({"status", "--json"}), std::chrono::seconds(90));
  INFO(status.result.err);
  REQUIRE(status.result.exit_code == 0);
  REQUIRE(node.Providers().empty());
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("openshell runtime: a terminal's input, size and size changes reach the command",
          "[openshell-run]") {
  // OpenShell's interactive exec (`sandbox exec --tty` with a terminal on
  // stdin) streams input as it is typed and forwards window changes;
  // before, the runtime refused it.
  REQUIRE_WORLD();
  const Release release = GENERATE(from_range(Releases()));
  INFO("OpenShell " << release.name);
  Node node(release.options);
  const std::vector<std::string> argv =
      node.Cli({"run", "--repo", node.repo, "--", "/bin/sh", "-c",
                "echo ready; read line; echo \"got:$line\"; stty size; "
                "while [ \"$(stty size)\" != '40 120' ]; do sleep 0.1; done; echo resized"});
  winsize size{};
  size.ws_row = 33;
  size.ws_col = 101;
  int master = -1;
  pid_t pid = forkpty(&master, nullptr, nullptr, &size);
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (const std::string& entry : node.env) putenv(const_cast<char*>(entry.c_str()));
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  // A failed check below ends the session at once rather than leaving it
  // waiting for input until the test's timeout.
  absl::Cleanup end_session = [&] {
    if (waitpid(pid, nullptr, WNOHANG) == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (master >= 0) close(master);
  };
  std::string screen;
  auto read_until = [&](const std::string& text,
                        std::chrono::seconds wait = std::chrono::seconds(60)) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (screen.find(text) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd fd{master, POLLIN, 0};
      if (poll(&fd, 1, 100) <= 0) continue;
      char buf[4096];
      const ssize_t n = read(master, buf, sizeof buf);
      if (n <= 0) break;
      screen.append(buf, static_cast<std::size_t>(n));
    }
    return screen.find(text) != std::string::npos;
  };
  // The command waits for a line only a streamed terminal can give it.
  const bool ready = read_until("ready");
  INFO(screen);
  REQUIRE(ready);
  REQUIRE(write(master, "hello\r", 6) == 6);
  const bool answered = read_until("got:hello");
  INFO(screen);
  REQUIRE(answered);
  REQUIRE(read_until("33 101"));
  // A window change on our terminal reaches the command's terminal.
  size.ws_row = 40;
  size.ws_col = 120;
  REQUIRE(ioctl(master, TIOCSWINSZ, &size) == 0);
  const bool resized = read_until("resized", std::chrono::seconds(20));
  INFO(screen);
  REQUIRE(resized);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    pollfd fd{master, POLLIN, 0};  // keep the terminal drained
    char buf[4096];
    if (poll(&fd, 1, 100) > 0 && read(master, buf, sizeof buf) <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  close(master);
  master = -1;
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE_THAT(Slurp(node.calls), Contains(R"("exec","-n")"));
  REQUIRE_THAT(Slurp(node.calls), Contains(R"("--tty")"));
  REQUIRE(node.Leftovers() == 0);
}

// A key no provider can carry keeps its stand-in, and the user is told:
// before v0.0.103 (a placeholder resolved on any host), at 0.1.x without
// profiles, and with a profile whose endpoints the policy does not allow.
void CheckKeysNoProviderCarries() {
  // Before v0.0.103 a provider's placeholder resolved on any host.
  Node old(Version("0.0.100"));
  Run run =
      RunWithEnv(old.env,
                 old.Cli({"run", "--repo", old.repo, "--tool", "copilot", "--credential",
                          "TEST_KEY=api.github.com", "--", "/bin/sh", "-c", "echo $TEST_KEY"}),
                 std::chrono::seconds(90));
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.err, Contains("would place TEST_KEY on any host"));
  REQUIRE_THAT(run.result.out, Contains("tk-live-"));
  REQUIRE_THAT(run.result.out, !Contains(kRealKey));
  // 0.1.x ships no profiles: none is imported here.
  Node bare(Version("0.1.10"));
  run = RunWithEnv(bare.env,
                   bare.Cli({"run", "--repo", bare.repo, "--tool", "copilot", "--credential",
                             "TEST_KEY=api.github.com", "--", "/bin/sh", "-c", "echo $TEST_KEY"}),
                   std::chrono::seconds(90));
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.err, Contains("no provider profile that places TEST_KEY only on "
                                        "api.github.com"));
  REQUIRE_THAT(run.result.out, !Contains(kRealKey));
  REQUIRE(bare.Leftovers() == 0);
  // A profile whose endpoints the policy does not allow: with
  // providers_v2_enabled the gateway would open them to the sandbox.
  Node closed(WithProviders());
  closed.env.push_back("GITHUB_TOKEN=" + std::string(kGitHubToken));
  fs::create_directories(closed.repo + "/.mojoup");
  std::ofstream(closed.repo + "/.mojoup/policy.json")
      << R"({"agents": {"network": {"allow": [{"host": "api.github.com", "ports": [443]}]}}})";
  run = RunWithEnv(closed.env,
                   closed.Cli({"run", "--repo", closed.repo, "--tool", "claude-code",
                               "--credential", "GITHUB_TOKEN=api.github.com,github.com", "--",
                               "/bin/sh", "-c", "echo $GITHUB_TOKEN"}),
                   std::chrono::seconds(90));
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.err, Contains("only on hosts the policy allows"));
  REQUIRE_THAT(run.result.out, !Contains("openshell:resolve:env:"));
  REQUIRE(closed.Providers().empty());
  REQUIRE(closed.Leftovers() == 0);
}

TEST_CASE("openshell runtime: gateway faults and old versions are one sentence",
          "[openshell-run]") {
  REQUIRE_WORLD();
  // A gateway the doctor fails runs the command without a sandbox (exit 0,
  // the node's role only prefers one); a refused create fails the run.
  // Either way: one sentence, and nothing left.
  auto said = [](const FakeOptions& options, int exit_code,
                 const std::vector<std::string>& sentences) {
    Node node(options);
    Run run = node.Sh("true");
    INFO(run.result.err);
    REQUIRE(run.result.exit_code == exit_code);
    for (const std::string& text : sentences) REQUIRE_THAT(run.result.err, Contains(text));
    REQUIRE(node.Leftovers() == 0);
  };
  SECTION("bind mounts off") {
    FakeOptions options;
    options.enable_bind_mounts = false;
    said(options, 1, {"enable_bind_mounts = true"});
  }
  SECTION("too old for the JSON the runtime reads") {
    mojoup::sandbox::testing::FakeOpenShellSandboxOptions options;
    options.version = "0.0.60";
    Node node(options);
    Run run = node.Sh("true");
    // The node's role only prefers a sandbox: it runs without one and says why.
    REQUIRE(run.result.exit_code == 0);
    REQUIRE_THAT(run.result.err, Contains("without a sandbox"));
    REQUIRE_THAT(run.result.err, Contains("0.0.92 or later"));
    // A repository that requires one is refused.
    fs::create_directories(node.repo + "/.mojoup");
    std::ofstream(node.repo + "/.mojoup/policy.json") << R"({"agents": {"sandbox": "required"}})";
    Run refused = node.Sh("true");
    REQUIRE(refused.result.exit_code == 1);
    REQUIRE_THAT(refused.result.err, Contains("requires a sandbox"));
  }
  SECTION("a create that fails") {
    FakeOptions options;
    options.fail_create = "image pull failed: registry unreachable";
    said(options, 1, {"OpenShell could not create the sandbox", "registry unreachable"});
  }
  SECTION("a sandbox in phase Error") {
    FakeOptions options;
    options.phase_error = true;
    said(options, 1, {"went into phase Error"});
  }
  SECTION("a gateway that is down: no sandbox, and the reason") {
    FakeOptions options;
    options.gateway = "unreachable";
    said(options, 0, {"without a sandbox", "gateway"});
  }
  SECTION("a key no provider can carry keeps its stand-in, and the user is told") {
    CheckKeysNoProviderCarries();
  }
  SECTION("a gateway that answers only over HTTP runs nothing in it") {
    FakeOptions options;
    options.gateway = "connected_http";
    said(options, 0, {"without a sandbox", "HTTP"});
  }
  SECTION("a 0.0.x CLI and a 0.1.x gateway are not mixed") {
    FakeOptions options = Version("0.0.111");
    options.gateway_version = "0.1.10";
    said(options, 0, {"without a sandbox", "cannot be mixed"});
  }
  SECTION("0.1.x: caller driver config off by default") {
    FakeOptions options = Version("0.1.10");
    options.allow_driver_config.reset();
    said(options, 1, {"allow_driver_config = true"});
  }
  SECTION("0.1.x: resource admission refuses host binds") {
    FakeOptions options = Version("0.1.10");
    options.bind_mount_admission = "enforced";
    said(options, 1, {"resource_admission"});
  }
  SECTION("a gateway that maps host.openshell.internal elsewhere is refused") {
    FakeOptions options;
    options.host_gateway_ip = "192.0.2.10";
    said(options, 1, {"to \"192.0.2.10\" in its sandboxes", "node.sandbox.openshell_host_address"});
  }
  SECTION("v0.0.100 runs a uid of 1000 or more") {
    mojoup::sandbox::testing::FakeOpenShellSandboxOptions options;
    options.version = "0.0.100";
    Node node(options);
    Run run = node.Sh("id -u");
    REQUIRE(run.result.exit_code == 0);
    REQUIRE(run.result.out == "65534\n");
    // Up to v0.0.110 the sandbox is created with a command that ends: `-- true`.
    REQUIRE_THAT(Slurp(node.calls), Contains(R"("--","true"])"));
  }
  SECTION("codex finds the proxy through its own config") {
    Node node;
    Run run = node.Sh("cat $HOME/.codex/config.toml", {"--tool", "codex"});
    REQUIRE(run.result.exit_code == 0);
    REQUIRE_THAT(run.result.out, Contains("openai_base_url = \"http://host.openshell.internal:"));
  }
}

}  // namespace

namespace {

// doctor --json's check `id`: its status and summary; and the verdict.
std::tuple<std::string, std::string, std::string> DoctorCheck(const Node& node,
                                                              const std::string& id) {
  Run run = RunWithEnv(node.env, node.Cli({"doctor", "--json"}), std::chrono::seconds(60));
  INFO(run.result.out << run.result.err);
  rapidjson::Document doc;
  doc.Parse(run.result.out.c_str());
  REQUIRE((!doc.HasParseError() && doc.IsObject() && doc["checks"].IsArray()));
  for (const auto& check : doc["checks"].GetArray()) {
    if (check["id"].GetString() != id) continue;
    return {check["status"].GetString(), check["summary"].GetString(), doc["verdict"].GetString()};
  }
  FAIL("doctor --json has no check " << id);
  return {};
}

TEST_CASE("openshell runtime on a named gateway: -g NAME on every call, doctor names it",
          "[openshell-run]") {
  REQUIRE_WORLD();
  FakeOptions options;
  options.gateway_name = "team-gw";
  Node node(options);
  node.env.push_back("XDG_CONFIG_HOME=" + node.home + "/.config");
  node.Configure(R"(, "node.sandbox.openshell_gateway": "team-gw")");
  Run run = node.Sh("echo on-gateway");
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(run.result.out == "on-gateway\n");
  // Every call the node made, the session's exec and the teardown among
  // them, named the gateway first.
  std::istringstream calls(Slurp(node.calls));
  std::size_t seen = 0;
  bool exec = false;
  for (std::string line; std::getline(calls, line); ++seen) {
    INFO(line);
    REQUIRE(std::regex_search(line, std::regex(R"(^\["[^"]*openshell","-g","team-gw",)")));
    exec = exec || line.find(R"("-g","team-gw","sandbox","exec")") != std::string::npos;
  }
  REQUIRE(seen >= 4);
  REQUIRE(exec);
  REQUIRE(node.Leftovers() == 0);

  // The user's record says the gateway is remote: doctor checks it by its
  // status, metadata and credentials, and names it.
  mojoup::sandbox::testing::OpenShellGatewayConfig gateway;
  gateway.name = "team-gw";
  gateway.endpoint = "https://gw.example.com:8443";
  gateway.remote = true;
  mojoup::sandbox::testing::WriteOpenShellGatewayConfig(node.home + "/.config", gateway);
  for (const auto& entry : fs::recursive_directory_iterator(node.home)) {
    REQUIRE(lchown(entry.path().c_str(), kNobody, kNobody) == 0);
  }
  auto [status, summary, verdict] = DoctorCheck(node, "openshell.gateway");
  CHECK(status == "pass");
  CHECK(summary ==
        "The remote OpenShell gateway team-gw at https://gw.example.com:8443 is "
        "connected");
  fs::remove_all(node.home + "/.config/openshell/gateways/team-gw/mtls");
  std::tie(status, summary, verdict) = DoctorCheck(node, "openshell.gateway");
  CHECK(status == "fail");
  CHECK_THAT(verdict, Contains("This machine cannot sandbox agents: The OpenShell gateway team-gw "
                               "at https://gw.example.com:8443 is remote and this user has no "
                               "mTLS credentials for it"));
}

}  // namespace

namespace {

TEST_CASE("openshell runtime: git config, hooks and the policy stay out of the session's reach",
          "[openshell-run][escape]") {
  REQUIRE_WORLD();
  Node node;
  const std::string policy = R"({"agents": {"sandbox": "preferred"}})";
  fs::create_directories(node.repo + "/.mojoup");
  std::ofstream(node.repo + "/.mojoup/policy.json") << policy;
  for (const std::string& path : {node.repo + "/.mojoup", node.repo + "/.mojoup/policy.json"}) {
    REQUIRE(chown(path.c_str(), kNobody, kNobody) == 0);
  }
  const std::string config_before = Slurp(node.repo + "/.git/config");
  Run run = node.Sh(R"(
try() { if sh -c "$2" 2>/dev/null; then echo "ESCAPED:$1"; fi; }
try config "echo '[core] fsmonitor = touch /tmp/pwned' >> .git/config"
try hook "echo x > .git/hooks/post-checkout"
try gitdir "mv .git .git-real"
try policy "echo '{}' > .mojoup/policy.json"
try policy-dir "mv .mojoup .mojoup-old"
echo attacks-done)");
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("attacks-done"));
  REQUIRE_THAT(run.result.out, !Contains("ESCAPED"));
  REQUIRE(Slurp(node.repo + "/.git/config") == config_before);
  REQUIRE(Slurp(node.repo + "/.mojoup/policy.json") == policy);

  SECTION("a policy planted where there was none is not trusted by the next run") {
    fs::remove_all(node.repo + "/.mojoup");
    Run plant = node.Sh("mkdir .mojoup && echo '{}' > .mojoup/policy.json && echo planted");
    INFO(plant.result.out << plant.result.err);
    REQUIRE_THAT(plant.result.out, Contains("planted"));
    Run next = node.Sh("echo ran");
    INFO(next.result.out << next.result.err);
    REQUIRE(next.result.exit_code == 1);
    REQUIRE_THAT(next.result.err, Contains("changed while sandboxed session"));
    REQUIRE_THAT(next.result.out, !Contains("ran"));
  }
  SECTION("a .git file naming a host directory is refused before anything is created") {
    fs::rename(node.repo + "/.git", node.dir / "git-real");
    std::ofstream(node.repo + "/.git") << "gitdir: /etc\n";
    const std::size_t calls_before = Slurp(node.calls).size();
    Run next = node.Sh("echo ran");
    INFO(next.result.out << next.result.err);
    REQUIRE(next.result.exit_code == 1);
    REQUIRE_THAT(next.result.err, Contains("not a linked worktree's entry"));
    REQUIRE_THAT(Slurp(node.calls).substr(calls_before), !Contains("\"create\""));
  }
  REQUIRE(node.Leftovers() == 0);
}

// --- What one exec can carry ------------------------------------------------

// OpenShell's gateway refuses an exec over its limits (environment values of
// at most 32 KiB without a line break, arguments of at most 32 KiB): the
// runtime stages the rest in the sandbox, and refuses what is too much for
// that before anything is created.
TEST_CASE("openshell runtime: what one exec cannot carry is staged, or refused before create",
          "[openshell-run]") {
  REQUIRE_WORLD();
  const Release release = GENERATE(from_range(Releases()));
  INFO("OpenShell " << release.name);
  Node node(release.options);
  SECTION("a 40 KiB git identity with line breaks and a 40 KiB argument arrive whole") {
    const std::string name = "first line\n" + std::string(40 * 1024, 'n') + "\nlast line";
    const std::string config = node.repo + "/.git/config";
    REQUIRE(
        RunWithEnv({}, {"git", "config", "--file", config, "user.name", name}).result.exit_code ==
        0);
    REQUIRE(chown(config.c_str(), kNobody, kNobody) == 0);
    const std::string argument = std::string(40 * 1024, 'a') + "'\n";
    Run run = RunWithEnv(node.env,
                         node.Cli({"run", "--repo", node.repo, "--", "/bin/sh", "-c",
                                   "printf %s \"$GIT_AUTHOR_NAME\" | sha256sum; "
                                   "printf %s \"$1\" | sha256sum",
                                   "sh", argument}),
                         std::chrono::seconds(90));
    INFO(run.result.err);
    REQUIRE(run.result.exit_code == 0);
    CHECK(run.result.out == mojoup::internal::Sha256Hex(name) + "  -\n" +
                                mojoup::internal::Sha256Hex(argument) + "  -\n");
    // In the sandbox, by way of the stage.
    CHECK_THAT(Slurp(node.calls), Contains("/tmp/.mojoup-stage-"));
  }
  SECTION("more than 4 MiB to stage: exit 2 before create, nothing left") {
    // The kernel takes arguments of 4.8 MiB with a larger stack limit.
    rlimit stack{};
    REQUIRE(getrlimit(RLIMIT_STACK, &stack) == 0);
    const rlimit saved = stack;
    stack.rlim_cur = 64ull << 20;
    if (stack.rlim_max != RLIM_INFINITY && stack.rlim_max < stack.rlim_cur) {
      stack.rlim_cur = stack.rlim_max;
    }
    REQUIRE(setrlimit(RLIMIT_STACK, &stack) == 0);
    absl::Cleanup restore = [&saved] { setrlimit(RLIMIT_STACK, &saved); };
    std::vector<std::string> args = {"run", "--repo", node.repo, "--", "true"};
    args.resize(args.size() + 40, std::string(120 * 1024, 'x'));
    const std::size_t calls_before = Slurp(node.calls).size();
    Run run = RunWithEnv(node.env, node.Cli(args), std::chrono::seconds(90));
    INFO(run.result.err);
    CHECK(run.result.exit_code == 2);
    CHECK_THAT(run.result.err, Contains("more than the 4194304 its exec can carry"));
    CHECK_THAT(Slurp(node.calls).substr(calls_before), !Contains("\"create\""));
  }
  REQUIRE(node.Leftovers() == 0);
}

// --- Ask on the openshell runtime ---------------------------------------------

// The openshell-docker bridge's gateway: where a sandbox reaches this host.
std::string OpenShellBridgeGateway() {
  Run inspected = RunWithEnv({}, {"docker", "network", "inspect", "-f",
                                  "{{(index .IPAM.Config 0).Gateway}}", "openshell-docker"});
  REQUIRE(inspected.result.exit_code == 0);
  std::string address = inspected.result.out;
  while (!address.empty() && address.back() == '\n') address.pop_back();
  return address;
}

// The session's approvals as `approvals --json` lists them: "HOST STATE" each.
std::vector<std::string> ApprovalsOf(const Node& node, const std::string& session) {
  Run listed = RunWithEnv(node.env, node.Cli({"approvals", session, "--json"}));
  rapidjson::Document doc;
  doc.Parse(listed.result.out.c_str());
  std::vector<std::string> found;
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("approvals")) return found;
  for (const auto& a : doc["approvals"].GetArray()) {
    found.push_back(std::string(a["host"].GetString()) + " " + a["state"].GetString());
  }
  return found;
}

// The running session's id, once its record is there.
std::string RunningSession(const Node& node) {
  std::string id;
  mojoup::test::WaitFor(
      [&] {
        if (!fs::exists(node.state + "/sessions")) return false;
        for (const auto& entry : fs::directory_iterator(node.state + "/sessions")) {
          if (entry.path().extension() == ".json") id = entry.path().stem().string();
        }
        return !id.empty();
      },
      std::chrono::seconds(90));
  return id;
}

// The session's audit, its lines "EVENT DETAIL" with every seq following the
// last; waits for a line containing `until`.
std::vector<std::string> AuditUntil(const Node& node, const std::string& session,
                                    const std::string& until) {
  std::vector<std::string> lines;
  mojoup::test::WaitFor(
      [&] {
        lines.clear();
        Run audit = RunWithEnv(node.env, node.Cli({"audit", session}));
        std::istringstream text(audit.result.out);
        std::uint64_t seq = 0;
        bool found = false;
        for (std::string line; std::getline(text, line);) {
          rapidjson::Document doc;
          doc.Parse(line.c_str());
          if (doc.HasParseError() || doc["seq"].GetUint64() != ++seq) return false;
          lines.push_back(line);
          found = found || line.find(until) != std::string::npos;
        }
        return found;
      },
      std::chrono::seconds(60));
  return lines;
}

bool AnyLine(const std::vector<std::string>& lines, std::initializer_list<std::string> parts) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) {
    return std::all_of(parts.begin(), parts.end(), [&](const std::string& part) {
      return line.find(part) != std::string::npos;
    });
  });
}

// The agent's side: each request once, then (when "go" appears) again.
std::string AskingScript(const std::string& port) {
  auto get = [&](const std::string& tag, const std::string& host, const std::string& path) {
    return "curl -s -o /dev/null -w '" + tag + ":%{http_code}\\n' http://" + host + ":" + port +
           path + "; ";
  };
  return get("first", "granted.test", "/one") + get("no", "no.test", "/") +
         get("blocked", "blocked.test", "/") + "while [ ! -e go ]; do sleep 0.1; done; " +
         get("retry", "granted.test", "/two") + get("again", "no.test", "/");
}

// The next line of the session's output that starts with `tag`.
std::string Answer(BackgroundProcess& run, const std::string& tag) {
  for (int i = 0; i < 20; ++i) {
    std::optional<std::string> line = run.ReadLine(std::chrono::seconds(90));
    if (!line) break;
    if (line->rfind(tag, 0) == 0) return *line;
  }
  FAIL("no line " << tag << "; stderr: " << run.Stderr());
  return "";
}

TEST_CASE("openshell runtime with ask: refused at once, asked, approved for the session, retried",
          "[openshell-run][ask]") {
  REQUIRE_WORLD();
  const std::string gateway = OpenShellBridgeGateway();
  EchoServer upstream{nullptr, gateway};
  const std::string port = std::to_string(upstream.port());
  FakeOptions options = Version("0.0.111");
  for (const char* host : {"granted.test", "no.test", "blocked.test"}) {
    options.extra_hosts.push_back(std::string(host) + ":" + gateway);
  }
  Node node(options);
  node.Configure(R"(, "node.proxy.ask": true)");
  fs::create_directories(node.repo + "/.mojoup");
  std::ofstream(node.repo + "/.mojoup/policy.json")
      << R"({"agents": {"network": {"ask": true, "deny": [{"host": "blocked.test"}]}}})";
  // The operator's pins: names this node cannot resolve are never asked.
  std::vector<std::string> argv = {"run", "--repo", node.repo};
  for (const char* host : {"granted.test", "no.test"}) {
    argv.insert(argv.end(), {"--resolve", std::string(host) + ":" + port + ":" + gateway});
  }
  argv.insert(argv.end(), {"--", "/bin/sh", "-c", AskingScript(port)});
  BackgroundProcess run(node.env, node.Cli(argv));
  // OpenShell's proxy refuses at once: nothing is held.
  REQUIRE(Answer(run, "first:") == "first:403");
  REQUIRE(Answer(run, "no:") == "no:403");
  REQUIRE(Answer(run, "blocked:") == "blocked:403");
  const std::string session = RunningSession(node);
  REQUIRE_FALSE(session.empty());
  std::vector<std::string> asked;
  mojoup::test::WaitFor(
      [&] {
        asked = ApprovalsOf(node, session);
        return asked.size() >= 2;
      },
      std::chrono::seconds(60));
  // The host a rule denies is never asked.
  REQUIRE(asked == std::vector<std::string>{"granted.test pending", "no.test pending"});

  // A grant cannot be for one request here: once is refused, session applies.
  Run once = RunWithEnv(node.env, node.Cli({"approve", session, "1"}));
  REQUIRE(once.result.exit_code != 0);
  REQUIRE_THAT(once.result.err, Contains("approve with --scope session"));
  Run approved = RunWithEnv(node.env, node.Cli({"approve", session, "1", "--scope", "session"}));
  INFO(approved.result.err);
  REQUIRE(approved.result.exit_code == 0);
  Run denied = RunWithEnv(node.env, node.Cli({"deny", session, "2", "--reason", "not needed"}));
  REQUIRE(denied.result.exit_code == 0);
  // Applied once OpenShell loaded it; then the agent's retry passes.
  std::vector<std::string> audit = AuditUntil(node, session, "\"kind\":\"grant\"");
  REQUIRE(AnyLine(audit, {"\"kind\":\"grant\"", "now allows granted.test:" + port}));
  std::ofstream(node.repo + "/go").close();
  REQUIRE(Answer(run, "retry:") == "retry:200");
  REQUIRE(Answer(run, "again:") == "again:403");
  std::optional<int> status = run.Wait(std::chrono::seconds(90));
  REQUIRE(status);
  REQUIRE(WEXITSTATUS(*status) == 0);
  REQUIRE_THAT(run.Stderr(), Contains("the agent was refused granted.test:" + port +
                                      " (approval 1); answer with `mojoup-node approve " + session +
                                      " 1 --scope session`"));
  std::vector<std::string> targets;
  for (const auto& seen : upstream.seen()) targets.push_back(seen.target);
  REQUIRE(targets == std::vector<std::string>{"/two"});

  // The whole audit: OpenShell's refusals, each named as its, the one asked
  // about, the decisions and the grant; no gap in seq.
  audit = AuditUntil(node, session, "session.end");
  REQUIRE(
      AnyLine(audit, {"\"event\":\"egress\"", "\"decision\":\"deny\"", "\"host\":\"granted.test\"",
                      "\"source\":\"openshell, approval 1\"", "\"reason\":\"policy_denied\""}));
  REQUIRE(AnyLine(
      audit, {"\"event\":\"egress\"", "\"host\":\"blocked.test\"", "not asked: a rule denies"}));
  REQUIRE(AnyLine(audit, {"\"event\":\"approval.request\"", "\"host\":\"granted.test\""}));
  REQUIRE(AnyLine(audit, {"\"event\":\"approval.decision\"", "\"state\":\"approved\""}));
  REQUIRE(AnyLine(audit, {"\"event\":\"approval.decision\"", "\"state\":\"denied\""}));
  // The denied host asked again is refused, and not asked again.
  REQUIRE(std::count_if(audit.begin(), audit.end(), [](const std::string& line) {
            return line.find("\"approval.request\"") != std::string::npos;
          }) == 2);
  REQUIRE(node.Leftovers() == 0);
}

}  // namespace

// `mojoup-node run`, `status` and `stop` with node.sandbox.runtime openshell,
// against the fake `openshell` backed by real containers on the real dockerd.
// OpenShell does not run sandboxes as root, so the CLI runs as `nobody`
// (with the docker group, to reach the daemon).
#include <grp.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "../support/background_process.h"
#include "../support/echo_server.h"
#include "../support/sandbox_image.h"
#include "../support/signin_files.h"
#include "../support/test_support.h"
#include "mojoup/probe/docker_api.h"
#include "mojoup/probe/kernel.h"
#include "mojoup/sandbox/credproxy/session_ca.h"
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
  auto kernel = mojoup::probe::MakeSystemKernel();
  auto endpoint = mojoup::probe::ResolveDockerEndpoint(*kernel);
  auto api = mojoup::probe::MakeDockerApi();
  // OpenShell's gateway makes this bridge; the fake's sandboxes join it.
  if (api->Get(*endpoint, "/v1.40/networks/openshell", std::chrono::seconds(5)).status != 200) {
    auto made = api->Send(*endpoint, "POST", "/v1.40/networks/create",
                          R"({"Name": "openshell", "Driver": "bridge"})", std::chrono::seconds(10));
    if (made.status != 201) return "cannot create the openshell network: " + made.body;
  }
  return "";
}

#define REQUIRE_WORLD()                                                        \
  do {                                                                         \
    static const std::string missing = Missing();                              \
    if (!missing.empty()) MOJOUP_SKIP("openshell runtime tests: " << missing); \
  } while (false)

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
    dir.Write("node.json", R"({"node.sandbox.engine": "docker", "node.sandbox.role": true,
        "node.sandbox.runtime": "openshell", "node.sandbox.image": ")" +
                               std::string(kImage) +
                               R"(", "node.sandbox.allowed_users": "nobody"})");
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
    return left;
  }
};

TEST_CASE("openshell runtime: repository at its path, owner kept, keys through the base URL",
          "[openshell-run]") {
  REQUIRE_WORLD();
  Node node;
  auto upstream_ca = *mojoup::sandbox::credproxy::SessionCa::Create("upstream test CA");
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
  // The policy went to OpenShell as a file, with the user's uid.
  const std::string calls = Slurp(node.calls);
  REQUIRE_THAT(calls, Contains("\"--driver-config-json\""));
  REQUIRE_THAT(calls, Contains("\"--detach\""));
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("openshell runtime: exit code, sign-ins staged and written back", "[openshell-run]") {
  REQUIRE_WORLD();
  Node node;
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
  REQUIRE_THAT(run.result.out, Contains(mojoup::test::CodexAuth("ada", 1)));
  REQUIRE(Slurp(auth) == mojoup::test::CodexAuth("ada", 2));
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("openshell runtime: a sign-in swapped for another account's is not written back",
          "[openshell-run]") {
  // The openshell runtime shares the staging home and the write-back with
  // the native one; the agent's swap must fail the same way here.
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
  REQUIRE_THAT(run.result.err,
               Contains(credentials + " was not written back: it is not signed in to the same "
                                      "account: claudeAiOauth.subscriptionType differs"));
  REQUIRE_THAT(run.result.err, Contains("kept at " + credentials + ".sandbox-"));
  bool kept = false;
  for (const auto& entry : fs::directory_iterator(node.home + "/.claude")) {
    if (entry.path().filename().string().rfind(".credentials.json.sandbox-", 0) == 0) {
      kept = Slurp(entry.path().string()) == eve;
    }
  }
  REQUIRE(kept);
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("openshell runtime: a SIGKILLed node leaves nothing after status", "[openshell-run]") {
  REQUIRE_WORLD();
  Node node;
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
  REQUIRE(running() == 3);
  for (auto& session : sessions) kill(session->pid(), SIGKILL);
  for (auto& session : sessions) session->Stop();
  Run status = RunWithEnv(node.env, node.Cli({"status", "--json"}), std::chrono::seconds(90));
  INFO(status.result.err);
  REQUIRE(status.result.exit_code == 0);
  REQUIRE_THAT(status.result.out, Contains("\"sessions\":[]"));
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("openshell runtime: status lists a session; stop ends it", "[openshell-run]") {
  REQUIRE_WORLD();
  Node node;
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

TEST_CASE("openshell runtime: gateway faults and old versions are one sentence",
          "[openshell-run]") {
  REQUIRE_WORLD();
  SECTION("bind mounts off") {
    mojoup::sandbox::testing::FakeOpenShellSandboxOptions options;
    options.enable_bind_mounts = false;
    Node node(options);
    Run run = node.Sh("true");
    REQUIRE(run.result.exit_code == 1);
    REQUIRE_THAT(run.result.err, Contains("enable_bind_mounts = true"));
    REQUIRE(node.Leftovers() == 0);
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
    mojoup::sandbox::testing::FakeOpenShellSandboxOptions options;
    options.fail_create = "image pull failed: registry unreachable";
    Node node(options);
    Run run = node.Sh("true");
    REQUIRE(run.result.exit_code == 1);
    REQUIRE_THAT(run.result.err, Contains("OpenShell could not create the sandbox"));
    REQUIRE_THAT(run.result.err, Contains("registry unreachable"));
    REQUIRE(node.Leftovers() == 0);
  }
  SECTION("a sandbox in phase Error") {
    mojoup::sandbox::testing::FakeOpenShellSandboxOptions options;
    options.phase_error = true;
    Node node(options);
    Run run = node.Sh("true");
    REQUIRE(run.result.exit_code == 1);
    REQUIRE_THAT(run.result.err, Contains("went into phase Error"));
    REQUIRE(node.Leftovers() == 0);
  }
  SECTION("a gateway that is down: no sandbox, and the reason") {
    mojoup::sandbox::testing::FakeOpenShellSandboxOptions options;
    options.gateway = "unreachable";
    Node node(options);
    Run run = node.Sh("true");
    REQUIRE(run.result.exit_code == 0);
    REQUIRE_THAT(run.result.err, Contains("without a sandbox"));
    REQUIRE_THAT(run.result.err, Contains("gateway"));
  }
  SECTION("a tool with no base-URL setting is told its keys are not covered") {
    Node node;
    Run run = node.Sh("true", {"--tool", "copilot"});
    REQUIRE(run.result.exit_code == 0);
    REQUIRE_THAT(run.result.err, Contains("copilot has no base-URL setting"));
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

}  // namespace

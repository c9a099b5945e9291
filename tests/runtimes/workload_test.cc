// One agent-shaped workload on every runtime: the native one, and openshell
// on the fake at each modelled release. As a normal user in the docker
// group with the repository under $HOME, through `mojoup-node run`, each row
// expects the same outcome on each runtime.
//
// The network rows reach upstreams on a bridge whose addresses OpenShell's
// proxy counts as public, as real APIs' are (public_bridge.h). The native
// runtime finds them by `--resolve`, the fake's sandboxes by their
// /etc/hosts, where OpenShell's proxy looks first.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <filesystem>
#include <string>
#include <vector>

#include "../support/background_process.h"
#include "../support/echo_server.h"
#include "../support/public_bridge.h"
#include "../support/real_user.h"
#include "../support/test_support.h"
#include "mojoup/credproxy/session_ca.h"
#include "mojoup/sandbox/testing/fake_openshell_sandbox.h"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using mojoup::test::BackgroundProcess;
using mojoup::test::BinDir;
using mojoup::test::Described;
using mojoup::test::EchoServer;
using mojoup::test::RealUser;
using mojoup::test::Run;
using mojoup::test::UserNode;

struct Runtime {
  std::string name;
  std::string openshell;  // the fake's release; "" for the native runtime
  // A remote gateway on Kubernetes (the fake's kubernetes driver), named by
  // node.sandbox.openshell_gateway: the repository goes as a copy.
  bool kubernetes = false;
};

constexpr const char* kRemoteGateway = "k8s-remote";

std::vector<Runtime> Runtimes() {
  return {{"native", ""},
          {"openshell v0.0.92", "0.0.92"},
          {"openshell v0.0.111", "0.0.111"},
          {"openshell v0.1.10", "0.1.10"},
          {"openshell v0.0.111 on a remote Kubernetes gateway", "0.0.111", true}};
}

constexpr const char* kRealKey = "tk-live-REALKEY0123456789abcdefghijklmnopqrstuvwxyz";

constexpr const char* kNetwork = mojoup::test::kPublicBridge;
constexpr const char* kGateway = mojoup::test::kPublicBridgeGateway;

// HTTPS upstreams on the bridge under a CA of their own: exact.example.org
// (and its git remote), a.b.example.com for `*.example.com`.
struct Upstreams {
  explicit Upstreams(const UserNode& node) {
    REQUIRE(mojoup::test::WhyNoPublicBridge() == "");
    auto made = mojoup::credproxy::SessionCa::Create("runtimes upstream CA");
    REQUIRE(made.ok());
    ca = std::move(*made);
    exact = std::make_unique<EchoServer>(*ca->ServerContext("exact.example.org"), kGateway);
    deep = std::make_unique<EchoServer>(*ca->ServerContext("a.b.example.com"), kGateway);
    ca_file = node.root + "/upstream-ca.pem";
    node.user.Write(ca_file, ca->certificate_pem());
  }
  std::string ExactPort() const { return std::to_string(exact->port()); }
  std::string DeepPort() const { return std::to_string(deep->port()); }
  // What the sandboxes resolve, as /etc/hosts lines of the fake's.
  std::vector<std::string> Hosts() const {
    return {std::string("exact.example.org:") + kGateway,
            std::string("a.b.example.com:") + kGateway,
            std::string("denied.example.net:") + kGateway};
  }
  // run's flags, for the proxy of ours each runtime has.
  std::vector<std::string> Flags() const {
    return {"--resolve",     "exact.example.org:" + ExactPort() + ":" + kGateway,
            "--resolve",     "a.b.example.com:" + DeepPort() + ":" + kGateway,
            "--resolve",     "denied.example.net:" + ExactPort() + ":" + kGateway,
            "--upstream-ca", ca_file};
  }

  std::unique_ptr<mojoup::credproxy::SessionCa> ca;
  std::unique_ptr<EchoServer> exact, deep;
  std::string ca_file;
};

// A node of the user's on `runtime`. For openshell, the fake and its
// supervisor are copied where the user can run them (the build tree may be
// out of its reach) and named by node.sandbox.openshell_path.
class Workload {
 public:
  Workload(const RealUser& user, const Runtime& runtime,
           const std::string& image = mojoup::test::kSandboxImage)
      : node(user, image), upstreams(node) {
    if (runtime.openshell.empty()) return;
    const std::string dir = node.root + "/openshell";
    fs::create_directories(dir);
    for (const char* program : {"fake-openshell", "fake-openshell-sandbox"}) {
      fs::copy_file(BinDir() + "/" + program, dir + "/" + program,
                    fs::copy_options::overwrite_existing);
    }
    mojoup::sandbox::testing::FakeOpenShellSandboxOptions options;
    options.version = runtime.openshell;
    options.network = kNetwork;
    options.extra_hosts = upstreams.Hosts();
    options.upstream_ca = upstreams.ca_file;
    // A 0.1.x gateway set up as docs/openshell.md says: caller driver config on,
    // resource admission off (host binds need both).
    if (runtime.openshell.starts_with("0.1.")) {
      options.allow_driver_config = true;
      options.bind_mount_admission = "disabled";
    }
    std::string remote;
    if (runtime.kubernetes) {
      options.driver = "kubernetes";
      options.gateway_name = kRemoteGateway;
      options.remote = true;
      remote = std::string(", \"node.sandbox.openshell_gateway\": \"") + kRemoteGateway +
               "\", \"node.sandbox.openshell_remote\": \"yes\"";
      // The user registered it, as `openshell gateway add` leaves it.
      mojoup::sandbox::testing::OpenShellGatewayConfig registered;
      registered.name = kRemoteGateway;
      registered.endpoint = "https://k8s-remote.example.org";
      registered.remote = true;
      registered.active = false;
      mojoup::sandbox::testing::WriteOpenShellGatewayConfig(user.home + "/.config", registered);
      for (const auto& entry : fs::recursive_directory_iterator(user.home + "/.config")) {
        REQUIRE(::lchown(entry.path().c_str(), user.uid, user.gid) == 0);
      }
      REQUIRE(::chown((user.home + "/.config").c_str(), user.uid, user.gid) == 0);
    }
    mojoup::sandbox::testing::InstallFakeOpenShellSandbox(dir, dir + "/fake-openshell", options);
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      REQUIRE(::lchown(entry.path().c_str(), user.uid, user.gid) == 0);
    }
    REQUIRE(::chown(dir.c_str(), user.uid, user.gid) == 0);
    user.Write(node.config,
               "{\"node.sandbox.engine\": \"docker\", \"node.sandbox.role\": true, "
               "\"node.sandbox.runtime\": \"openshell\", \"node.sandbox.openshell_path\": \"" +
                   dir + "/openshell\", \"node.sandbox.image\": \"" + image +
                   "\", \"node.sandbox.openshell_host_address\": \"" + kGateway +
                   "\", \"node.sandbox.allowed_users\": \"" + user.name + "\"" + remote + "}\n");
    openshell_ = dir + "/openshell";
    gateway_ = runtime.kubernetes ? kRemoteGateway : "";
  }
  ~Workload() {
    // A failed row may leave a session whose `run` is gone: `status` reaps it.
    node.Cli({"status"});
  }
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  // `mojoup-node run -- ARGV` as the user, in the background.
  std::unique_ptr<BackgroundProcess> Start(const std::vector<std::string>& argv) const {
    std::vector<std::string> full = node.user.Prefix(node.env, node.repo);
    full.insert(full.end(), {node.user.bin + "/mojoup-node", "run", "--repo", node.repo, "--"});
    full.insert(full.end(), argv.begin(), argv.end());
    return std::make_unique<BackgroundProcess>(std::vector<std::string>{}, full);
  }

  // What the node left: its own count, and on openshell the sandboxes the
  // gateway still has.
  std::size_t Leftovers() const {
    std::size_t left = node.Leftovers();
    if (openshell_.empty()) return left;
    std::vector<std::string> list = {openshell_};
    if (!gateway_.empty()) list.insert(list.end(), {"-g", gateway_});
    list.insert(list.end(), {"sandbox", "list", "-o", "json"});
    Run listed = node.user.As(list);
    if (listed.result.exit_code != 0 || listed.result.out.find('[') == std::string::npos) {
      return left + 1;
    }
    left += listed.result.out.find("\"name\"") != std::string::npos ? 1 : 0;
    if (gateway_.empty()) return left;
    // On Kubernetes a sandbox's workspace volume too: every session the node
    // audited had one, labelled with its sandbox's name.
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(node.state + "/audit", ec)) {
      const std::string session = entry.path().stem().string();
      Run volumes = mojoup::test::RunWithEnv(
          {}, {"docker", "volume", "ls", "-q", "--filter",
               // The sandbox of a session with a hex id (docs/openshell.md).
               "label=openshell.ai/sandbox-name=mojoup-" + session.substr(0, 12)});
      if (volumes.result.exit_code != 0 || !volumes.result.out.empty()) ++left;
    }
    return left;
  }

  UserNode node;
  Upstreams upstreams;

 private:
  std::string openshell_;
  std::string gateway_;
};

// `run`'s stdout to its end, and its wait status.
std::pair<std::string, int> Finish(BackgroundProcess& run) {
  std::string out;
  while (auto line = run.ReadLine(std::chrono::seconds(60))) out += *line + "\n";
  return {out, run.Stop(std::chrono::seconds(20))};
}

// SIGINT and SIGTERM to `run` reach the command: one it traps exits as
// the trap says, one it does not dies of it, and run's exit code says so.
void CheckSignalsReachTheCommand(Workload& work) {
  for (const auto& [signal, name] : {std::pair{SIGINT, "INT"}, std::pair{SIGTERM, "TERM"}}) {
    INFO("SIG" << name);
    auto caught = work.Start({"/bin/sh", "-c",
                              std::string("trap 'echo caught; exit 9' ") + name +
                                  "; echo ready; while :; do sleep 0.2; done"});
    REQUIRE(caught->ReadLine(std::chrono::seconds(90)) == std::optional<std::string>("ready"));
    ::kill(caught->pid(), signal);
    auto [out, status] = Finish(*caught);
    INFO(caught->Stderr());
    CHECK(out == "caught\n");
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 9);

    auto killed = work.Start({"/bin/sh", "-c", "echo ready; exec sleep 600"});
    REQUIRE(killed->ReadLine(std::chrono::seconds(90)) == std::optional<std::string>("ready"));
    ::kill(killed->pid(), signal);
    auto [ignored, died] = Finish(*killed);
    INFO(killed->Stderr());
    CHECK(WIFEXITED(died));
    CHECK(WEXITSTATUS(died) == 128 + signal);
  }
}

// HTTPS through the runtime's proxy: an allowed host and a wildcard one
// answer (curl and git), a denied one is refused, and no way goes around.
void CheckHttpsThroughTheRuntime(Workload& work) {
  const UserNode& node = work.node;
  const Upstreams& up = work.upstreams;
  node.Policy(R"({"agents": {"network": {"allow": [{"host": "exact.example.org", "ports": [)" +
              up.ExactPort() + R"(]}, {"host": "*.example.com", "ports": [)" + up.DeepPort() +
              "]}]}}}");
  const std::string exact = "https://exact.example.org:" + up.ExactPort();
  const std::string denied = "https://denied.example.net:" + up.ExactPort();
  Run run = node.Sh("curl -sS " + exact +
                        "/hello | grep -c '\"method\": \"GET\"'; "
                        "curl -sS https://a.b.example.com:" +
                        up.DeepPort() +
                        "/deep | grep -c '\"method\"'; "
                        "git ls-remote " +
                        exact +
                        "/repo.git; "
                        "echo denied:$(curl -s -o /dev/null -w '%{http_connect}' " +
                        denied +
                        "/); "
                        "git ls-remote " +
                        denied +
                        "/repo.git >/dev/null 2>&1 || echo git-denied; "
                        "curl -s --noproxy '*' -m 5 -o /dev/null http://" +
                        kGateway + ":" + up.ExactPort() + "/ || echo direct-failed",
                    up.Flags());
  INFO(Described(run));
  CHECK(run.result.exit_code == 0);
  CHECK(run.result.out == std::string("1\n1\n") + mojoup::test::kEchoGitCommit +
                              "\trefs/heads/main\ndenied:403\ngit-denied\ndirect-failed\n");
  CHECK(up.exact->seen().size() >= 2);  // curl, then git (info/refs, HEAD)
  CHECK(up.deep->seen().size() == 1);
}

// An agent commits on a branch of its own, then leaves an edit and a new
// file uncommitted, beside an untracked file the user had before. After
// `run`, the host has the commit on a ref (the branch itself where the
// repository was mounted; under refs/mojoup/<session>/ where it was a
// copy, whose HEAD never moves the host's) and the work tree as the agent
// left it.
void CheckWorkComesBack(Workload& work, const Runtime& runtime) {
  const UserNode& node = work.node;
  node.user.Write(node.repo + "/notes.txt", "the user's own, untracked\n");
  Run run = node.Sh(
      "git checkout -q -b agent-work && echo feature > feature.txt && git add feature.txt && "
      "git commit -q -m 'agent commit' && echo edited >> README && echo new > new.txt && "
      "printf 'x\\000y' > blob.bin && echo done");
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  CHECK_THAT(run.result.out, Contains("done"));
  Run refs = node.Git({"for-each-ref", "--format=%(refname) %(subject)"});
  INFO(refs.result.out);
  const bool copy = runtime.kubernetes;
  CHECK_THAT(refs.result.out, Contains(copy ? "/heads/agent-work agent commit"
                                            : "refs/heads/agent-work agent commit"));
  if (copy) CHECK_THAT(refs.result.out, Contains("refs/mojoup/"));
  Run head = node.Git({"symbolic-ref", "HEAD"});
  CHECK(head.result.out == (copy ? "refs/heads/main\n" : "refs/heads/agent-work\n"));
  CHECK(mojoup::test::Slurp(node.repo + "/README") == "a project\nedited\n");
  CHECK(mojoup::test::Slurp(node.repo + "/new.txt") == "new\n");
  CHECK(mojoup::test::Slurp(node.repo + "/feature.txt") == "feature\n");
  CHECK(mojoup::test::Slurp(node.repo + "/notes.txt") == "the user's own, untracked\n");
  CHECK(mojoup::test::Slurp(node.repo + "/blob.bin") == std::string("x\0y", 3));
  struct stat info {};
  REQUIRE(::stat((node.repo + "/new.txt").c_str(), &info) == 0);
  CHECK(info.st_uid == node.user.uid);
}

// An agent in a copy changes the repository's policy, its git config and
// hooks, and leaves a link out of the tree beside an honest edit: the patch
// is refused whole, in one sentence naming where it is kept; the host's
// tree, policy, config and hooks are as they were.
void CheckTrustedNeverComesBack(Workload& work) {
  const UserNode& node = work.node;
  node.Policy(R"({"agents": {"network": {"allow": []}}})");
  const std::string policy = mojoup::test::Slurp(node.repo + "/.mojoup/policy.json");
  const std::string config = mojoup::test::Slurp(node.repo + "/.git/config");
  Run run = node.Sh(
      "echo '{}' > .mojoup/policy.json && git config core.pager 'touch /tmp/pwned' && "
      "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/post-checkout && "
      "chmod +x .git/hooks/post-checkout && ln -s /etc/passwd leak && echo honest >> README && "
      "echo done");
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  CHECK_THAT(run.result.err, Contains("was refused, so nothing was applied"));
  CHECK_THAT(run.result.err, Contains(".mojoup/policy.json"));
  CHECK_THAT(run.result.err, Contains(node.state + "/returns/"));
  CHECK(mojoup::test::Slurp(node.repo + "/.mojoup/policy.json") == policy);
  CHECK(mojoup::test::Slurp(node.repo + "/.git/config") == config);
  CHECK(mojoup::test::Slurp(node.repo + "/README") == "a project\n");
  CHECK_FALSE(fs::exists(node.repo + "/.git/hooks/post-checkout"));
  CHECK_FALSE(fs::is_symlink(node.repo + "/leak"));
}

// The sections of the session's work: how it comes back, on every runtime,
// and what never does, from a copy.
void WorkComesBackSections(Workload& work, const Runtime& runtime) {
  SECTION("the agent's commits and edits come back, the host's HEAD stays") {
    CheckWorkComesBack(work, runtime);
  }
  if (!runtime.kubernetes) return;
  SECTION("from a copy, what the host trusts never comes back, and nothing is applied") {
    CheckTrustedNeverComesBack(work);
  }
}

TEST_CASE("runtimes: one workload, the same outcome on each runtime", "[runtimes]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  const Runtime runtime = GENERATE(from_range(Runtimes()));
  INFO("runtime " << runtime.name);
  Workload work(*user, runtime);
  const UserNode& node = work.node;

  SECTION("exit 7 is run's exit code") {
    Run run = node.Sh("exit 7");
    INFO(Described(run));
    CHECK(run.result.exit_code == 7);
  }
  SECTION("2>/dev/null and the devices a shell writes") {
    Run run = node.Sh(
        "ls /nowhere 2>/dev/null; echo quiet > /dev/null && head -c 4 /dev/zero > /dev/null && "
        "head -c 4 /dev/urandom | wc -c && echo x > /dev/shm/mine && echo written");
    INFO(Described(run));
    CHECK(run.result.exit_code == 0);
    CHECK(run.result.out == "4\nwritten\n");
  }
  SECTION("a 40 KiB argument arrives whole") {
    const std::string big(40 * 1024, 'a');
    Run run = node.Cli({"run", "--repo", node.repo, "--", "/bin/sh", "-c",
                        "printf '%s' \"$1\" | wc -c", "sh", big});
    INFO(run.result.err);
    CHECK(run.result.exit_code == 0);
    CHECK(run.result.out.find("40960") != std::string::npos);
  }
  SECTION("stdin is piped through") {
    Run run = node.user.As({"sh", "-c",
                            "printf 'line one\\nline two\\n' | \"$0\" run --repo \"$1\" -- "
                            "/bin/sh -c 'wc -l; echo end'",
                            node.user.bin + "/mojoup-node", node.repo},
                           node.env, std::chrono::seconds(90), node.repo);
    INFO(Described(run));
    CHECK(run.result.exit_code == 0);
    CHECK(run.result.out.find("2\nend\n") != std::string::npos);
  }
  SECTION("files written in the repository are the user's") {
    Run run = node.Sh("echo made > made.txt && mkdir -p dir && echo in > dir/file");
    INFO(Described(run));
    REQUIRE(run.result.exit_code == 0);
    for (const std::string& path : {node.repo + "/made.txt", node.repo + "/dir/file"}) {
      struct stat info {};
      REQUIRE(::stat(path.c_str(), &info) == 0);
      CHECK(info.st_uid == user->uid);
      CHECK(info.st_gid == user->gid);
    }
  }
  WorkComesBackSections(work, runtime);
  SECTION("a background process does not hold run, and nothing is left after") {
    Run run = node.Sh("sleep 300 > /dev/null 2>&1 & echo started");
    INFO(Described(run));
    CHECK(run.result.exit_code == 0);
    CHECK(run.result.out == "started\n");
  }
  SECTION("SIGINT and SIGTERM to run reach the command; its exit codes come back") {
    CheckSignalsReachTheCommand(work);
  }
  SECTION("on a terminal, /dev/tty and the standard streams are the session's terminal") {
    // script(1) gives run a terminal on both ends, as an ssh session does.
    Run run = node.user.As(
        {"script", "-qec",
         node.user.bin + "/mojoup-node run --repo " + node.repo +
             " -- /bin/sh -c 'echo to-tty > /dev/tty && [ -t 0 ] && [ -t 1 ] && echo both-ttys'",
         "/dev/null"},
        node.env, std::chrono::seconds(90), node.repo);
    INFO(Described(run));
    CHECK(run.result.exit_code == 0);
    CHECK_THAT(run.result.out, Contains("to-tty"));
    CHECK_THAT(run.result.out, Contains("both-ttys"));
  }
  SECTION(
      "HTTPS through the runtime: allowed and wildcard hosts, denied ones refused, no way around") {
    CheckHttpsThroughTheRuntime(work);
  }
  SECTION("an API call with only a stand-in: the upstream gets the key, the sandbox never") {
    const Upstreams& up = work.upstreams;
    node.Policy(R"({"agents": {"network": {"allow": [{"host": "exact.example.org", "ports": [)" +
                up.ExactPort() + "]}]}}}");
    // On OpenShell a plain command reaches a bound host by its base URL
    // (MOJOUP_PROXY_URL), as an SDK reaches its API by ANTHROPIC_BASE_URL.
    std::vector<std::string> flags = up.Flags();
    flags.insert(flags.end(), {"--credential", "TEST_KEY=exact.example.org"});
    Run run = node.Sh(
        "base=${MOJOUP_PROXY_URL:+$MOJOUP_PROXY_URL/exact.example.org:" + up.ExactPort() +
            "}; curl -sS -H \"x-api-key: $TEST_KEY\" \"${base:-https://exact.example.org:" +
            up.ExactPort() + "}/v1/messages\" | grep -c '\"method\"'; echo \"stand-in:$TEST_KEY\"",
        flags, {std::string("TEST_KEY=") + kRealKey});
    INFO(Described(run));
    CHECK(run.result.exit_code == 0);
    CHECK_THAT(run.result.out, Contains("1\nstand-in:tk-live-"));
    CHECK_THAT(run.result.out, !Contains(kRealKey));
    const auto seen = up.exact->seen();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].Header("x-api-key") == kRealKey);
  }
  CHECK(work.Leftovers() == 0);
}

// Node's own https and npm, as an agent's tooling uses them: through the
// proxy variables, trusting what the runtime's CA variables name. Debian 12's
// node 18 has no proxy support of its own (NODE_USE_ENV_PROXY is later), so
// the script asks for a tunnel itself, as agents' HTTP clients do.
constexpr const char* kNodeGet = R"(
const http = require('http'), tls = require('tls');
const [host, port] = process.argv[2].split(':');
const proxy = new URL(process.env.HTTPS_PROXY || process.env.https_proxy);
const connect = http.request({host: proxy.hostname, port: proxy.port, method: 'CONNECT',
                              path: host + ':' + port});
connect.on('connect', (res, socket) => {
  if (res.statusCode !== 200) return console.log('node:' + res.statusCode);
  const tunnel = tls.connect({socket, servername: host}, () =>
    tunnel.end('GET /node HTTP/1.1\r\nHost: ' + host + '\r\nConnection: close\r\n\r\n'));
  let got = '';
  tunnel.on('data', (chunk) => (got += chunk));
  tunnel.on('end', () => console.log('node:' + got.split('\r\n')[0]));
  tunnel.on('error', (e) => console.log('node:' + e.code));
});
connect.on('error', (e) => console.log('node:' + e.code));
connect.end();
)";

TEST_CASE("runtimes: node and npm over HTTPS, the same outcome on each runtime", "[runtimes]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  if (std::string why = mojoup::test::WhyNoNodeImage(); !why.empty()) MOJOUP_SKIP(why);
  const Runtime runtime = GENERATE(from_range(Runtimes()));
  INFO("runtime " << runtime.name);
  Workload work(*user, runtime, mojoup::test::kNodeImage);
  const UserNode& node = work.node;
  const Upstreams& up = work.upstreams;
  node.Policy(R"({"agents": {"network": {"allow": [{"host": "exact.example.org", "ports": [)" +
              up.ExactPort() + "]}]}}}");
  user->Write(node.repo + "/get.js", kNodeGet);
  // npm: no update check (it would ask registry.npmjs.org) and no retries.
  const std::string npm = "npm_config_update_notifier=false npm ping --fetch-retries=0 --registry ";
  Run run = node.Sh(
      "node get.js exact.example.org:" + up.ExactPort() + "; node get.js denied.example.net:" +
          up.ExactPort() + "; " + npm + "https://exact.example.org:" + up.ExactPort() +
          "/ >/dev/null 2>&1 && echo npm:pong; " + npm +
          "https://denied.example.net:" + up.ExactPort() + "/ >/dev/null 2>&1 || echo npm:refused",
      up.Flags());
  INFO(Described(run));
  CHECK(run.result.exit_code == 0);
  CHECK(run.result.out == "node:HTTP/1.1 200 OK\nnode:403\nnpm:pong\nnpm:refused\n");
  CHECK(up.exact->seen().size() == 2);
  CHECK(work.Leftovers() == 0);
}

}  // namespace

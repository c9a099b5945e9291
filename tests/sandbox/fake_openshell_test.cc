// fake-openshell, run the way the OpenShell runtime runs `openshell` (a name
// on PATH): the grammar of each release, the gateway states, and sandboxes
// that are real containers on the local dockerd, with the image the tests
// assemble from this host's busybox and curl.
#include <rapidjson/document.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "../support/echo_server.h"
#include "../support/public_bridge.h"
#include "../support/sandbox_image.h"
#include "../support/test_support.h"
#include "mojoup/credproxy/session_ca.h"
#include "mojoup/internal/docker_api_version.h"
#include "mojoup/internal/docker_filters.h"
#include "mojoup/probe/docker_api.h"
#include "mojoup/probe/kernel.h"
#include "mojoup/sandbox/testing/fake_openshell_sandbox.h"

namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using mojoup::sandbox::testing::FakeOpenShellSandboxOptions;
using mojoup::sandbox::testing::InstallFakeOpenShellSandbox;
using mojoup::sandbox::testing::OpenShellGatewayConfig;
using mojoup::sandbox::testing::WriteOpenShellGatewayConfig;
using mojoup::test::BinDir;
using mojoup::test::Run;
using mojoup::test::RunWithEnv;
using mojoup::test::Slurp;
using mojoup::test::TempDir;
using namespace std::chrono_literals;

constexpr const char* kImage = mojoup::test::kSandboxImage;

// A sandbox name no other test (or test run) uses, within the 19 characters
// a DNS-routable name may have from 0.0.88 on.
std::string UniqueName(const std::string& stem) {
  static int counter = 0;
  return "fo-" + stem.substr(0, 6) + "-" + std::to_string(::getpid() % 100000) + "-" +
         std::to_string(++counter);
}

// The ids of the containers Docker has for sandbox `name`, whichever fake made them.
std::vector<std::string> ContainersNamed(const std::string& name) {
  return mojoup::test::ContainersLabelled("openshell.ai/sandbox-name=" + name)
      .value_or(std::vector<std::string>{});
}

// Removes the named sandboxes' containers however the test ends.
class Cleanup {
 public:
  explicit Cleanup(std::vector<std::string> names) : names_(std::move(names)) {}
  ~Cleanup() {
    auto kernel = mojoup::probe::MakeSystemKernel();
    auto endpoint = mojoup::probe::ResolveDockerEndpoint(*kernel);
    if (!endpoint.ok()) return;
    auto api = mojoup::probe::MakeDockerApi();
    const std::string prefix(mojoup::internal::kDockerApiPrefix);
    for (const std::string& name : names_) {
      for (const std::string& id : ContainersNamed(name)) {
        api->Send(*endpoint, "DELETE", prefix + "/containers/" + id + "?force=1&v=1", {},
                  std::chrono::seconds(30));
      }
      // A Kubernetes sandbox's workspace volume, whatever the test left.
      auto volumes =
          api->Send(*endpoint, "GET",
                    prefix + "/volumes?filters=" +
                        mojoup::internal::DockerLabelFilters({"openshell.ai/sandbox-name=" + name}),
                    {}, std::chrono::seconds(30));
      rapidjson::Document listed;
      listed.Parse(volumes.body.c_str());
      if (listed.HasParseError() || !listed.IsObject() || !listed.HasMember("Volumes") ||
          !listed["Volumes"].IsArray()) {
        continue;
      }
      for (const auto& volume : listed["Volumes"].GetArray()) {
        if (!volume.IsObject() || !volume.HasMember("Name") || !volume["Name"].IsString()) continue;
        api->Send(*endpoint, "DELETE", prefix + "/volumes/" + volume["Name"].GetString(), {},
                  std::chrono::seconds(30));
      }
    }
  }
  Cleanup(const Cleanup&) = delete;
  Cleanup& operator=(const Cleanup&) = delete;

 private:
  std::vector<std::string> names_;
};

// One installed fake, reached through PATH as `openshell`.
class Fake {
 public:
  explicit Fake(const FakeOpenShellSandboxOptions& options = {}) {
    log_ = InstallFakeOpenShellSandbox(dir_.path(), BinDir() + "/fake-openshell", options);
  }

  Run Call(std::vector<std::string> args, std::chrono::milliseconds timeout = 60s) const {
    args.insert(args.begin(), "openshell");
    return RunWithEnv({Path()}, args, timeout);
  }
  // The same with more of the environment (VAR=value each).
  Run CallWith(std::vector<std::string> env, std::vector<std::string> args) const {
    args.insert(args.begin(), "openshell");
    env.insert(env.begin(), Path());
    return RunWithEnv(env, args, 60s);
  }
  // A shell line with the fake on PATH, to feed it stdin through a pipe.
  Run Shell(const std::string& line) const { return RunWithEnv({Path()}, {"sh", "-c", line}, 60s); }

  std::string Log() const { return Slurp(log_); }
  const TempDir& dir() const { return dir_; }

 private:
  std::string Path() const {
    const char* path = std::getenv("PATH");
    return "PATH=" + dir_.path() + ":" + (path != nullptr ? path : "/usr/bin:/bin");
  }

  TempDir dir_;
  std::string log_;
};

rapidjson::Document Json(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.c_str());
  INFO(text);
  REQUIRE_FALSE(doc.HasParseError());
  return doc;
}

// The sandbox's phase as `sandbox get -o json` reports it.
std::string PhaseOf(const Fake& fake, const std::string& name) {
  Run got = fake.Call({"sandbox", "get", name, "-o", "json"});
  INFO(got.result.err);
  REQUIRE(got.result.exit_code == 0);
  rapidjson::Document doc = Json(got.result.out);
  return doc["phase"].GetString();
}

std::string WaitForPhase(const Fake& fake, const std::string& name, const std::string& want) {
  std::string phase;
  for (int attempt = 0; attempt < 50; ++attempt) {
    phase = PhaseOf(fake, name);
    if (phase == want) break;
    std::this_thread::sleep_for(200ms);
  }
  return phase;
}

// stderr without miette's box: the report's lines joined by single spaces,
// or by nothing after a '-' or '/' where textwrap broke a word.
std::string Unboxed(const std::string& err) {
  std::string out;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    for (std::string_view prefix : {"Error:   × ", "  │ ", "  ├─▶ ", "  ╰─▶ ", "      "}) {
      if (line.starts_with(prefix)) {
        line = line.substr(prefix.size());
        break;
      }
    }
    if (line.empty()) continue;
    if (!out.empty() && out.back() != '-' && out.back() != '/') out += ' ';
    out += line;
  }
  return out;
}

void Check(const Run& run, int exit_code) {
  INFO("stdout: " << run.result.out << "\nstderr: " << run.result.err);
  REQUIRE(run.result.outcome == mojoup::probe::CommandResult::Outcome::kExited);
  REQUIRE(run.result.exit_code == exit_code);
}

}  // namespace

TEST_CASE("the version and status answer for each gateway option", "[fake_openshell]") {
  {
    Fake fake;
    Run version = fake.Call({"--version"});
    Check(version, 0);
    REQUIRE(version.result.out == "openshell 0.0.111\n");
  }
  {
    FakeOpenShellSandboxOptions options;
    options.version = "0.0.58";
    REQUIRE(Fake(options).Call({"--version"}).result.out == "openshell 0.0.58\n");
  }
  for (const char* state : {"connected", "connected_http", "error", "disconnected"}) {
    FakeOpenShellSandboxOptions options;
    options.gateway = state;
    Run status = Fake(options).Call({"status", "-o", "json"});
    Check(status, 0);
    REQUIRE(std::string(Json(status.result.out)["status"].GetString()) == state);
  }
  {
    FakeOpenShellSandboxOptions options;
    options.gateway = "unauthenticated";
    Run status = Fake(options).Call({"status", "-o", "json"});
    Check(status, 0);
    rapidjson::Document doc = Json(status.result.out);
    REQUIRE(std::string(doc["status"].GetString()) == "connected");
    REQUIRE(std::string(doc["authentication"]["status"].GetString()) == "failed");
  }
  {
    FakeOpenShellSandboxOptions options;
    options.gateway = "not_configured";
    Run status = Fake(options).Call({"status", "-o", "json"});
    Check(status, 0);
    REQUIRE(std::string(Json(status.result.out)["status"].GetString()) == "not_configured");
  }
  {
    FakeOpenShellSandboxOptions options;
    options.gateway = "unreachable";
    Run status = Fake(options).Call({"status", "-o", "json"});
    Check(status, 1);
    REQUIRE(status.result.out.empty());
    REQUIRE_THAT(status.result.err, Contains("Connection refused"));
  }
}

TEST_CASE("a gateway that is down or refuses us fails every sandbox command", "[fake_openshell]") {
  for (const char* state : {"unreachable", "unauthenticated"}) {
    FakeOpenShellSandboxOptions options;
    options.gateway = state;
    Fake fake(options);
    const std::string name = UniqueName("down");
    Cleanup cleanup({name});
    for (const std::vector<std::string>& args :
         std::vector<std::vector<std::string>>{{"sandbox", "create", "--name", name, "--from",
                                                kImage, "--detach", "--", "sleep", "infinity"},
                                               {"sandbox", "list", "-o", "json"},
                                               {"sandbox", "get", name, "-o", "json"},
                                               {"sandbox", "exec", "-n", name, "--", "true"},
                                               {"sandbox", "delete", name}}) {
      INFO(state << ": " << args[1]);
      Run run = fake.Call(args);
      Check(run, 1);
      REQUIRE(run.result.out.empty());
      REQUIRE_FALSE(run.result.err.empty());
      if (std::string(state) == "unauthenticated") {
        REQUIRE_THAT(Unboxed(run.result.err),
                     Contains("The request does not have valid authentication credentials"));
      } else {
        REQUIRE_THAT(run.result.err, Contains("Connection refused"));
      }
    }
    REQUIRE(ContainersNamed(name).empty());
  }
}

TEST_CASE("flags a release lacks are clap errors there", "[fake_openshell]") {
  auto with_version = [](const char* version) {
    FakeOpenShellSandboxOptions options;
    options.version = version;
    return options;
  };
  struct Case {
    const char* version;
    std::vector<std::string> args;
    const char* flag;
  };
  const std::vector<Case> cases = {
      {"0.0.58", {"sandbox", "create", "--from", kImage, "--env", "A=b"}, "--env"},
      {"0.0.58", {"sandbox", "exec", "-n", "x", "--env", "A=b", "--", "true"}, "--env"},
      {"0.0.57",
       {"sandbox", "create", "--from", kImage, "--driver-config-json", "{}"},
       "--driver-config-json"},
      {"0.0.110", {"sandbox", "create", "--from", kImage, "--detach"}, "--detach"},
      {"0.0.43", {"sandbox", "list", "--selector", "a=b", "-o", "json"}, "-o"},
      {"0.0.91", {"sandbox", "get", "x", "-o", "json"}, "-o"},
      {"0.0.111", {"sandbox", "create", "--from", kImage, "--bogus"}, "--bogus"},
  };
  for (const Case& c : cases) {
    INFO(c.version << " " << c.flag);
    Fake fake(with_version(c.version));
    Run run = fake.Call(c.args);
    Check(run, 2);
    REQUIRE_THAT(run.result.err,
                 StartsWith(std::string("error: unexpected argument '") + c.flag + "' found"));
  }
  Run conflict = Fake().Call({"sandbox", "create", "--from", kImage, "-o", "json", "--", "true"});
  Check(conflict, 2);
  REQUIRE_THAT(conflict.result.err, Contains("cannot be used with"));
}

TEST_CASE("the gateway's refusals come before any container", "[fake_openshell]") {
  TempDir work;
  const std::string mount = work / "repo";
  std::filesystem::create_directories(mount);
  const std::string config = "{\"docker\":{\"mounts\":[{\"type\":\"bind\",\"source\":\"" + mount +
                             "\",\"target\":\"" + mount + "\",\"read_only\":false}]}}";
  const std::string name = UniqueName("refused");
  Cleanup cleanup({name});
  {
    FakeOpenShellSandboxOptions options;
    options.enable_bind_mounts = false;
    Run run =
        Fake(options).Call({"sandbox", "create", "--name", name, "--from", kImage,
                            "--driver-config-json", config, "--detach", "--", "sleep", "infinity"});
    Check(run, 1);
    REQUIRE_THAT(Unboxed(run.result.err),
                 Contains("The system is not in a state required for the operation's execution"));
    REQUIRE_THAT(Unboxed(run.result.err), Contains("enable_bind_mounts"));
  }
  {
    FakeOpenShellSandboxOptions options;
    options.fail_create = "quota exceeded for this workspace";
    Run run = Fake(options).Call({"sandbox", "create", "--name", name, "--from", kImage});
    Check(run, 1);
    REQUIRE_THAT(Unboxed(run.result.err), Contains("quota exceeded for this workspace"));
  }
  // process.run_as_user: only "sandbox" before 0.0.76, >= 1000 before 0.0.110.
  for (auto [version, uid] :
       {std::pair{"0.0.75", "1234"}, std::pair{"0.0.109", "500"}, std::pair{"0.0.111", "0"}}) {
    INFO(version << " run_as_user " << uid);
    const std::string policy = work.Write(
        "policy.yaml", std::string("version: 1\nprocess:\n  run_as_user: \"") + uid + "\"\n");
    FakeOpenShellSandboxOptions options;
    options.version = version;
    Run run = Fake(options).Call(
        {"sandbox", "create", "--name", name, "--from", kImage, "--policy", policy});
    Check(run, 1);
    REQUIRE_THAT(Unboxed(run.result.err), Contains("Client specified an invalid argument"));
    REQUIRE_THAT(run.result.err, Contains("run_as_user"));
  }
  // A wildcard over a top-level domain, named by the entry's name.
  for (const char* host : {"*.dev", "**.io"}) {
    INFO(host);
    const std::string policy = work.Write(
        "policy.yaml", std::string("version: 1\nnetwork_policies:\n  allow_1:\n    name: \"dev "
                                   "hosts\"\n    endpoints:\n      - { host: \"") +
                           host + "\", port: 443 }\n");
    Run run = Fake(FakeOpenShellSandboxOptions{}).Call(
        {"sandbox", "create", "--name", name, "--from", kImage, "--policy", policy});
    Check(run, 1);
    REQUIRE_THAT(Unboxed(run.result.err), Contains("Client specified an invalid argument"));
    REQUIRE_THAT(Unboxed(run.result.err),
                 Contains(std::string("network policy 'dev hosts': TLD wildcard '") + host +
                          "' is not allowed"));
  }
  REQUIRE(ContainersNamed(name).empty());
}

TEST_CASE("the calls log holds every invocation's argv", "[fake_openshell]") {
  FakeOpenShellSandboxOptions options;
  options.gateway = "unreachable";
  Fake fake(options);
  fake.Call({"--version"});
  fake.Call({"status", "-o", "json"});
  fake.Call({"sandbox", "list", "--selector", "a=b,c=d", "-o", "json"});
  fake.Call({"sandbox", "create", "--bogus"});
  std::vector<std::vector<std::string>> calls;
  std::istringstream lines(fake.Log());
  for (std::string line; std::getline(lines, line);) {
    rapidjson::Document doc = Json(line);
    REQUIRE(doc.IsArray());
    std::vector<std::string> argv;
    for (const auto& arg : doc.GetArray()) argv.emplace_back(arg.GetString());
    calls.push_back(argv);
  }
  REQUIRE(calls == std::vector<std::vector<std::string>>{
                       {"openshell", "--version"},
                       {"openshell", "status", "-o", "json"},
                       {"openshell", "sandbox", "list", "--selector", "a=b,c=d", "-o", "json"},
                       {"openshell", "sandbox", "create", "--bogus"}});
}

namespace {

// `sandbox exec -n NAME --no-tty ARGS...`.
Run NoTtyExec(const Fake& fake, const std::string& name, const std::vector<std::string>& args) {
  std::vector<std::string> full{"sandbox", "exec", "-n", name, "--no-tty"};
  full.insert(full.end(), args.begin(), args.end());
  return fake.Call(full);
}

// `sandbox list --selector` finds the sandbox `name` of `session` (labels
// mojoup.session and team=a), Ready, and nothing under another session.
void RequireListedBySession(const Fake& fake, const std::string& name, const std::string& session) {
  Run listed =
      fake.Call({"sandbox", "list", "--selector", "mojoup.session=" + session, "-o", "json"});
  Check(listed, 0);
  rapidjson::Document doc = Json(listed.result.out);
  REQUIRE(doc.IsArray());
  REQUIRE(doc.Size() == 1);
  const auto& sandbox = doc[0];
  REQUIRE(std::string(sandbox["name"].GetString()) == name);
  REQUIRE(std::string(sandbox["phase"].GetString()) == "Ready");
  REQUIRE(std::string(sandbox["id"].GetString()).size() == 36);
  REQUIRE(sandbox["labels"].MemberCount() == 2);
  REQUIRE(std::string(sandbox["labels"]["mojoup.session"].GetString()) == session);
  REQUIRE(std::string(sandbox["labels"]["team"].GetString()) == "a");
  // The CLI prints "YYYY-MM-DD HH:MM:SS" (UTC).
  const std::string created_at = sandbox["created_at"].GetString();
  REQUIRE(created_at.size() == 19);
  REQUIRE(created_at[4] == '-');
  REQUIRE(created_at[10] == ' ');
  Run others = fake.Call({"sandbox", "list", "--selector", "mojoup.session=none", "-o", "json"});
  Check(others, 0);
  REQUIRE(Json(others.result.out).Size() == 0);
  REQUIRE(PhaseOf(fake, name) == "Ready");
}

// Past --timeout an exec is 124, a command a signal killed is 1, and a
// signal to the CLI is not passed on: each time the command runs on.
void RequireTimeoutsAndSignalsLeaveTheCommand(const Fake& fake, const std::string& name) {
  auto exec = [&](std::vector<std::string> args) { return NoTtyExec(fake, name, args); };
  // Past --timeout: 124, and the command runs on.
  Run slow = exec({"--timeout", "1", "--", "sh", "-c", "sleep 3; echo late > /tmp/late"});
  Check(slow, 124);
  REQUIRE(slow.seconds < 15);
  Check(exec({"--", "sh", "-c", "sleep 4; cat /tmp/late"}), 0);

  // A command a signal killed is exit 1 (status.code().unwrap_or(1)).
  Check(exec({"--", "sh", "-c", "kill -TERM $$"}), 1);
  // A signal to the CLI is not passed on: the CLI ends, the command runs on.
  Run cli_killed = fake.Shell(
      "openshell sandbox exec -n " + name +
      R"( -- sh -c 'trap "echo got > /tmp/got-term" TERM; echo $$ > /tmp/cmd.pid; sleep 2; )"
      R"(echo done > /tmp/ran-on' & cli=$!; i=0; )"
      "until openshell sandbox exec -n " +
      name +
      R"( -- test -s /tmp/cmd.pid; do i=$((i+1)); [ $i -lt 50 ] || break; sleep 0.2; done; )"
      R"(kill -TERM $cli; wait $cli; echo "cli:$?"; sleep 3)");
  REQUIRE_THAT(cli_killed.result.out, Contains("cli:143"));
  Run ran_on = exec({"--", "cat", "/tmp/ran-on"});
  Check(ran_on, 0);
  REQUIRE(ran_on.result.out == "done\n");
  Check(exec({"--", "test", "-e", "/tmp/got-term"}), 1);
}

}  // namespace

TEST_CASE("a sandbox runs commands as the policy's user with the bind mount at the same path",
          "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  TempDir work;
  const std::string mount = work / "repo";
  std::filesystem::create_directories(mount);
  ::chmod(mount.c_str(), 0777);
  const std::string policy = work.Write(
      "policy.yaml",
      // Everything readable, /tmp and the mount writable: Landlock confines
      // each exec to these.
      "version: 1\nfilesystem_policy:\n  include_workdir: true\n  read_only:\n    - /\n"
      "  read_write:\n    - /tmp\n    - " + mount +
          "\nprocess:\n  run_as_user: \"1234\"  # the agent\n  run_as_group: 1234\n");
  const std::string config = "{\"docker\":{\"mounts\":[{\"type\":\"bind\",\"source\":\"" + mount +
                             "\",\"target\":\"" + mount + "\",\"read_only\":false}]}}";
  const std::string name = UniqueName("main");
  const std::string session = UniqueName("session");
  Cleanup cleanup({name});
  Fake fake;

  Run created = fake.Call({"sandbox",
                           "create",
                           "--name",
                           name,
                           "--from",
                           kImage,
                           "--policy",
                           policy,
                           "--label",
                           "mojoup.session=" + session,
                           "--label",
                           "team=a",
                           "--env",
                           "GREETING=hello",
                           "--driver-config-json",
                           config,
                           "--detach",
                           "--",
                           "sleep",
                           "infinity"});
  Check(created, 0);
  REQUIRE_THAT(created.result.out, Contains("Created sandbox: " + name));

  RequireListedBySession(fake, name, session);
  auto exec = [&](std::vector<std::string> args) { return NoTtyExec(fake, name, args); };
  Run pwd = exec({"--workdir", mount, "--", "pwd"});
  Check(pwd, 0);
  REQUIRE(pwd.result.out == mount + "\n");

  Run env = exec({"--env", "FOO=bar baz", "--", "sh", "-c", "echo \"$FOO\"; echo \"$GREETING\""});
  Check(env, 0);
  REQUIRE(env.result.out == "bar baz\nhello\n");

  Run streams = exec({"--", "sh", "-c", "echo out; echo err >&2; exit 7"});
  Check(streams, 7);
  REQUIRE(streams.result.out == "out\n");
  REQUIRE(streams.result.err == "err\n");

  Run uid = exec({"--", "id", "-u"});
  Check(uid, 0);
  REQUIRE(uid.result.out == "1234\n");

  Run wrote = exec({"--workdir", mount, "--", "sh", "-c", "echo written > made.txt"});
  Check(wrote, 0);
  struct stat info {};
  REQUIRE(::stat((mount + "/made.txt").c_str(), &info) == 0);
  REQUIRE(info.st_uid == 1234);
  REQUIRE(Slurp(mount + "/made.txt") == "written\n");

  Run hosts = exec({"--", "grep", "host.openshell.internal", "/etc/hosts"});
  Check(hosts, 0);

  Run piped = fake.Shell("printf 'from stdin' | openshell sandbox exec -n " + name + " -- cat");
  Check(piped, 0);
  REQUIRE(piped.result.out == "from stdin");

  Run flood =
      fake.Shell("head -c 5000000 /dev/zero | openshell sandbox exec -n " + name + " -- wc -c");
  Check(flood, 1);
  REQUIRE_THAT(Unboxed(flood.result.err), Contains("4194304 byte limit"));

  RequireTimeoutsAndSignalsLeaveTheCommand(fake, name);

  Run deleted = fake.Call({"sandbox", "delete", name});
  Check(deleted, 0);
  REQUIRE(ContainersNamed(name).empty());
  Run empty = fake.Call({"sandbox", "list", "-o", "json"});
  Check(empty, 0);
  REQUIRE(Json(empty.result.out).Size() == 0);
}

TEST_CASE("a missing sandbox is not found", "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  Fake fake;
  const std::string name = UniqueName("missing");
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"sandbox", "delete", name},
                                             {"sandbox", "get", name, "-o", "json"},
                                             {"sandbox", "exec", "-n", name, "--", "true"}}) {
    INFO(args[1]);
    Run run = fake.Call(args);
    Check(run, 1);
    REQUIRE_THAT(Unboxed(run.result.err), Contains("not found"));
  }
}

TEST_CASE("a trailing command: run once up to 0.0.110, the main process from 0.0.111",
          "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  const std::string old_name = UniqueName("v110");
  const std::string new_name = UniqueName("v111");
  Cleanup cleanup({old_name, new_name});
  TempDir work;
  const std::string policy =
      work.Write("policy.yaml", "version: 1\nprocess:\n  run_as_user: 500\n  run_as_group: 500\n");

  FakeOpenShellSandboxOptions v110;
  v110.version = "0.0.110";
  Fake old_fake(v110);
  Run old_created =
      old_fake.Call({"sandbox", "create", "--name", old_name, "--from", kImage, "--policy", policy,
                     "--", "sh", "-c", "echo ran as $(id -u); exit 3"});
  // Without ssh on PATH (only the fake there) the create fails, and says
  // only what the real CLI says.
  const std::string lone = UniqueName("nossh");
  Cleanup lone_cleanup({lone});
  Run no_ssh = RunWithEnv({"PATH=" + old_fake.dir().path()},
                          {"openshell", "sandbox", "create", "--name", lone, "--from", kImage,
                           "--policy", policy, "--", "true"});
  Check(no_ssh, 1);
  REQUIRE_THAT(Unboxed(no_ssh.result.err), Contains("No such file or directory (os error 2)"));
  // Over the host's ssh: its status fails the create, the sandbox stays.
  Check(old_created, 1);
  REQUIRE_THAT(old_created.result.out, Contains("ran as 500"));
  REQUIRE_THAT(Unboxed(old_created.result.err),
               Contains("ssh exited with status exit status: 3"));
  REQUIRE(PhaseOf(old_fake, old_name) == "Ready");
  Run still = old_fake.Call({"sandbox", "exec", "-n", old_name, "--", "true"});
  Check(still, 0);

  Fake new_fake;  // 0.0.111
  Run new_created =
      new_fake.Call({"sandbox", "create", "--name", new_name, "--from", kImage, "--", "true"});
  Check(new_created, 0);
  REQUIRE(WaitForPhase(new_fake, new_name, "Error") == "Error");
  Run refused = new_fake.Call({"sandbox", "exec", "-n", new_name, "--", "true"});
  Check(refused, 1);
  REQUIRE_THAT(Unboxed(refused.result.err), Contains("not ready (phase: Error)"));

  // Each install is its own gateway.
  Run elsewhere = old_fake.Call({"sandbox", "get", new_name, "-o", "json"});
  Check(elsewhere, 1);

  Check(old_fake.Call({"sandbox", "delete", old_name}), 0);
  Check(new_fake.Call({"sandbox", "delete", new_name}), 0);
}

TEST_CASE("phase_error and pre-0.0.61 driver configs", "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  const std::string broken = UniqueName("broken");
  const std::string early = UniqueName("early");
  Cleanup cleanup({broken, early});
  {
    FakeOpenShellSandboxOptions options;
    options.phase_error = true;
    Fake fake(options);
    Run created = fake.Call({"sandbox", "create", "--name", broken, "--from", kImage, "--detach",
                             "--", "sleep", "infinity"});
    Check(created, 0);
    REQUIRE(PhaseOf(fake, broken) == "Error");
    Check(fake.Call({"sandbox", "delete", broken}), 0);
  }
  {
    // 0.0.58 to 0.0.60 take --driver-config-json, but their Docker driver
    // ignores it: the sandbox comes up without the mount.
    TempDir work;
    const std::string mount = work / "repo";
    std::filesystem::create_directories(mount);
    FakeOpenShellSandboxOptions options;
    options.version = "0.0.60";
    Fake fake(options);
    const std::string config = "{\"docker\":{\"mounts\":[{\"type\":\"bind\",\"source\":\"" + mount +
                               "\",\"target\":\"" + mount + "\"}]}}";
    Run created = fake.Call(
        {"sandbox", "create", "--name", early, "--from", kImage, "--driver-config-json", config});
    Check(created, 0);
    Check(fake.Call({"sandbox", "exec", "-n", early, "--", "test", "-e", mount}), 1);
    Check(fake.Call({"sandbox", "delete", early}), 0);
  }
}

// ---------------------------------------------------------------------------
// Behaviours corrected against the OpenShell source (see FAKE_OPENSHELL.md).

namespace {

FakeOpenShellSandboxOptions Version(const char* version) {
  FakeOpenShellSandboxOptions options;
  options.version = version;
  return options;
}

}  // namespace

TEST_CASE("errors are tonic Status text in miette's report box, wrapped at 80 columns",
          "[fake_openshell]") {
  // 23 characters: over the 19 a routable name may have from 0.0.88.
  const std::string name = "abcdefghijklmnopqrstuvw";
  Run run = Fake().Call({"sandbox", "create", "--name", name, "--from", kImage});
  Check(run, 1);
  REQUIRE(run.result.out.empty());
  REQUIRE(run.result.err ==
          "Error:   × code: 'Client specified an invalid argument', message: \"name exceeds\n"
          "  │ maximum length (23 > 19)\"\n\n");
  // tonic 0.12 (up to 0.0.60) printed its Debug-like form.
  Run old = Fake(Version("0.0.60"))
                .Call({"sandbox", "create", "--name", name, "--label", "a=-b", "--from", kImage});
  Check(old, 1);
  REQUIRE_THAT(Unboxed(old.result.err),
               StartsWith("status: InvalidArgument, message: \"label value must start with "
                          "alphanumeric character: '-b'\", details: [], metadata:"));
}

TEST_CASE("sandbox names: at most 19 characters of DNS-1123 label from 0.0.88, 253 before",
          "[fake_openshell]") {
  struct Case {
    std::string name;
    std::string message;
  };
  const std::vector<Case> refused = {
      {"abcdefghijklmnopqrstuvw", "name exceeds maximum length (23 > 19)"},
      {"Upper", "name must contain only lowercase alphanumeric characters or hyphens"},
      {"-lead", "name must not start or end with a hyphen"},
      {"a--b", "name must not contain consecutive hyphens"},
  };
  for (const char* version : {"0.0.88", "0.0.111", "0.1.0"}) {
    Fake fake(Version(version));
    for (const Case& c : refused) {
      INFO(version << " " << c.name);
      Run run = fake.Call({"sandbox", "create", "--name", c.name, "--from", kImage});
      Check(run, 1);
      REQUIRE(Unboxed(run.result.err) ==
              "code: 'Client specified an invalid argument', message: \"" + c.message + "\"");
    }
  }
  Run long_name =
      Fake(Version("0.0.87"))
          .Call({"sandbox", "create", "--name", std::string(254, 'a'), "--from", kImage});
  Check(long_name, 1);
  REQUIRE_THAT(Unboxed(long_name.result.err), Contains("name exceeds maximum length (254 > 253)"));
}

TEST_CASE("a 23-character name is accepted at 0.0.87", "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  const std::string name = "fo-long-" + std::to_string(::getpid() % 100000) + "-abcdefghij";
  REQUIRE(name.size() > 19);
  Cleanup cleanup({name});
  Fake fake(Version("0.0.87"));
  Run created = fake.Call({"sandbox", "create", "--name", name, "--from", kImage});
  Check(created, 0);
  Check(fake.Call({"sandbox", "delete", name}), 0);
}

TEST_CASE("label keys and values start and end with an alphanumeric", "[fake_openshell]") {
  struct Case {
    std::string label;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"team=-a", "label value must start with alphanumeric character: '-a'"},
      {"team=a-", "label value must end with alphanumeric character: 'a-'"},
      {"team=a b",
       "label value contains invalid characters (must be alphanumeric, '-', '_', or "
       "'.'): 'a b'"},
      {"team=" + std::string(64, 'a'),
       "label value exceeds 63 characters: '" + std::string(64, 'a') + "'"},
      {"_team=a", "label key name segment must start with alphanumeric character: '_team'"},
      {"team.=a", "label key name segment must end with alphanumeric character: 'team.'"},
      {"Example.com/team=a",
       "label key prefix must be a DNS subdomain (lowercase alphanumeric, "
       "'-', '.'): 'Example.com/team'"},
      {"/team=a", "label key prefix cannot be empty when '/' is present: '/team'"},
      {"=a", "label key cannot be empty"},
  };
  Fake fake;
  for (const Case& c : cases) {
    INFO(c.label);
    Run run =
        fake.Call({"sandbox", "create", "--name", "lbl", "--label", c.label, "--from", kImage});
    Check(run, 1);
    REQUIRE(Unboxed(run.result.err) ==
            "code: 'Client specified an invalid argument', message: \"" + c.message + "\"");
  }
  Run no_equals = fake.Call({"sandbox", "create", "--label", "team", "--from", kImage});
  Check(no_equals, 1);
  REQUIRE(Unboxed(no_equals.result.err) == "invalid label format 'team', expected key=value");
}

TEST_CASE(
    "status and sandbox get take -o from 0.0.92, plain status is the Server Status text "
    "(Authentication from 0.0.91)",
    "[fake_openshell]") {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"status", "-o", "json"}, {"sandbox", "get", "x", "-o", "json"}}) {
    Run run = Fake(Version("0.0.91")).Call(args);
    Check(run, 2);
    REQUIRE_THAT(run.result.err, StartsWith("error: unexpected argument '-o' found"));
  }
  Run plain = Fake(Version("0.0.90")).Call({"status"});
  Check(plain, 0);
  REQUIRE(plain.result.out ==
          "Server Status\n\n  Gateway: openshell\n  Server: https://127.0.0.1:17670\n  Status: "
          "Connected\n  Version: 0.0.90\n");
  FakeOpenShellSandboxOptions down = Version("0.0.91");
  down.gateway = "unreachable";
  Run early = Fake(down).Call({"status"});
  Check(early, 1);
  REQUIRE(early.result.out ==
          "Server Status\n\n  Gateway: openshell\n  Server: https://127.0.0.1:17670\n");
  REQUIRE(early.result.err ==
          "Error:   × client error (Connect)\n  ├─▶ tcp connect error\n  ╰─▶ Connection refused "
          "(os error 111)\n\n");
  Run current = Fake().Call({"status"});
  Check(current, 0);
  REQUIRE_THAT(current.result.out,
               Contains("  Status: Connected\n  Authentication: Authenticated (mTLS transport)\n"
                        "  Version: 0.0.111\n"));
}

TEST_CASE("connected_http: status says so, every gRPC command fails", "[fake_openshell]") {
  FakeOpenShellSandboxOptions options;
  options.gateway = "connected_http";
  Fake fake(options);
  Run status = fake.Call({"status", "-o", "json"});
  Check(status, 0);
  rapidjson::Document doc = Json(status.result.out);
  REQUIRE(std::string(doc["status"].GetString()) == "connected_http");
  REQUIRE(std::string(doc["http_status"].GetString()) == "200 OK");
  REQUIRE(std::string(doc["authentication"]["status"].GetString()) == "unverified");
  REQUIRE_FALSE(doc.HasMember("version"));
  const std::string grpc_error = doc["error"].GetString();
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"sandbox", "list", "-o", "json"},
                                             {"sandbox", "get", "x"},
                                             {"sandbox", "exec", "-n", "x", "--", "true"},
                                             {"sandbox", "delete", "x"},
                                             {"sandbox", "create", "--from", kImage},
                                             {"provider", "list"}}) {
    INFO(args[1]);
    Run run = fake.Call(args);
    Check(run, 1);
    REQUIRE(run.result.out.empty());
    REQUIRE(Unboxed(run.result.err) == grpc_error);
  }
}

TEST_CASE("the gateway's version is reported apart from the CLI's, 0.0 and 0.1 do not mix",
          "[fake_openshell]") {
  FakeOpenShellSandboxOptions options;
  options.version = "0.1.4";
  options.gateway_version = "0.1.6";
  Run status = Fake(options).Call({"status", "-o", "json"});
  Check(status, 0);
  REQUIRE(std::string(Json(status.result.out)["version"].GetString()) == "0.1.6");
  REQUIRE(Fake(options).Call({"--version"}).result.out == "openshell 0.1.4\n");
  options.version = "0.0.111";
  Run mixed = Fake(options).Call({"sandbox", "list"});
  Check(mixed, 1);
  REQUIRE_THAT(Unboxed(mixed.result.err), Contains("0.0.x and 0.1.x peers are not compatible"));
}

TEST_CASE("a bare --from name resolves to the community registry and fails to pull",
          "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  const std::string name = UniqueName("bare");
  Cleanup cleanup({name});
  Run run = Fake().Call({"sandbox", "create", "--name", name, "--from", "python"});
  Check(run, 1);
  const std::string message = Unboxed(run.result.err);
  REQUIRE_THAT(message, StartsWith("sandbox entered error phase while provisioning: "
                                   "ImagePullFailed: pull Docker image "
                                   "'ghcr.io/nvidia/openshell-community/"));
  REQUIRE(ContainersNamed(name).empty());
  Run missing = Fake().Call({"sandbox", "create", "--name", name, "--from", "./nowhere"});
  Check(missing, 1);
  REQUIRE_THAT(Unboxed(missing.result.err),
               StartsWith("local --from path does not exist: ./nowhere"));
}

TEST_CASE("each exec is confined by Landlock as the policy's filesystem_policy says",
          "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  TempDir work;
  const std::string name = UniqueName("landlock");
  Cleanup cleanup({name});
  Fake fake;
  // A network policy puts the sandbox in proxy mode, which adds the
  // baseline paths (/tmp writable among them).
  const std::string policy = work.Write(
      "policy.yaml",
      "version: 1\nfilesystem_policy:\n  read_only:\n    - /\n  read_write:\n    - /dev/zero\n"
      "network_policies:\n  allowed:\n    name: allowed\n    endpoints:\n"
      "      - host: allowed.test\n        port: 443\n"
      "process:\n  run_as_user: 1234\n  run_as_group: 1234\n");
  Check(fake.Call({"sandbox", "create", "--name", name, "--from", kImage, "--policy", policy,
                   "--detach", "--", "sleep", "infinity"}),
        0);
  auto sh = [&](const std::string& script) {
    return fake.Call({"sandbox", "exec", "-n", name, "--no-tty", "--", "sh", "-c", script});
  };
  Check(sh("cat /etc/hostname > /tmp/copied && echo x > /dev/zero"), 0);
  // Read rights only outside read_write: not even /dev/null, which OpenShell's
  // own default policy lists for that reason.
  Run null = sh("echo hidden > /dev/null");
  Check(null, 1);  // busybox sh's status for a redirection that failed
  REQUIRE_THAT(null.result.err, Contains("/dev/null: Permission denied"));
  Check(sh("echo x > /etc/written"), 1);

  // hard_requirement: a path that is not there fails every exec.
  const std::string missing = work.Write(
      "missing.yaml",
      "version: 1\nfilesystem_policy:\n  read_only:\n    - /\n  read_write:\n    - /nowhere\n"
      "landlock:\n  compatibility: hard_requirement\n"
      "process:\n  run_as_user: 1234\n  run_as_group: 1234\n");
  const std::string strict = UniqueName("strict");
  Cleanup strict_cleanup({strict});
  Check(fake.Call({"sandbox", "create", "--name", strict, "--from", kImage, "--policy", missing,
                   "--detach", "--", "sleep", "infinity"}),
        0);
  Run refused = fake.Call({"sandbox", "exec", "-n", strict, "--no-tty", "--", "true"});
  Check(refused, 1);
  REQUIRE_THAT(refused.result.err,
               Contains("Landlock path unavailable in hard_requirement mode: /nowhere (path does "
                        "not exist)"));
}

TEST_CASE("each exec gets the supervisor's environment, not the image's",
          "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  // An image whose ENV sets a variable and a PATH of its own.
  const std::string image = "mojoup-fake-openshell-env:test";
  const std::string maker = UniqueName("envimage");
  REQUIRE(RunWithEnv({}, {"docker", "create", "--name", maker, kImage, "true"}).result.exit_code ==
          0);
  Run committed = RunWithEnv({}, {"docker", "commit", "--change", "ENV FROM_IMAGE=yes",
                                  "--change", "ENV PATH=/image/bin:/usr/bin:/bin", maker, image});
  RunWithEnv({}, {"docker", "rm", "-f", maker});
  REQUIRE(committed.result.exit_code == 0);
  struct RemoveImage {
    std::string image;
    ~RemoveImage() { RunWithEnv({}, {"docker", "image", "rm", "-f", image}); }
  } remove_image{image};

  TempDir work;
  const std::string policy = work.Write(
      "policy.yaml", "version: 1\nprocess:\n  run_as_user: 1234\n  run_as_group: 1234\n");
  const std::string name = UniqueName("env");
  Cleanup cleanup({name});
  Fake fake;
  Check(fake.Call({"sandbox", "create", "--name", name, "--from", image, "--policy", policy,
                   "--env", "GIVEN=at-create", "--detach", "--", "sleep", "infinity"}),
        0);
  Run env = fake.Call({"sandbox", "exec", "-n", name, "--no-tty", "--no-login-shell", "--env",
                       "PER_EXEC=prefix", "--", "env"});
  // 0.0.111 has no --no-login-shell: ask again without it.
  if (env.result.exit_code == 2) {
    env = fake.Call(
        {"sandbox", "exec", "-n", name, "--no-tty", "--env", "PER_EXEC=prefix", "--", "env"});
  }
  Check(env, 0);
  const std::string& out = env.result.out;
  CHECK_THAT(out, Contains("OPENSHELL_SANDBOX=1\n"));
  CHECK_THAT(out, Contains("HOME=/sandbox\n"));
  CHECK_THAT(out, Contains("USER=1234\n"));
  CHECK_THAT(out, Contains("SHELL=/bin/bash\n"));
  CHECK_THAT(out, Contains("TERM=dumb\n"));
  CHECK_THAT(out, Contains("GIVEN=at-create\n"));
  CHECK_THAT(out, Contains("PER_EXEC=prefix\n"));
  CHECK_THAT(out, !Contains("FROM_IMAGE"));
  CHECK_THAT(out, !Contains("/image/bin"));
}

namespace {

// A policy with OpenShell's globs: *.example.com (one label) on port `p1`,
// **.deep.example.net (any depth) on `p2`, plain.example.org on `p3`.
std::string GlobPolicy(const std::string& p1, const std::string& p2, const std::string& p3) {
  return "version: 1\nfilesystem_policy:\n  read_only:\n    - /\n  read_write:\n    - /tmp\n"
         "process:\n  run_as_user: 1234\n  run_as_group: 1234\n"
         "network_policies:\n"
         "  one_label:\n    endpoints:\n      - { host: \"*.example.com\", port: " +
         p1 +
         " }\n"
         "    binaries:\n      - { path: \"/**\" }\n"
         "  any_depth:\n    endpoints:\n      - host: \"**.deep.example.net\"\n        ports:\n"
         "          - " +
         p2 +
         "\n    binaries:\n      - path: /**\n"
         "  plain:\n    endpoints:\n      - { host: plain.example.org, port: " +
         p3 +
         " }\n"
         "    binaries:\n      - { path: \"/**\" }\n";
}

}  // namespace

TEST_CASE("each sandbox's egress is its supervisor's proxy, with OpenShell's globs and answers",
          "[fake_openshell][docker][network]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  REQUIRE(mojoup::test::WhyNoPublicBridge() == "");
  const std::string gateway = mojoup::test::kPublicBridgeGateway;
  auto upstream_ca = *mojoup::credproxy::SessionCa::Create("fake upstream CA");
  mojoup::test::EchoServer one{*upstream_ca->ServerContext("one.example.com"), gateway};
  mojoup::test::EchoServer deep{*upstream_ca->ServerContext("x.y.deep.example.net"), gateway};
  mojoup::test::EchoServer plain{nullptr, gateway};
  const std::string p1 = std::to_string(one.port());
  const std::string p2 = std::to_string(deep.port());
  const std::string p3 = std::to_string(plain.port());
  TempDir work;
  FakeOpenShellSandboxOptions options;
  options.network = mojoup::test::kPublicBridge;
  options.upstream_ca = work.Write("upstream-ca.pem", upstream_ca->certificate_pem());
  for (const char* name :
       {"one.example.com", "a.b.example.com", "x.y.deep.example.net", "plain.example.org"}) {
    options.extra_hosts.push_back(std::string(name) + ":" + gateway);
  }
  options.extra_hosts.push_back("inside.example.com:10.9.9.9");
  Fake fake(options);
  const std::string policy = work.Write("policy.yaml", GlobPolicy(p1, p2, p3));
  const std::string name = UniqueName("proxy");
  Cleanup cleanup({name});
  Check(fake.Call({"sandbox", "create", "--name", name, "--from", kImage, "--policy", policy,
                   "--detach", "--", "sleep", "infinity"}),
        0);
  auto exec = [&](const std::string& line) {
    return fake.Call({"sandbox", "exec", "-n", name, "--no-tty", "--", "sh", "-c", line});
  };
  // OpenShell's variables name the proxy and its CA; the CA signs what the
  // sandbox meets, and nothing else in the image trusts it.
  Run env = exec(
      "env | grep -E '^(HTTPS_PROXY|NO_PROXY|NODE_USE_ENV_PROXY|SSL_CERT_FILE|"
      "NODE_EXTRA_CA_CERTS)=' | sort");
  CHECK(env.result.out ==
        "HTTPS_PROXY=http://10.200.0.1:3128\nNODE_EXTRA_CA_CERTS=/etc/openshell-tls/"
        "openshell-ca.pem\n"
        "NODE_USE_ENV_PROXY=1\nNO_PROXY=127.0.0.1,localhost,::1\n"
        "SSL_CERT_FILE=/etc/openshell-tls/ca-bundle.pem\n");
  Run tls =
      exec("curl -sS https://one.example.com:" + p1 +
           "/ | grep -c '\"method\"'; "
           "curl -sv -o /dev/null https://one.example.com:" +
           p1 +
           "/ 2>&1 | grep -o 'issuer: .*'; "
           "curl -s -o /dev/null --cacert /etc/ssl/certs/ca-certificates.crt https://"
           "one.example.com:" +
           p1 +
           "/ || echo untrusted-without-the-variables; "
           "curl -sS https://x.y.deep.example.net:" +
           p2 +
           "/ | grep -c '\"method\"'; "
           "echo one-label:$(curl -s -o /dev/null -w '%{http_connect}' https://a.b.example.com:" +
           p1 +
           "/); "
           "curl -s --noproxy '*' -m 5 -o /dev/null http://" +
           gateway + ":" + p3 + "/ || echo direct-unreachable");
  INFO(tls.result.out << tls.result.err);
  CHECK(tls.result.out ==
        "1\nissuer: CN=OpenShell Sandbox CA; O=OpenShell\nuntrusted-without-the-variables\n1\n"
        "one-label:403\ndirect-unreachable\n");
  CHECK(one.seen().size() == 2);  // curl, and curl -v
  CHECK(deep.seen().size() == 1);
  // Plain http in absolute form is forwarded; refusals are OpenShell's JSON.
  Run forward = exec("curl -sS http://plain.example.org:" + p3 +
                     "/hello | grep -c '\"method\"'; "
                     "curl -s http://nowhere.example.org:" +
                     p3 +
                     "/x?secret=1; echo; "
                     "curl -s http://inside.example.com:" +
                     p1 +
                     "/; echo; "
                     "bash -c 'exec 3<>/dev/tcp/10.200.0.1/3128; printf \"GET https://"
                     "plain.example.org/ HTTP/1.1\\r\\nHost: plain.example.org\\r\\n\\r\\n\" >&3; "
                     "cat <&3' | tr -d '\\r'");
  INFO(forward.result.out << forward.result.err);
  CHECK(forward.result.out ==
        "1\n{\"detail\":\"GET nowhere.example.org:" + p3 +
            "/x not permitted by policy\",\"error\":\"policy_denied\"}\n"
            "{\"detail\":\"GET inside.example.com:" +
            p1 +
            " blocked: internal address\",\"error\":\"ssrf_denied\"}\n"
            "HTTP/1.1 400 Bad Request\nContent-Length: 27\n\nUse CONNECT for HTTPS URLs");
  CHECK(plain.seen().size() == 1);
}

TEST_CASE("exec runs bash -lc, --no-login-shell from 0.1.0 runs bash -c",
          "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  const std::string name = UniqueName("login");
  Cleanup cleanup({name});
  Fake fake(Version("0.1.0"));
  // 0.1.x runs an image without USER as 1000, who cannot write /etc/profile:
  // the login files are read from a writable HOME instead.
  Check(fake.Call({"sandbox", "create", "--name", name, "--from", kImage, "--env", "HOME=/tmp",
                   "--detach", "--", "sleep", "infinity"}),
        0);
  auto exec = [&](std::vector<std::string> args) {
    std::vector<std::string> full{"sandbox", "exec", "-n", name, "--no-tty"};
    full.insert(full.end(), args.begin(), args.end());
    return fake.Call(full);
  };
  Run uid = exec({"--", "id", "-u"});
  Check(uid, 0);
  REQUIRE(uid.result.out == "1000\n");
  Check(exec({"--", "sh", "-c", "echo 'export MARK=login' > /tmp/.profile"}), 0);
  Run login = exec({"--", "sh", "-c", "echo \"${MARK:-none} $0\""});
  Check(login, 0);
  REQUIRE(login.result.out == "login sh\n");
  Run plain = exec({"--no-login-shell", "--", "sh", "-c", "echo \"${MARK:-none}\""});
  Check(plain, 0);
  REQUIRE(plain.result.out == "none\n");
  // --tty with a terminal on stdin streams it: the command reads a line that
  // arrives after it started (script(1) gives the fake a terminal).
  if (::access("/usr/bin/script", X_OK) == 0) {
    Run typed = fake.Shell(
        "(sleep 1; printf 'typed\\r'; sleep 1) | script -qec \"openshell sandbox exec -n " + name +
        " --tty -- sh -c 'read a; echo got:\\$a'\" /dev/null");
    Check(typed, 0);
    REQUIRE_THAT(typed.result.out, Contains("got:typed"));
  }
  Run old = Fake(Version("0.0.111"))
                .Call({"sandbox", "exec", "-n", name, "--no-login-shell", "--", "true"});
  Check(old, 2);
  REQUIRE_THAT(old.result.err, StartsWith("error: unexpected argument '--no-login-shell' found"));
  Check(fake.Call({"sandbox", "delete", name}), 0);
}

TEST_CASE(
    "a main process that exits: Error up to 0.0.111, Completed or Error with exit_code from "
    "0.1.0",
    "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  const std::string done = UniqueName("done");
  const std::string failed = UniqueName("failed");
  const std::string old = UniqueName("old");
  Cleanup cleanup({done, failed, old});
  Fake fake(Version("0.1.0"));
  Check(fake.Call({"sandbox", "create", "--name", done, "--from", kImage, "--", "true"}), 0);
  Check(fake.Call(
            {"sandbox", "create", "--name", failed, "--from", kImage, "--", "sh", "-c", "exit 3"}),
        0);
  REQUIRE(WaitForPhase(fake, done, "Completed") == "Completed");
  REQUIRE(WaitForPhase(fake, failed, "Error") == "Error");
  auto get = [&](const Fake& f, const std::string& name) {
    Run got = f.Call({"sandbox", "get", name, "-o", "json"});
    Check(got, 0);
    return Json(got.result.out);
  };
  REQUIRE(get(fake, done)["exit_code"].GetInt() == 0);
  REQUIRE(get(fake, failed)["exit_code"].GetInt() == 3);
  // Attached (a terminal, no --detach): 0.1.0 exits with the main process's
  // status; 0.0.111 fails whatever it was.
  if (::access("/usr/bin/script", X_OK) == 0) {
    const std::string attached = UniqueName("attach");
    Cleanup more({attached});
    Run run = fake.Shell("sleep 3 | script -qec \"openshell sandbox create --name " + attached +
                         " --from " + kImage + " -- sh -c 'echo main-ran; exit 5'\" /dev/null");
    Check(run, 5);
    REQUIRE_THAT(run.result.out, Contains("main-ran"));
    Check(fake.Call({"sandbox", "delete", attached}), 0);
    Fake old_attach;  // 0.0.111
    Run old_run = old_attach.Shell("sleep 3 | script -qec \"openshell sandbox create --name " +
                                   attached + " --from " + kImage + " -- true\" /dev/null");
    REQUIRE(old_run.result.exit_code != 0);
    Check(old_attach.Call({"sandbox", "delete", attached}), 0);
  }
  Fake old_fake;  // 0.0.111
  Check(old_fake.Call({"sandbox", "create", "--name", old, "--from", kImage, "--", "true"}), 0);
  REQUIRE(WaitForPhase(old_fake, old, "Error") == "Error");
  REQUIRE_FALSE(get(old_fake, old).HasMember("exit_code"));
}

TEST_CASE("providers: sandboxes see placeholders, never values, deleting one in use fails",
          "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  const std::string name = UniqueName("prov");
  Cleanup cleanup({name});
  Fake fake;
  Run created = fake.Call({"provider", "create", "--name", "anthropic-key", "--type", "claude",
                           "--credential", "ANTHROPIC_API_KEY=sk-secret"});
  Check(created, 0);
  REQUIRE(created.result.out == "✓ Created provider anthropic-key\n");
  Run again = fake.Call({"provider", "create", "--name", "anthropic-key", "--type", "claude",
                         "--credential", "ANTHROPIC_API_KEY=x"});
  Check(again, 1);
  REQUIRE(Unboxed(again.result.err) ==
          "code: 'Some entity that we attempted to create already exists', message: \"provider "
          "already exists\"");
  Run bad_type =
      fake.Call({"provider", "create", "--name", "x", "--type", "nonesuch", "--credential", "K=v"});
  Check(bad_type, 1);
  REQUIRE(Unboxed(bad_type.result.err) == "unsupported provider type or profile: nonesuch");
  Run listed = fake.Call({"provider", "list", "-o", "json"});
  Check(listed, 0);
  {
    rapidjson::Document doc = Json(listed.result.out);
    REQUIRE(doc.Size() == 1);
    REQUIRE(std::string(doc[0]["type"].GetString()) == "claude-code");
    REQUIRE(std::string(doc[0]["credential_keys"][0].GetString()) == "ANTHROPIC_API_KEY");
    REQUIRE(listed.result.out.find("sk-secret") == std::string::npos);
  }
  Run unknown_provider =
      fake.Call({"sandbox", "create", "--name", name, "--from", kImage, "--provider", "nope"});
  Check(unknown_provider, 1);
  REQUIRE_THAT(Unboxed(unknown_provider.result.err),
               StartsWith("provider 'nope' not found and 'nope' is not a recognized provider"));

  Check(fake.Call({"sandbox", "create", "--name", name, "--from", kImage, "--provider",
                   "anthropic-key", "--detach", "--", "sleep", "infinity"}),
        0);
  Run env = fake.Call(
      {"sandbox", "exec", "-n", name, "--no-tty", "--", "sh", "-c", "echo \"$ANTHROPIC_API_KEY\""});
  Check(env, 0);
  REQUIRE_THAT(env.result.out, StartsWith("openshell:resolve:env:v"));
  REQUIRE_THAT(env.result.out, Catch::Matchers::EndsWith("_ANTHROPIC_API_KEY\n"));
  Run in_use = fake.Call({"provider", "delete", "anthropic-key"});
  Check(in_use, 1);
  REQUIRE_THAT(Unboxed(in_use.result.err),
               Contains("provider 'anthropic-key' is attached to sandbox(es): " + name));
  Run missing = fake.Call({"provider", "delete", "nope"});
  Check(missing, 0);
  REQUIRE(missing.result.out == "! Provider nope not found\n");
  Check(fake.Call({"sandbox", "delete", name}), 0);
  Run deleted = fake.Call({"provider", "delete", "anthropic-key"});
  Check(deleted, 0);
  REQUIRE(deleted.result.out == "✓ Deleted provider anthropic-key\n");
}

TEST_CASE("the driver's network and host aliases", "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  const std::string name = UniqueName("net");
  Cleanup cleanup({name});
  FakeOpenShellSandboxOptions options;
  REQUIRE(options.network == "openshell-docker");
  options.host_gateway_ip = "10.213.0.1";
  Fake fake(options);
  Check(fake.Call({"sandbox", "create", "--name", name, "--from", kImage, "--detach", "--", "sleep",
                   "infinity"}),
        0);
  Run hosts = fake.Call({"sandbox", "exec", "-n", name, "--", "cat", "/etc/hosts"});
  Check(hosts, 0);
  REQUIRE_THAT(hosts.result.out, Contains("10.213.0.1\thost.openshell.internal"));
  REQUIRE_THAT(hosts.result.out, Contains("10.213.0.1\thost.docker.internal"));
  Check(fake.Call({"sandbox", "delete", name}), 0);
}

TEST_CASE("0.1.x refuses caller driver config and host binds unless the gateway allows them",
          "[fake_openshell]") {
  TempDir work;
  const std::string mount = work / "repo";
  std::filesystem::create_directories(mount);
  const std::string config = "{\"docker\":{\"mounts\":[{\"type\":\"bind\",\"source\":\"" + mount +
                             "\",\"target\":\"/work\"}]}}";
  const std::vector<std::string> args = {
      "sandbox", "create", "--name", "adm", "--from", "no-such-image:1", "--driver-config-json",
      config};
  FakeOpenShellSandboxOptions options = Version("0.1.2");
  Run refused = Fake(options).Call(args);
  Check(refused, 1);
  REQUIRE_THAT(Unboxed(refused.result.err),
               Contains("caller driver config is disabled; a gateway administrator must enable "
                        "allow_driver_config"));
  options.allow_driver_config = true;
  Run admission = Fake(options).Call(args);
  Check(admission, 1);
  REQUIRE_THAT(Unboxed(admission.result.err),
               Contains("host bind or image mount cannot be attached while resource admission is "
                        "enabled: no trusted label resolver"));
  options.enable_bind_mounts = false;
  Run binds_off = Fake(options).Call(args);
  Check(binds_off, 1);
  REQUIRE_THAT(Unboxed(binds_off.result.err), Contains("require enable_bind_mounts = true"));
}

namespace {

// A policy that lists one host on the plain upstream's port.
std::string ListedPolicy(const std::string& port) {
  return "version: 1\nfilesystem_policy:\n  read_only:\n    - /\n  read_write:\n    - /tmp\n"
         "process:\n  run_as_user: 1234\n  run_as_group: 1234\n"
         "network_policies:\n"
         "  listed:\n    endpoints:\n      - { host: listed.example.org, port: " +
         port +
         " }\n"
         "    binaries:\n      - { path: \"/**\" }\n";
}

}  // namespace

TEST_CASE("logs show the proxy's denials, then policy update opens an endpoint to the live sandbox",
          "[fake_openshell][docker][network]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  REQUIRE(mojoup::test::WhyNoPublicBridge() == "");
  const std::string gateway = mojoup::test::kPublicBridgeGateway;
  mojoup::test::EchoServer plain{nullptr, gateway};
  const std::string port = std::to_string(plain.port());
  TempDir work;
  FakeOpenShellSandboxOptions options;
  options.network = mojoup::test::kPublicBridge;
  for (const char* host : {"listed.example.org", "later.example.org"}) {
    options.extra_hosts.push_back(std::string(host) + ":" + gateway);
  }
  Fake fake(options);
  const std::string name = UniqueName("grant");
  Cleanup cleanup({name});
  Check(fake.Call({"sandbox", "create", "--name", name, "--from", kImage, "--policy",
                   work.Write("policy.yaml", ListedPolicy(port)), "--detach", "--", "sleep",
                   "infinity"}),
        0);
  const std::string later = "http://later.example.org:" + port + "/x";
  auto get = [&] {
    return fake.Call({"sandbox", "exec", "-n", name, "--no-tty", "--", "sh", "-c",
                      "curl -s -o /dev/null -w '%{http_code}' " + later + "?q=1"});
  };
  // Refused at once, and the refusal is in the gateway's log as the
  // sandbox pushed it.
  CHECK(get().result.out == "403");
  Run logs = fake.Call({"logs", name});
  Check(logs, 0);
  CHECK(std::regex_match(
      logs.result.out,
      std::regex(R"(\[[0-9]+\.[0-9]{3}\] \[sandbox\] \[OCSF \] \[ocsf\] HTTP:GET \[MED\] DENIED )"
                 R"(-\(0\) -> GET http://later\.example\.org:)" +
                 port + R"(/x \[policy:- engine:opa\] \[reason:endpoint later\.example\.org:)" +
                 port + R"( is not allowed by any policy\]\n)")));
  Check(fake.Call({"logs", name, "--source", "gateway"}), 0);
  CHECK(fake.Call({"logs", name, "--source", "gateway"}).result.out.empty());

  // Added, loaded, and then allowed; the same again changes nothing.
  const std::vector<std::string> add = {
      "policy",   "update", name,    "--add-endpoint", "later.example.org:" + port,
      "--binary", "/**",    "--wait"};
  Run added = fake.Call(add);
  Check(added, 0);
  CHECK(std::regex_match(added.result.err,
                         std::regex("✓ Policy version 2 submitted \\(hash: [0-9a-f]{12}\\)\n"
                                    "✓ Policy version 2 loaded \\(active version: 2\\)\n")));
  CHECK(get().result.out == "200");
  CHECK(plain.seen().size() == 1);
  Run again = fake.Call(add);
  Check(again, 0);
  CHECK(std::regex_match(again.result.err,
                         std::regex("· Policy unchanged \\(version 2, hash: [0-9a-f]{12}\\)\n")));
  // -n: the last lines only; there is one denial, then none.
  CHECK(fake.Call({"logs", name, "-n", "5"}).result.out == logs.result.out);

  // A revision that may not be waited for times out as the CLI does.
  Run late = fake.Call({"policy", "update", name, "--add-endpoint", "other.example.org:443",
                        "--binary", "/**", "--wait", "--timeout", "0"});
  Check(late, 124);
  CHECK_THAT(late.result.err, Contains("✗ Timeout waiting for policy version 3 to load\n"));
}

TEST_CASE("policy update refuses what the CLI refuses, before any sandbox", "[fake_openshell]") {
  Fake fake;
  struct Case {
    std::vector<std::string> args;
    std::string said;
  };
  for (const Case& c : std::vector<Case>{
           {{"--add-endpoint", "nohost"},
            "--add-endpoint expects host:port[:access[:protocol[:enforcement[:options]]]], got "
            "'nohost'"},
           {{"--add-endpoint", "a.example:0"},
            "--add-endpoint port must be in the range 1-65535, got '0' in 'a.example:0'"},
           {{"--add-endpoint", "a.example:https"},
            "--add-endpoint port segment must be a base-10 integer, got 'https' in "
            "'a.example:https'"},
           {{"--binary", "/**"}, "--binary can only be used with --add-endpoint"},
           {{"--add-endpoint", "a.example:1", "--add-endpoint", "b.example:2", "--rule-name", "r"},
            "--rule-name is only supported when exactly one --add-endpoint is provided"}}) {
    std::vector<std::string> args = {"policy", "update", "some-box"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    Run run = fake.Call(args);
    INFO(c.said);
    Check(run, 1);
    CHECK(Unboxed(run.result.err) == c.said);
  }
  // What the double does not model says so.
  Run dry = fake.Call({"policy", "update", "some-box", "--dry-run"});
  Check(dry, 2);
  CHECK_THAT(dry.result.err, Contains("not implemented by this test double"));
  Check(fake.Call({"logs", "some-box", "--tail"}), 2);
}

namespace {

FakeOpenShellSandboxOptions KubernetesGateway() {
  FakeOpenShellSandboxOptions options;
  options.driver = "kubernetes";
  return options;
}

// `docker` on this host, for what the fake's tests set up around it.
Run DockerCli(const std::vector<std::string>& args) {
  std::vector<std::string> full{"docker"};
  full.insert(full.end(), args.begin(), args.end());
  return RunWithEnv({}, full, 120s);
}

// The named volumes Docker has for sandbox `name`.
std::string VolumesOf(const std::string& name) {
  Run listed =
      DockerCli({"volume", "ls", "-q", "--filter", "label=openshell.ai/sandbox-name=" + name});
  Check(listed, 0);
  return listed.result.out;
}

// The test image with a file in /sandbox, as OpenShell's images have one.
class SeededImage {
 public:
  SeededImage() : tag_("fo-seeded:" + std::to_string(::getpid())) {
    const std::string box = "fo-seed-" + std::to_string(::getpid());
    Check(DockerCli({"run", "--name", box, "--network", "none", kImage, "sh", "-c",
                     "mkdir -p /sandbox/.config && echo seed > /sandbox/seed.txt"}),
          0);
    Check(DockerCli({"commit", box, tag_}), 0);
    DockerCli({"rm", "-f", box});
  }
  ~SeededImage() { DockerCli({"rmi", "-f", tag_}); }
  SeededImage(const SeededImage&) = delete;
  SeededImage& operator=(const SeededImage&) = delete;
  const std::string& tag() const { return tag_; }

 private:
  std::string tag_;
};

// Creates sandbox `name` on `fake` from `image` with `config`, detached.
void CreateKubernetesSandbox(const Fake& fake, const std::string& name, const std::string& image,
                             const std::string& config = "{}") {
  Run created = fake.Call({"sandbox", "create", "--name", name, "--from", image,
                           "--driver-config-json", config, "--detach", "--", "sleep", "infinity"});
  Check(created, 0);
}

}  // namespace

TEST_CASE("kubernetes: the driver's block is checked as the driver checks it", "[fake_openshell]") {
  Fake fake(KubernetesGateway());
  const std::string claim = R"("persistent_volume_claim":{"claim_name":"data"})";
  const std::vector<std::pair<std::string, std::string>> refused = {
      {R"({"kubernetes":"x"})", "template.driver_config.kubernetes must be an object"},
      {R"({"kubernetes":{"volume":[]}})",
       "invalid kubernetes driver_config: unknown field `volume`, expected one of `pod`, "
       "`containers`, `volumes`"},
      {R"({"kubernetes":{"pod":{"node_selector":5}}})",
       "invalid kubernetes driver_config: invalid type: floating point `5.0`, expected a map"},
      {R"({"kubernetes":{"containers":{"agent":{"volume_mounts":[{"name":"d","readonly":true}]}}}})",
       "invalid kubernetes driver_config: unknown field `readonly`, expected one of `name`, "
       "`mount_path`, `sub_path`, `read_only`"},
      {R"({"kubernetes":{"volumes":[{"name":"Data",)" + claim + "}]}}",
       "invalid kubernetes driver_config: volumes[].name must be a DNS-1123 label: use lowercase "
       "alphanumeric characters or '-', start and end with an alphanumeric character, and use at "
       "most 63 characters"},
      {R"({"kubernetes":{"volumes":[{"name":"workspace",)" + claim + "}]}}",
       "invalid kubernetes driver_config: volume name 'workspace' is reserved for "
       "OpenShell-managed volumes"},
      {R"({"kubernetes":{"volumes":[{"name":"d",)" + claim +
           R"(}],"containers":{"agent":{"volume_mounts":[{"name":"d","mount_path":"/work","read_only":false}]}}}})",
       "invalid kubernetes driver_config: volume mount 'd' cannot set read_only=false because the "
       "PVC volume is read_only=true"},
      {R"({"kubernetes":{"volumes":[{"name":"d",)" + claim +
           R"(}],"containers":{"agent":{"volume_mounts":[{"name":"d","mount_path":"/"}]}}}})",
       "invalid kubernetes driver_config: mount target must not be the container root"},
      {R"({"kubernetes":{"volumes":[{"name":"d",)" + claim +
           R"(}],"containers":{"agent":{"volume_mounts":[{"name":"d","mount_path":"/sandbox/"}]}}}})",
       "invalid kubernetes driver_config: mount target '/sandbox/' is reserved for the OpenShell "
       "workspace"},
      {R"({"kubernetes":{"containers":{"agent":{"volume_mounts":[{"name":"e","mount_path":"/w"}]}}}})",
       "invalid kubernetes driver_config: volume mount references unknown kubernetes "
       "driver_config volume 'e'"},
      {R"({"kubernetes":{"volumes":[{"name":"d",)" + claim +
           R"(}],"containers":{"agent":{"volume_mounts":[{"name":"d","mount_path":"/var/run/secrets"}]}}}})",
       "mount path '/var/run/secrets' conflicts with reserved OpenShell path "
       "'/var/run/secrets/openshell'"},
  };
  for (const auto& [config, message] : refused) {
    const std::string name = UniqueName("k8sbad");
    Run created = fake.Call(
        {"sandbox", "create", "--name", name, "--from", kImage, "--driver-config-json", config});
    INFO(config);
    Check(created, 1);
    REQUIRE_THAT(Unboxed(created.result.err),
                 Contains("code: 'Client specified an invalid argument'"));
    REQUIRE_THAT(Unboxed(created.result.err), Contains(message));
  }
}

TEST_CASE("kubernetes: no host binds, /sandbox a seeded volume of its own, deleted with it",
          "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  SeededImage image;
  TempDir work;
  const std::string host = work / "host";
  std::filesystem::create_directories(host);
  const std::string name = UniqueName("k8s");
  Cleanup cleanup({name});
  Fake fake(KubernetesGateway());
  // The docker block is dropped without a word: no bind, no error.
  CreateKubernetesSandbox(fake, name, image.tag(),
                          R"({"docker":{"mounts":[{"type":"bind","source":")" + host +
                              R"(","target":"/host","read_only":false}]},"kubernetes":{}})");
  REQUIRE_FALSE(VolumesOf(name).empty());
  auto exec = [&](std::vector<std::string> args) { return NoTtyExec(fake, name, args); };
  Run bind = exec({"--", "test", "-e", "/host"});
  Check(bind, 1);
  Run where = exec({"--", "sh", "-c", "pwd; id -u; id -g; echo $HOME; echo $USER; ls -A /sandbox"});
  Check(where, 0);
  REQUIRE(where.result.out ==
          "/sandbox\n1000\n1000\n/sandbox\n1000\n.config\n.workspace-initialized\nseed.txt\n");
  // fsGroup makes the workspace's root the sandbox group's; the seeded
  // files stay root's, readable.
  Run wrote = exec({"--", "sh", "-c", "echo mine > /sandbox/new.txt && cat /sandbox/seed.txt"});
  Check(wrote, 0);
  REQUIRE(wrote.result.out == "seed\n");

  Check(fake.Call({"sandbox", "delete", name}), 0);
  REQUIRE(ContainersNamed(name).empty());
  REQUIRE(VolumesOf(name).empty());
}

TEST_CASE("kubernetes: stop, start and a gateway restart recreate the pod and keep /sandbox",
          "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  SeededImage image;
  const std::string name = UniqueName("k8slife");
  Cleanup cleanup({name});
  Fake fake(KubernetesGateway());
  CreateKubernetesSandbox(fake, name, image.tag());
  auto exec = [&](std::vector<std::string> args) { return NoTtyExec(fake, name, args); };
  // Seeding happens once: what the sandbox removes does not come back.
  Check(exec({"--", "sh", "-c", "rm /sandbox/seed.txt && echo kept > /sandbox/work.txt"}), 0);
  const std::vector<std::string> before = ContainersNamed(name);
  REQUIRE(before.size() == 1);

  Run stopped = fake.Call({"sandbox", "stop", name});
  Check(stopped, 0);
  REQUIRE(stopped.result.out == "✓ Stopped sandbox " + name + "\n");
  REQUIRE(PhaseOf(fake, name) == "Stopped");
  Run refused = exec({"--", "true"});
  Check(refused, 1);
  REQUIRE_THAT(Unboxed(refused.result.err), Contains("is not ready (phase: Stopped)"));
  Run started = fake.Call({"sandbox", "start", name});
  Check(started, 0);
  REQUIRE(started.result.out == "✓ Started sandbox " + name + "\n");
  Run after_start = exec({"--", "ls", "/sandbox"});
  Check(after_start, 0);
  REQUIRE(after_start.result.out == "work.txt\n");

  Check(fake.Call({"fake-openshell-restart-gateway"}), 0);
  const std::vector<std::string> after = ContainersNamed(name);
  REQUIRE(after.size() == 1);
  REQUIRE(after != before);
  REQUIRE(PhaseOf(fake, name) == "Ready");
  Run kept = exec({"--", "cat", "/sandbox/work.txt"});
  Check(kept, 0);
  REQUIRE(kept.result.out == "kept\n");
  Check(fake.Call({"sandbox", "delete", name}), 0);
  REQUIRE(VolumesOf(name).empty());
}

TEST_CASE("kubernetes: a claim is a volume of its name, a missing one leaves it provisioning",
          "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  const std::string claim = "fo-claim-" + std::to_string(::getpid());
  const std::string name = UniqueName("k8sclaim");
  const std::string pending = UniqueName("k8spend");
  Cleanup cleanup({name, pending});
  Fake fake(KubernetesGateway());
  auto config = [](const std::string& claim_name) {
    return R"({"kubernetes":{"volumes":[{"name":"data","persistent_volume_claim":{"claim_name":")" +
           claim_name +
           R"(","read_only":false}}],"containers":{"agent":{"volume_mounts":[{"name":"data","mount_path":"/work","read_only":false}]}}}})";
  };
  Run waited = fake.Shell("OPENSHELL_PROVISION_TIMEOUT=1 openshell sandbox create --name " +
                          pending + " --from " + kImage + " --driver-config-json '" +
                          config(claim) + "' -- sleep infinity");
  Check(waited, 1);
  REQUIRE_THAT(Unboxed(waited.result.err), Contains("sandbox provisioning timed out after 1s"));
  REQUIRE(PhaseOf(fake, pending) == "Provisioning");
  Check(fake.Call({"sandbox", "delete", pending}), 0);

  Check(DockerCli({"volume", "create", claim}), 0);
  CreateKubernetesSandbox(fake, name, kImage, config(claim));
  Run wrote = NoTtyExec(fake, name, {"--", "sh", "-c", "echo shared > /work/out.txt"});
  Check(wrote, 0);
  Check(fake.Call({"sandbox", "delete", name}), 0);
  // The operator's claim outlives the sandbox, with what it wrote.
  Run read = DockerCli({"run", "--rm", "-v", claim + ":/v", kImage, "cat", "/v/out.txt"});
  DockerCli({"volume", "rm", "-f", claim});
  Check(read, 0);
  REQUIRE(read.result.out == "shared\n");
}

TEST_CASE(
    "upload: a work tree's git files, its .git only with --no-git-ignore, as the sandbox user",
    "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  TempDir work;
  const std::string repo = work / "repo";
  work.Write("repo/tracked.txt", "tracked\n");
  work.Write("repo/.gitignore", "*.log\n");
  auto git = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"});
    Check(RunWithEnv({}, args, 30s), 0);
  };
  git({"init", "-q"});
  git({"add", "."});
  git({"commit", "-qm", "one"});
  work.Write("repo/untracked.txt", "new\n");
  work.Write("repo/debug.log", "ignored\n");
  const std::string name = UniqueName("upload");
  Cleanup cleanup({name});
  Fake fake(KubernetesGateway());
  CreateKubernetesSandbox(fake, name, kImage);
  auto files = [&](const std::string& dir) {
    Run found = NoTtyExec(fake, name, {"--", "sh", "-c", "cd " + dir + " && find . | sort"});
    Check(found, 0);
    return found.result.out;
  };

  Run filtered = fake.Call({"sandbox", "upload", name, repo, "/sandbox/up"});
  Check(filtered, 0);
  REQUIRE(filtered.result.err ==
          "Uploading " + repo + " -> sandbox:/sandbox/up\n✓ Upload complete\n");
  REQUIRE(files("/sandbox/up") ==
          ".\n./repo\n./repo/.gitignore\n./repo/tracked.txt\n./repo/untracked.txt\n");
  Run owner = NoTtyExec(fake, name, {"--", "stat", "-c", "%u", "/sandbox/up/repo/tracked.txt"});
  Check(owner, 0);
  REQUIRE(owner.result.out == "1000\n");

  Check(fake.Call({"sandbox", "upload", name, repo, "/sandbox/full", "--no-git-ignore"}), 0);
  const std::string full = files("/sandbox/full");
  REQUIRE_THAT(full, Contains("./repo/.git/HEAD\n"));
  REQUIRE_THAT(full, Contains("./repo/debug.log\n"));
  Run log = NoTtyExec(fake, name, {"--", "git", "-C", "/sandbox/full/repo", "log", "--format=%s"});
  Check(log, 0);
  REQUIRE(log.result.out == "one\n");

  // No DEST: the session's working directory, /sandbox.
  Check(fake.Call({"sandbox", "upload", name, repo + "/tracked.txt"}), 0);
  REQUIRE(files("/sandbox").find("./tracked.txt\n") != std::string::npos);

  // The sandbox user cannot make a directory in /: the extract fails.
  Run denied = fake.Call({"sandbox", "upload", name, repo, "/denied/here"});
  Check(denied, 1);
  REQUIRE_THAT(denied.result.err, Contains("Permission denied"));
  REQUIRE_THAT(Unboxed(denied.result.err),
               Contains("ssh tar extract exited with status exit status: 1"));

  Run missing = fake.Call({"sandbox", "upload", name, work / "absent"});
  Check(missing, 1);
  REQUIRE_THAT(Unboxed(missing.result.err),
               Contains("local path does not exist: " + work / "absent"));
}

TEST_CASE("download: files and directories inside the workspace, nothing from outside it",
          "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  TempDir work;
  const std::string name = UniqueName("download");
  Cleanup cleanup({name});
  Fake fake(KubernetesGateway());
  CreateKubernetesSandbox(fake, name, kImage);
  Check(NoTtyExec(fake, name,
                  {"--", "sh", "-c",
                   "mkdir -p out/sub && echo one > out/one.txt && echo two > out/sub/two.txt && "
                   "ln -s /etc etc-link"}),
        0);

  Run file = fake.Call({"sandbox", "download", name, "out/one.txt", work / "got.txt"});
  Check(file, 0);
  REQUIRE(file.result.err ==
          "Downloading sandbox:out/one.txt -> " + work / "got.txt" + "\n✓ Download complete\n");
  REQUIRE(Slurp(work / "got.txt") == "one\n");

  Check(fake.Call({"sandbox", "download", name, "/sandbox/out", work / "tree"}), 0);
  REQUIRE(Slurp(work / "tree/one.txt") == "one\n");
  REQUIRE(Slurp(work / "tree/sub/two.txt") == "two\n");

  const std::vector<std::pair<std::string, std::string>> refused = {
      {"/etc/passwd",
       "sandbox source path '/etc/passwd' is outside the sandbox workspace (/sandbox)"},
      {"../etc/passwd",
       "sandbox source path '../etc/passwd' is outside the sandbox workspace (/sandbox)"},
      {"etc-link/passwd",
       "sandbox source path 'etc-link/passwd' resolves to '/etc/passwd', outside the sandbox "
       "workspace (/sandbox)"},
      {"out/none", "failed to resolve sandbox source path 'out/none'"},
  };
  for (const auto& [path, message] : refused) {
    INFO(path);
    Run got = fake.Call({"sandbox", "download", name, path, work / "outside"});
    Check(got, 1);
    REQUIRE_THAT(Unboxed(got.result.err), Contains(message));
    REQUIRE_FALSE(std::filesystem::exists(work / "outside"));
  }
}

TEST_CASE("protocol tcp needs a DNS hostname: no host or an IP literal is refused at create",
          "[fake_openshell]") {
  TempDir work;
  Fake fake;
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"      - host: 10.0.0.1\n        port: 443\n        protocol: tcp\n",
       "network policy 'api': protocol tcp endpoint '10.0.0.1' must use a DNS hostname, not an "
       "IP literal; direct IP connections bypass policy DNS and are blocked"},
      {"      - { port: 443, protocol: TCP, allowed_ips: [\"10.0.0.0/8\"] }\n",
       "network policy 'api': protocol tcp requires a DNS hostname; hostless allowed_ips "
       "endpoints are supported only by the forward proxy"},
  };
  for (const auto& [endpoint, message] : refused) {
    const std::string policy =
        work.Write("policy.yaml", "version: 1\nnetwork_policies:\n  api:\n    endpoints:\n" +
                                      endpoint + "    binaries:\n      - path: /**\n");
    Run created = fake.Call(
        {"sandbox", "create", "--name", UniqueName("tcp"), "--from", kImage, "--policy", policy});
    INFO(endpoint);
    Check(created, 1);
    REQUIRE_THAT(Unboxed(created.result.err),
                 Contains("code: 'Client specified an invalid argument', message: \"policy "
                          "contains unsafe content: " +
                          message));
  }
}

TEST_CASE("the gateway is chosen as the CLI does: -g, OPENSHELL_GATEWAY, the active file",
          "[fake_openshell]") {
  TempDir config;
  FakeOpenShellSandboxOptions options;
  options.gateway_name = "prod-k8s";
  options.remote = true;
  Fake fake(options);
  const std::string xdg = "XDG_CONFIG_HOME=" + config.path();
  // `status -o json`'s gateway and server, or its status when neither.
  auto status = [&](std::vector<std::string> env, std::vector<std::string> args) {
    env.push_back(xdg);
    Run run = fake.CallWith(env, args);
    Check(run, 0);
    rapidjson::Document doc = Json(run.result.out);
    if (!doc.HasMember("gateway")) return std::string(doc["status"].GetString());
    return std::string(doc["gateway"].GetString()) + " " + doc["server"].GetString();
  };
  const std::string seeded = "prod-k8s https://127.0.0.1:17670";
  // No choice made: the gateway the install seeded.
  CHECK(status({}, {"status", "-o", "json"}) == seeded);
  // -g is global: before the command or among its options, in each spelling.
  CHECK(status({}, {"-g", "prod-k8s", "status", "-o", "json"}) == seeded);
  CHECK(status({}, {"status", "-o", "json", "--gateway", "prod-k8s"}) == seeded);
  CHECK(status({}, {"--gateway=prod-k8s", "status", "-o", "json"}) == seeded);
  // A name with no record: status says not configured, other commands fail.
  CHECK(status({}, {"-g", "other", "status", "-o", "json"}) == "not_configured");
  const std::string unknown =
      "Unknown gateway 'other'. Register it first: openshell gateway add <endpoint> --name "
      "other Or list available gateways: openshell gateway select";
  Run list = fake.CallWith({xdg}, {"-g", "other", "sandbox", "list"});
  Check(list, 1);
  CHECK(Unboxed(list.result.err) == unknown);
  list = fake.CallWith({xdg, "OPENSHELL_GATEWAY=other"}, {"sandbox", "list"});
  Check(list, 1);
  CHECK(Unboxed(list.result.err) == unknown);
  // The flag wins over the variable; a blank variable is none.
  CHECK(status({"OPENSHELL_GATEWAY=other"}, {"-g", "prod-k8s", "status", "-o", "json"}) == seeded);
  CHECK(status({"OPENSHELL_GATEWAY= "}, {"status", "-o", "json"}) == seeded);
  Check(fake.CallWith({xdg}, {"-g", "../x", "sandbox", "list"}), 1);
  Run no_value = fake.CallWith({xdg}, {"sandbox", "list", "-g"});
  Check(no_value, 2);
  CHECK_THAT(no_value.result.err, StartsWith("error: a value is required for '--gateway"));

  // The user's record shadows the seeded one, and the active file selects it.
  OpenShellGatewayConfig mine;
  mine.name = "prod-k8s";
  mine.endpoint = "https://gw.example.com:8443";
  mine.remote = true;
  WriteOpenShellGatewayConfig(config.path(), mine);
  const std::string recorded = "prod-k8s https://gw.example.com:8443";
  CHECK(status({}, {"status", "-o", "json"}) == recorded);
  Run text = fake.CallWith({xdg}, {"status"});
  Check(text, 0);
  CHECK_THAT(
      text.result.out,
      StartsWith("Server Status\n\n  Gateway: prod-k8s\n  Server: https://gw.example.com:8443\n"
                 "  Status: Connected\n"));
  // An active file naming a gateway with no record.
  std::ofstream(config.path() + "/openshell/active_gateway") << "other\n";
  CHECK(status({}, {"status", "-o", "json"}) == "not_configured");
  Check(fake.CallWith({xdg}, {"sandbox", "list"}), 1);
  CHECK(status({}, {"-g", "prod-k8s", "status", "-o", "json"}) == recorded);
  // A gateway the user registered that this double does not play.
  mine.name = "staging";
  mine.active = false;
  WriteOpenShellGatewayConfig(config.path(), mine);
  Run staging = fake.CallWith({xdg}, {"-g", "staging", "sandbox", "list"});
  Check(staging, 2);
  CHECK_THAT(staging.result.err, Contains("not implemented by this test double"));
  // The log keeps each call as given.
  CHECK_THAT(fake.Log(), Contains(R"(["openshell","-g","staging","sandbox","list"])"));
}

TEST_CASE("WriteOpenShellGatewayConfig leaves what `openshell gateway add` leaves",
          "[fake_openshell]") {
  TempDir config;
  OpenShellGatewayConfig gateway;
  gateway.name = "prod-k8s";
  gateway.endpoint = "https://gw.example.com";
  gateway.remote = true;
  const std::string metadata = WriteOpenShellGatewayConfig(config.path(), gateway);
  const std::string dir = config.path() + "/openshell/gateways/prod-k8s";
  CHECK(metadata == dir + "/metadata.json");
  CHECK(Slurp(metadata) ==
        "{\n  \"name\": \"prod-k8s\",\n  \"gateway_endpoint\": \"https://gw.example.com\",\n"
        "  \"is_remote\": true,\n  \"gateway_port\": 443\n}");
  for (const char* file : {"ca.crt", "tls.crt", "tls.key"}) {
    struct stat info {};
    REQUIRE(::lstat((dir + "/mtls/" + file).c_str(), &info) == 0);
    CHECK((info.st_mode & 07777) == 0600);
  }
  CHECK(Slurp(config.path() + "/openshell/active_gateway") == "prod-k8s");
  gateway.auth_mode = "oidc";
  gateway.name = "sso";
  WriteOpenShellGatewayConfig(config.path(), gateway);
  CHECK(
      std::filesystem::is_regular_file(config.path() + "/openshell/gateways/sso/oidc_token.json"));
  CHECK_FALSE(std::filesystem::exists(config.path() + "/openshell/gateways/sso/mtls"));
}

namespace {

// `sandbox exec -n NAME --no-tty ARGS...` on `fake`.
Run ExecIn(const Fake& fake, const std::string& name, std::vector<std::string> args) {
  args.insert(args.begin(), {"sandbox", "exec", "-n", name, "--no-tty"});
  return fake.Call(args);
}

// The gateway's InvalidArgument refusal of an exec, as the CLI prints it.
void CheckRefused(const Run& run, const std::string& message) {
  Check(run, 1);
  CHECK(Unboxed(run.result.err) ==
        "code: 'Client specified an invalid argument', message: \"" + message + "\"");
}

}  // namespace

TEST_CASE("exec requests over the gateway's limits are refused with its words",
          "[fake_openshell][docker]") {
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) MOJOUP_SKIP(why);
  const std::string name = UniqueName("limits");
  Cleanup cleanup({name});
  Fake fake;
  Check(fake.Call({"sandbox", "create", "--name", name, "--from", kImage, "--detach", "--", "sleep",
                   "infinity"}),
        0);
  const std::string at_limit(32 * 1024, 'a');
  const std::string over = at_limit + "a";
  Run fits = ExecIn(fake, name, {"--", "sh", "-c", "printf %s \"$1\" | wc -c", "sh", at_limit});
  Check(fits, 0);
  CHECK(fits.result.out == "32768\n");
  CheckRefused(ExecIn(fake, name, {"--", "sh", "-c", "true", "sh", over}),
               "command argument 4 exceeds 32768 byte limit");
  std::vector<std::string> many = {"--", "true"};
  many.resize(1026, "x");
  CheckRefused(ExecIn(fake, name, many), "command array exceeds 1024 argument limit");
  CheckRefused(ExecIn(fake, name, {"--env", "B=" + over, "--", "true"}),
               "environment value for 'B' exceeds 32768 byte limit");
  CheckRefused(ExecIn(fake, name, {"--env", "B=two\nlines", "--", "true"}),
               "environment value for 'B' contains newline or carriage return characters");
  CheckRefused(ExecIn(fake, name, {"--workdir", "/" + std::string(4096, 'w'), "--", "true"}),
               "workdir exceeds 4096 byte limit");
  CheckRefused(ExecIn(fake, name, {"--workdir", "/tmp\r", "--", "true"}),
               "workdir contains newline or carriage return characters");
  // Each within its limit, 288 KiB together: the line the gateway assembles.
  std::vector<std::string> wide = {"--", "true"};
  wide.resize(11, at_limit);
  CheckRefused(ExecIn(fake, name, wide),
               "command construction failed: assembled command string exceeds 262144 byte limit");
  // A line break in an argument: refused by gateways before 0.0.82.
  Run script = ExecIn(fake, name, {"--", "sh", "-c", "echo one\necho two"});
  Check(script, 0);
  CHECK(script.result.out == "one\ntwo\n");
  FakeOpenShellSandboxOptions older;
  older.gateway_version = "0.0.81";
  Fake old(older);
  Cleanup old_cleanup({name + "o"});
  Check(old.Call({"sandbox", "create", "--name", name + "o", "--from", kImage, "--detach", "--",
                  "sleep", "infinity"}),
        0);
  CheckRefused(ExecIn(old, name + "o", {"--", "sh", "-c", "echo one\necho two"}),
               "command argument 2 contains newline or carriage return characters");
  Check(fake.Call({"sandbox", "delete", name}), 0);
}

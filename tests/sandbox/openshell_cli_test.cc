// The session's own `openshell sandbox exec`, on a stand-in CLI (a script):
// the caller's stdio, the signals the command must get, its exit code, and
// a CLI that is not there; the other calls on a scripted runner, ask's log
// read and `policy update --add-endpoint ... --wait` among them.
#include "runtime/openshell/openshell_cli.h"

#include <fcntl.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "../support/signal_state.h"
#include "../support/test_support.h"
#include "fmt/format.h"
#include "mojoup/internal/fd.h"
#include "mojoup/probe/testing/scripted_command_runner.h"

using mojoup::internal::Fd;
using mojoup::probe::SemVer;
using mojoup::probe::testing::ScriptedCommandRunner;
using mojoup::sandbox::OpenShellBackendOptions;
using mojoup::sandbox::OpenShellCli;
using mojoup::sandbox::OpenShellProviderProfile;
using mojoup::sandbox::Stdio;
using mojoup::test::HasSignal;
using mojoup::test::SignalMask;
using mojoup::test::Slurp;
using mojoup::test::TempDir;

TEST_CASE("openshell exec runs the CLI on the caller's stdio with the session's signals",
          "[openshell]") {
  TempDir dir;
  // Says its arguments, passes its input on, shows its signals, exits 7.
  // The signals are read by the shell itself: while it forks a reader, the
  // shell blocks its signals for a moment, and the reader could see that.
  const std::string cli = dir.Write(
      "openshell",
      "#!/bin/sh\necho \"$*\"; cat\n"
      "while read -r line; do case $line in SigBlk:*|SigIgn:*) echo \"$line\" >&2;; esac; done"
      " < /proc/$$/status\n"
      "exit 7\n");
  REQUIRE(::chmod(cli.c_str(), 0755) == 0);
  dir.Write("in", "typed\n");
  Fd in(::open((dir / "in").c_str(), O_RDONLY | O_CLOEXEC));
  Fd out(::open((dir / "out").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  Fd err(::open((dir / "err").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  REQUIRE((in.ok() && out.ok() && err.ok()));
  Stdio stdio;
  stdio.in = in.get();
  stdio.out = out.get();
  stdio.err = err.get();

  OpenShellBackendOptions options;
  options.path = cli;
  OpenShellCli openshell(options);
  auto code = [&] {
    // The session's signals are blocked, and some ignored, where it runs.
    mojoup::test::SignalState state({SIGINT}, {SIGPIPE, SIGUSR2});
    return openshell.Exec("box", "/work", {{"A", "1"}}, {"make", "test"}, stdio);
  }();

  REQUIRE(code.ok());
  CHECK(*code == 7);
  const std::string said = Slurp(dir / "out");
  CHECK_THAT(said, Catch::Matchers::StartsWith(
                       "sandbox exec -n box --no-tty --workdir /work --env A=1 -- /bin/sh -c "));
  CHECK_THAT(said, Catch::Matchers::EndsWith(" sh make test\ntyped\n"));
  const std::string signals = Slurp(dir / "err");
  CHECK(SignalMask(signals, "SigBlk") == 0ULL);
  const auto ignored = SignalMask(signals, "SigIgn");
  REQUIRE(ignored.has_value());
  CHECK_FALSE(HasSignal(*ignored, SIGPIPE));  // the session's default
  CHECK(HasSignal(*ignored, SIGUSR2));        // left as it was
  CHECK(openshell.running() == 0);

  // No stdio at all: /dev/null, and the exit code still comes through.
  Stdio none;
  none.in = none.out = none.err = -1;
  code = openshell.Exec("box", "/work", {}, {"true"}, none);
  REQUIRE(code.ok());
  CHECK(*code == 7);
}

TEST_CASE("openshell exec of a CLI that is not there says so", "[openshell]") {
  OpenShellBackendOptions options;
  options.path = "/nonexistent/openshell";
  OpenShellCli openshell(options);
  auto code = openshell.Exec("box", "/work", {}, {"true"}, Stdio{});
  REQUIRE_FALSE(code.ok());
  CHECK(absl::IsUnavailable(code.status()));
  CHECK(code.status().message() == "cannot run /nonexistent/openshell: No such file or directory");
}

TEST_CASE("openshell exec stages what the gateway would refuse by an exec before it",
          "[openshell]") {
  TempDir dir;
  // Keeps each call's words (one a line) and stdin; the staging call (the
  // one that makes the stage directory) fails when told to.
  const std::string cli = dir.Write("openshell", fmt::format(R"(#!/bin/sh
n=$(ls {0} | grep -c '^call')
printf '%s\n' "$@" > {0}/call$n; cat > {0}/in$n
case "$*" in *mkdir*) [ -e {0}/fail ] && {{ echo 'Error: refused' >&2; exit 1; }};; esac
exit 0
)",
                                                             dir.path()));
  REQUIRE(::chmod(cli.c_str(), 0755) == 0);
  OpenShellBackendOptions options;
  options.path = cli;
  OpenShellCli openshell(options);
  Stdio none;
  none.in = none.out = none.err = -1;
  const std::string big(40 * 1024, 'b');

  auto code = openshell.Exec("box", "/work", {{"A", "two\nlines"}}, {"echo", big}, none);
  REQUIRE(code.ok());
  CHECK(*code == 0);
  const std::string staging = Slurp(dir / "call0");
  CHECK_THAT(staging, Catch::Matchers::StartsWith("sandbox\nexec\n-n\nbox\n--no-tty\n--\n"
                                                  "/bin/sh\n-c\n"));
  CHECK_THAT(staging, Catch::Matchers::Contains("\nsh\n/tmp/.mojoup-stage-"));
  const std::string staged = Slurp(dir / "in0");
  CHECK_THAT(staged, Catch::Matchers::Contains("export A='two\nlines'\n"));
  CHECK_THAT(staged, Catch::Matchers::Contains("set -- 'echo' '" + big + "'\n"));
  const std::string command = Slurp(dir / "call1");
  CHECK_THAT(command, Catch::Matchers::StartsWith("sandbox\nexec\n-n\nbox\n--no-tty\n--workdir\n"
                                                  "/work\n--\n/bin/sh\n-c\n"));
  CHECK(command.find(big) == std::string::npos);
  CHECK(command.find("two") == std::string::npos);

  // A staging that fails runs nothing, and says why.
  dir.Write("fail", "");
  code = openshell.Exec("box2", "/work", {}, {"echo", big}, none);
  REQUIRE_FALSE(code.ok());
  CHECK(code.status().message() ==
        "OpenShell could not stage the command's large arguments and environment in the sandbox "
        "box2: refused");
  CHECK_FALSE(std::filesystem::exists(dir / "call3"));
}

namespace {

// An OpenShellCli whose every call but exec is answered by `runner`.
struct ScriptedCli {
  ScriptedCommandRunner runner;
  OpenShellCli cli{[this] {
    OpenShellBackendOptions options;
    options.path = "openshell";
    options.commands = &runner;
    return options;
  }()};
};

constexpr const char* kProfiles = "openshell provider list-profiles -o json";
constexpr const char* kList = "openshell sandbox list --selector mojoup.session=s1 -o json";

}  // namespace

TEST_CASE("openshell provider profiles: entries of another shape are skipped", "[openshell]") {
  ScriptedCli scripted;
  scripted.runner.Prints(kProfiles, R"([
    {"id": "anthropic", "display_name": "Anthropic",
     "credentials": [{"name": "key", "env_vars": ["ANTHROPIC_API_KEY", 7, "CLAUDE_KEY"]},
                     "odd", {"env_vars": "NOT_AN_ARRAY"}, {"name": "no env_vars"},
                     {"env_vars": [null, "THIRD"]}],
     "endpoints": [{"host": "api.anthropic.com", "port": 8443},
                   {"host": "a.example", "port": 0}, {"host": "b.example", "port": 65536},
                   {"host": "c.example", "port": "80"}, {"host": "d.example", "port": -1},
                   {"host": "e.example", "port": 80.5}, {"host": "f.example", "port": null},
                   {"host": "g.example"}, {"host": 5, "port": 1}, {"port": 2}, "h.example",
                   {"host": "i.example", "port": 65535, "protocol": "https"}]},
    {"id": 5}, {"credentials": []}, "openai", null,
    {"id": "bare"},
    {"id": "odd-lists", "credentials": {"env_vars": ["X"]}, "endpoints": "j.example"}
  ])");
  auto profiles = scripted.cli.ProviderProfiles();
  REQUIRE(profiles.ok());
  REQUIRE(profiles->size() == 3);
  const OpenShellProviderProfile& anthropic = (*profiles)[0];
  CHECK(anthropic.id == "anthropic");
  CHECK(anthropic.variables ==
        std::vector<std::string>{"ANTHROPIC_API_KEY", "CLAUDE_KEY", "THIRD"});
  CHECK(anthropic.hosts == std::vector<std::string>{"api.anthropic.com", "a.example", "b.example",
                                                    "c.example", "d.example", "e.example",
                                                    "f.example", "g.example", "i.example"});
  CHECK(anthropic.ports ==
        std::vector<std::uint16_t>{8443, 443, 443, 443, 443, 443, 443, 443, 65535});
  for (const auto& profile : {(*profiles)[1], (*profiles)[2]}) {
    CHECK(profile.variables.empty());
    CHECK(profile.hosts.empty());
    CHECK(profile.ports.empty());
  }
  CHECK((*profiles)[1].id == "bare");
  CHECK((*profiles)[2].id == "odd-lists");

  // No array, or no JSON: no profiles, and no error.
  for (const char* out : {R"({"id": "anthropic"})", "null", "anthropic\n", ""}) {
    INFO(out);
    scripted.runner.Prints(kProfiles, out);
    profiles = scripted.cli.ProviderProfiles();
    REQUIRE(profiles.ok());
    CHECK(profiles->empty());
  }
}

TEST_CASE("openshell sandbox list: entries of another shape are skipped", "[openshell]") {
  ScriptedCli scripted;
  scripted.runner.Prints(kList, R"([
    {"name": "mojoup-aaaaaaaaaaaa", "phase": "Ready", "id": "x",
     "labels": {"mojoup.session": "s1", "n": 5, "o": null, "team": "red"}},
    {"name": "mojoup-bbbbbbbbbbbb", "phase": "Provisioning", "labels": ["mojoup.session=s1"]},
    {"name": "mojoup-cccccccccccc", "phase": 1, "labels": null},
    {"name": "mojoup-dddddddddddd", "phase": "ready"},
    {"name": 5, "phase": "Ready"}, {"phase": "Ready"}, "mojoup-eeeeeeeeeeee", null, []
  ])");
  auto found = scripted.cli.ListSandboxes({{"mojoup.session", "s1"}});
  REQUIRE(found.ok());
  REQUIRE(found->size() == 4);
  CHECK((*found)[0].id == "mojoup-aaaaaaaaaaaa");
  CHECK((*found)[0].session == "s1");
  CHECK((*found)[0].labels ==
        std::map<std::string, std::string>{{"mojoup.session", "s1"}, {"team", "red"}});
  CHECK((*found)[0].running);
  for (std::size_t i = 1; i < 4; ++i) {
    INFO(i);
    CHECK((*found)[i].session.empty());
    // Looking the session up leaves an empty label behind.
    CHECK((*found)[i].labels == std::map<std::string, std::string>{{"mojoup.session", ""}});
    CHECK_FALSE((*found)[i].running);
  }
  CHECK((*found)[3].id == "mojoup-dddddddddddd");

  for (const char* out : {R"({"name": "mojoup-aaaaaaaaaaaa"})", "null", "[", ""}) {
    INFO(out);
    scripted.runner.Prints(kList, out);
    found = scripted.cli.ListSandboxes({{"mojoup.session", "s1"}});
    REQUIRE_FALSE(found.ok());
    CHECK(absl::IsInternal(found.status()));
    CHECK(found.status().message() ==
          "`openshell sandbox list -o json` did not print a JSON array");
  }
}

TEST_CASE("openshell sandbox phase and gateway version: what is not a string is unknown",
          "[openshell]") {
  ScriptedCli scripted;
  constexpr const char* kGet = "openshell sandbox get mojoup-aaaaaaaaaaaa -o json";
  constexpr const char* kStatus = "openshell status -o json";
  scripted.runner.Prints(kGet, R"({"name": "mojoup-aaaaaaaaaaaa", "phase": "Ready", "x": [1]})");
  CHECK(scripted.cli.SandboxPhase("mojoup-aaaaaaaaaaaa") == "Ready");
  scripted.runner.Prints(kStatus, R"({"status": "connected", "version": "0.1.2", "x": {}})");
  CHECK(scripted.cli.GatewayVersion() == SemVer{0, 1, 2});
  scripted.runner.Prints(kStatus, R"({"version": "dev"})");
  CHECK_FALSE(scripted.cli.GatewayVersion().has_value());

  for (const char* out :
       {R"({"phase": 1, "version": 1})", R"({"phase": null, "version": null})",
        R"({"name": "mojoup-aaaaaaaaaaaa"})", R"(["Ready"])", "null", "Ready", ""}) {
    INFO(out);
    scripted.runner.Prints(kGet, out);
    scripted.runner.Prints(kStatus, out);
    CHECK_FALSE(scripted.cli.SandboxPhase("mojoup-aaaaaaaaaaaa").has_value());
    CHECK_FALSE(scripted.cli.GatewayVersion().has_value());
  }
}

namespace {

using mojoup::probe::CommandResult;

// A denial as `openshell logs` prints it (openshell_logs_test.cc has more).
const std::string kDeniedLine =
    "[1.000] [sandbox] [OCSF ] [ocsf] NET:OPEN [MED] DENIED /usr/bin/curl(42) -> "
    "api.example.com:443 [policy:- engine:opa] [reason:endpoint api.example.com:443 is not "
    "allowed by any policy]";

CommandResult CliExited(int code, std::string err) {
  CommandResult result;
  result.outcome = CommandResult::Outcome::kExited;
  result.exit_code = code;
  result.err = std::move(err);
  return result;
}

constexpr const char* kGrantUpdate =
    "openshell policy update mojoup-aaaaaaaaaaaa --add-endpoint api.example.com:443 --binary /** "
    "--wait --timeout 30";

}  // namespace

TEST_CASE("openshell policy update: loaded, unchanged, timed out or failed, in one sentence",
          "[openshell]") {
  ScriptedCli scripted;
  auto add = [&] {
    return scripted.cli.AddEndpoint("mojoup-aaaaaaaaaaaa", "api.example.com", 443,
                                    std::chrono::seconds(30));
  };
  scripted.runner.Answer(kGrantUpdate,
                         CliExited(0,
                                   "\x1b[32m\xe2\x9c\x93\x1b[0m Policy version 2 submitted "
                                   "(hash: 0123456789ab)\n\xe2\x9c\x93 Policy version 2 "
                                   "loaded (active version: 2)\n"));
  auto done = add();
  REQUIRE(done.ok());
  CHECK(*done == "Policy version 2 loaded (active version: 2)");
  scripted.runner.Answer(kGrantUpdate,
                         CliExited(0, "\xc2\xb7 Policy unchanged (version 2, hash: ab)\n"));
  done = add();
  REQUIRE(done.ok());
  CHECK(*done == "Policy unchanged (version 2, hash: ab)");

  scripted.runner.Answer(kGrantUpdate,
                         CliExited(124,
                                   "\xe2\x9c\x97 Timeout waiting for policy version 3 "
                                   "to load\n"));
  done = add();
  REQUIRE_FALSE(done.ok());
  CHECK(done.status().message() ==
        "OpenShell's sandbox mojoup-aaaaaaaaaaaa did not load the policy allowing "
        "api.example.com:443 within 30 s");
  scripted.runner.Answer(kGrantUpdate,
                         CliExited(1, "\xe2\x9c\x97 Policy version 3 failed to load: bad\n"));
  done = add();
  REQUIRE_FALSE(done.ok());
  CHECK(done.status().message() == "OpenShell's Policy version 3 failed to load: bad");
  scripted.runner.Answer(kGrantUpdate, CliExited(1, "Error:   \xc3\x97 sandbox not found\n"));
  done = add();
  REQUIRE_FALSE(done.ok());
  CHECK(done.status().message() ==
        "OpenShell could not allow api.example.com:443 in the sandbox mojoup-aaaaaaaaaaaa: "
        "sandbox not found");
  // An IPv6 address cannot be an --add-endpoint: nothing is run.
  const std::size_t calls = scripted.runner.calls().size();
  done = scripted.cli.AddEndpoint("mojoup-aaaaaaaaaaaa", "[2001:db8::1]", 443,
                                  std::chrono::seconds(30));
  REQUIRE_FALSE(done.ok());
  CHECK(scripted.runner.calls().size() == calls);
}

TEST_CASE("openshell logs: the sandbox's own lines, the last 200", "[openshell]") {
  ScriptedCli scripted;
  const std::string command = "openshell logs mojoup-aaaaaaaaaaaa -n 200 --source sandbox";
  scripted.runner.Prints(command, kDeniedLine + "\n");
  auto read = scripted.cli.SandboxLogs("mojoup-aaaaaaaaaaaa", 200, std::chrono::seconds(5));
  REQUIRE(read.ok());
  CHECK(*read == kDeniedLine + "\n");
  scripted.runner.Answer(command, CliExited(1, "Error:   \xc3\x97 sandbox not found\n"));
  read = scripted.cli.SandboxLogs("mojoup-aaaaaaaaaaaa", 200, std::chrono::seconds(5));
  REQUIRE_FALSE(read.ok());
  CHECK(read.status().message() == "OpenShell could not give the sandbox's log: sandbox not found");
}

namespace {

// Records the calls that carry secrets in their environment too.
class RecordingRunner : public ScriptedCommandRunner {
 public:
  mojoup::probe::CommandResult RunWithEnvironment(const std::vector<std::string>& argv,
                                                  const std::vector<std::string>&,
                                                  std::chrono::milliseconds timeout) override {
    return Run(argv, timeout);
  }
};

}  // namespace

TEST_CASE("openshell with a named gateway: -g NAME first on every call", "[openshell]") {
  // Every call shape, through the runner and through the session's exec.
  auto every_call = [](const std::string& gateway) {
    TempDir dir;
    const std::string cli = dir.Write("openshell", "#!/bin/sh\necho \"$*\"\n");
    REQUIRE(::chmod(cli.c_str(), 0755) == 0);
    RecordingRunner runner;
    OpenShellBackendOptions options;
    options.path = cli;
    options.gateway = gateway;
    options.commands = &runner;
    options.version = SemVer{0, 1, 0};
    options.call_timeout = std::chrono::milliseconds(100);
    OpenShellCli openshell(options);
    mojoup::sandbox::OpenShellCreate create;
    create.name = "mojoup-aaaaaaaaaaaa";
    create.image = "debian";
    create.policy_file = "/p.yaml";
    (void)openshell.CreateSandbox(create);
    (void)openshell.SandboxPhase(create.name);
    (void)openshell.DeleteSandbox(create.name);
    (void)openshell.ListSandboxes({{"mojoup.session", "s1"}});
    (void)openshell.GatewayVersion();
    (void)openshell.ProviderProfiles();
    mojoup::sandbox::SandboxCredential key;
    key.name = "ANTHROPIC_API_KEY";
    key.value = "v";
    (void)openshell.CreateProvider("mojoup-aaaaaaaaaaaa-anthropic", "anthropic", {&key});
    (void)openshell.ProvidersOf(create.name);
    (void)openshell.DeleteProviders(create.name, {"mojoup-aaaaaaaaaaaa-anthropic"});
    (void)openshell.SignalCommand(create.name, SIGTERM);
    (void)openshell.SandboxLogs(create.name, 10, std::chrono::seconds(1));
    (void)openshell.AddEndpoint(create.name, "api.example.com", 443, std::chrono::seconds(1));
    Fd out(::open((dir / "out").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    Stdio stdio;
    stdio.in = -1;
    stdio.out = out.get();
    stdio.err = -1;
    REQUIRE(openshell.Exec(create.name, "/work", {}, {"true"}, stdio).ok());
    std::vector<std::string> calls = runner.calls();
    for (std::string& call : calls) call = call.substr(cli.size() + 1);
    calls.push_back(Slurp(dir / "out"));
    return calls;
  };
  const std::vector<std::string> named = every_call("prod-k8s");
  REQUIRE(named.size() == 13);
  for (const std::string& call : named) {
    INFO(call);
    CHECK_THAT(call, Catch::Matchers::StartsWith("-g prod-k8s "));
  }
  CHECK_THAT(named.back(), Catch::Matchers::StartsWith("-g prod-k8s sandbox exec -n "));
  // None named: the calls as they were, no -g anywhere.
  const std::vector<std::string> unnamed = every_call("");
  REQUIRE(unnamed.size() == named.size());
  for (std::size_t i = 0; i < unnamed.size(); ++i) {
    INFO(unnamed[i]);
    CHECK(unnamed[i].find("-g ") == std::string::npos);
    CHECK("-g prod-k8s " + unnamed[i] == named[i]);
  }
}

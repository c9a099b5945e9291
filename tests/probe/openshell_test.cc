// openshell.cli and openshell.gateway against the fake `openshell` executable,
// run by the real CommandRunner, for each gateway state; and through the
// CommandRunner seam (ScriptedRunner), for the gateway's version and
// `openshell-gateway config preflight`. The OpenShell texts used here and
// where each was read: libsandbox/testing/FAKE_OPENSHELL.md.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "../support/golden.h"
#include "../support/test_support.h"
#include "mojoup/probe/probe.h"
#include "mojoup/probe/report.h"
#include "mojoup/probe/testing/fake_openshell.h"
#include "mojoup/probe/testing/mock_kernel.h"

using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;
using mojoup::probe::Check;
using mojoup::probe::CheckOpenShell;
using mojoup::probe::CommandResult;
using mojoup::probe::ExplainGatewayRefusal;
using mojoup::probe::kModelledOpenShell;
using mojoup::probe::ParseSemVer;
using mojoup::probe::ProbeOptions;
using mojoup::probe::Report;
using mojoup::probe::ReportToJson;
using mojoup::probe::SemVer;
using mojoup::probe::Status;
using mojoup::probe::VerdictFor;
using mojoup::probe::testing::FakeOpenShellOptions;
using mojoup::probe::testing::MockKernel;
using mojoup::probe::testing::WriteFakeOpenShell;
using mojoup::test::TempDir;
using Gateway = FakeOpenShellOptions::Gateway;

namespace {

struct Result {
  Check cli;
  Check gateway;
};

// An `ssh` on PATH, which releases before 0.0.111 create sandboxes through.
void InstallSsh(const std::string& dir) {
  const std::string path = dir + "/ssh";
  std::ofstream(path) << "#!/bin/sh\nexit 255\n";
  ::chmod(path.c_str(), 0755);
}

Result Probe(const FakeOpenShellOptions& fake, ProbeOptions options = {}, bool ssh = true) {
  TempDir dir;
  WriteFakeOpenShell(dir.path(), fake);
  if (ssh) InstallSsh(dir.path());
  MockKernel kernel;
  kernel.env["PATH"] = "/nonexistent:" + dir.path();
  auto runner = mojoup::probe::MakeSystemCommandRunner();
  auto [cli, gateway] = CheckOpenShell(kernel, *runner, options);
  return {cli, gateway};
}

Result WithGateway(Gateway gateway) {
  FakeOpenShellOptions fake;
  fake.gateway = gateway;
  return Probe(fake);
}

CommandResult Exited(int code, std::string out, std::string err = {}) {
  CommandResult result;
  result.outcome = CommandResult::Outcome::kExited;
  result.exit_code = code;
  result.out = std::move(out);
  result.err = std::move(err);
  return result;
}

// The CommandRunner seam: answers by the program's file name and arguments
// ("openshell-gateway config preflight"), and records every call.
class ScriptedRunner : public mojoup::probe::CommandRunner {
 public:
  std::map<std::string, CommandResult> answers;

  CommandResult Run(const std::vector<std::string>& argv,
                    std::chrono::milliseconds timeout) override {
    std::string key = argv[0].substr(argv[0].rfind('/') + 1);
    for (std::size_t i = 1; i < argv.size(); ++i) key += " " + argv[i];
    CommandResult answer = Exited(2, "", "error: unexpected call " + key);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      calls_.emplace_back(key, timeout);
      if (auto it = answers.find(key); it != answers.end()) answer = it->second;
    }
    if (answer.outcome == CommandResult::Outcome::kTimedOut) std::this_thread::sleep_for(timeout);
    return answer;
  }

  // The timeout of each call of `key`, in order.
  std::vector<std::chrono::milliseconds> Calls(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::chrono::milliseconds> found;
    for (const auto& [call, timeout] : calls_) {
      if (call == key) found.push_back(timeout);
    }
    return found;
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<std::string, std::chrono::milliseconds>> calls_;
};

// `openshell status -o json` as the CLI prints a connected gateway (v0.0.111
// commands/gateway.rs status_to_json; the same keys from a v0.1.2 gateway).
std::string ConnectedJson(const std::string& gateway_version,
                          const std::string& status = "connected") {
  return R"({"authentication": {"provider": "mTLS transport", "status": "authenticated"},)"
         R"( "gateway": "local", "server": "https://127.0.0.1:17670", "status": ")" +
         status + R"(", "version": ")" + gateway_version + "\"}\n";
}

constexpr const char* kPreflight = "openshell-gateway config preflight";

// A PATH holding `openshell` (and `openshell-gateway` when asked), whose
// answers come from the runner, not from the files.
struct Seam {
  TempDir dir;
  MockKernel kernel;
  ScriptedRunner runner;

  Seam(const std::string& cli_version, const std::string& gateway_version,
       bool gateway_binary = false) {
    Install("openshell");
    Install("ssh");
    if (gateway_binary) Install("openshell-gateway");
    kernel.env["PATH"] = "/nonexistent:" + dir.path();
    runner.answers["openshell --version"] = Exited(0, "openshell " + cli_version + "\n");
    runner.answers["openshell status -o json"] = Exited(0, ConnectedJson(gateway_version));
  }

  void Install(const std::string& name) {
    const std::string path = dir.path() + "/" + name;
    std::ofstream(path) << "#!/bin/sh\nexit 99\n";
    ::chmod(path.c_str(), 0755);
  }

  Result Run(ProbeOptions options = {}) {
    auto [cli, gateway] = CheckOpenShell(kernel, runner, options);
    return {cli, gateway};
  }
};

}  // namespace

TEST_CASE("versions are read the way the CLI prints them", "[openshell]") {
  REQUIRE(ParseSemVer("openshell 0.0.111\n") == SemVer{0, 0, 111});
  REQUIRE(ParseSemVer("openshell 0.0.112-dev.6+gabc1234") == SemVer{0, 0, 112});
  REQUIRE(ParseSemVer("v1.41") == SemVer{1, 41, 0});
  REQUIRE_FALSE(ParseSemVer("openshell dev").has_value());
  REQUIRE(SemVer{0, 0, 60} < SemVer{0, 0, 61});
}

TEST_CASE("connected: both checks pass", "[openshell]") {
  Result r = WithGateway(Gateway::kConnected);
  INFO(r.cli.summary << " / " << r.gateway.summary);
  REQUIRE(r.cli.status == Status::kPass);
  REQUIRE_THAT(r.cli.summary, Contains("OpenShell 0.0.111"));
  REQUIRE(r.gateway.status == Status::kPass);
  REQUIRE_THAT(r.gateway.summary, Contains("local at https://127.0.0.1:17670 is connected"));
}

TEST_CASE("connected_http fails: only HTTP answered, so every sandbox command would fail",
          "[openshell]") {
  Result r = WithGateway(Gateway::kConnectedHttp);
  REQUIRE(r.gateway.status == Status::kFail);
  REQUIRE(r.gateway.reason ==
          "The OpenShell gateway local at https://127.0.0.1:17670 answers only over HTTP: its "
          "gRPC health check failed, and every sandbox command needs gRPC, so each would fail; "
          "restart it with `systemctl --user restart openshell-gateway`, and if it still answers "
          "only over HTTP, register it again with `openshell gateway add` so the CLI uses the "
          "gateway's TLS settings.");
  REQUIRE_THAT(r.gateway.detail, Contains("HTTP health: 200 OK"));

  SECTION("with the gRPC error, when the CLI gave one") {
    Seam seam("0.0.111", "");
    seam.runner.answers["openshell status -o json"] =
        Exited(0, R"({"gateway": "local", "server": "https://127.0.0.1:17670", "status": )"
                  R"("connected_http", "http_status": "200 OK", "error": "transport error"})");
    Result s = seam.Run();
    REQUIRE(s.gateway.status == Status::kFail);
    REQUIRE_THAT(s.gateway.reason, Contains("gRPC health check failed (transport error)"));
  }
}

TEST_CASE("each unhealthy gateway state fails with its cause and fix", "[openshell]") {
  struct Case {
    Gateway gateway;
    const char* cause;
    const char* fix;
  };
  const Case cases[] = {
      {Gateway::kError, "answers but is unhealthy", "journalctl --user -u openshell-gateway"},
      {Gateway::kDisconnected, "is disconnected: transport error", "systemctl --user enable"},
      {Gateway::kNotConfigured, "has no gateway configured", "openshell gateway add"},
      {Gateway::kUnreachable, "not reachable (exit 1: Error:", "systemctl --user enable"},
      {Gateway::kUnauthenticated, "does not accept this user's credentials",
       "openshell gateway login local"},
      {Gateway::kGarbage, "printed no status", "status -o json"},
  };
  for (const Case& c : cases) {
    Result r = WithGateway(c.gateway);
    INFO(r.gateway.reason);
    REQUIRE(r.cli.status == Status::kPass);
    REQUIRE(r.gateway.status == Status::kFail);
    REQUIRE_THAT(r.gateway.reason, Contains(c.cause));
    REQUIRE_THAT(r.gateway.reason, Contains(c.fix));
  }
}

TEST_CASE("a hanging gateway is cut off at the deadline", "[openshell]") {
  FakeOpenShellOptions fake;
  fake.gateway = Gateway::kHang;
  ProbeOptions options;
  options.timeout = std::chrono::milliseconds(300);
  auto start = std::chrono::steady_clock::now();
  Result r = Probe(fake, options);
  REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  REQUIRE(r.gateway.status == Status::kFail);
  REQUIRE_THAT(r.gateway.reason, Contains("did not answer within 0.3 s"));
}

TEST_CASE("a hanging CLI: the gateway is not asked", "[openshell]") {
  FakeOpenShellOptions fake;
  fake.hang_on_version = true;
  ProbeOptions options;
  options.timeout = std::chrono::milliseconds(300);
  Result r = Probe(fake, options);
  REQUIRE(r.cli.status == Status::kFail);
  REQUIRE_THAT(r.cli.reason, Contains("--version` did not answer within 0.3 s"));
  REQUIRE(r.gateway.status == Status::kSkip);
}

TEST_CASE("an OpenShell older than 0.0.92 lacks the JSON the runtime reads", "[openshell]") {
  FakeOpenShellOptions fake;
  fake.version = "0.0.91";
  Result r = Probe(fake);
  REQUIRE(r.cli.status == Status::kFail);
  REQUIRE_THAT(r.cli.reason,
               StartsWith("OpenShell 0.0.91 at ") &&
                   Contains("is too old: the openshell runtime reads `openshell status -o json` "
                            "and `openshell sandbox get -o json`, which OpenShell has only from "
                            "0.0.92; upgrade OpenShell to 0.0.92 or later."));
  REQUIRE(r.gateway.status == Status::kSkip);

  fake.version = "0.0.92";
  REQUIRE(Probe(fake).cli.status == Status::kPass);
}

TEST_CASE("an OpenShell before 0.0.111 without the host's ssh cannot create", "[openshell]") {
  FakeOpenShellOptions fake;
  fake.version = "0.0.110";
  Result r = Probe(fake, {}, /*ssh=*/false);
  REQUIRE(r.cli.status == Status::kFail);
  REQUIRE_THAT(r.cli.reason,
               StartsWith("OpenShell 0.0.110 at ") &&
                   Contains("creates sandboxes through the host's `ssh`, which is not on PATH; "
                            "install an ssh client (`apt-get install openssh-client`), or "
                            "upgrade OpenShell to 0.0.111 or later."));
  REQUIRE(r.gateway.status == Status::kSkip);
  REQUIRE(Probe(fake).cli.status == Status::kPass);
  // From 0.0.111 the created sandbox's command is its main process: no ssh.
  fake.version = "0.0.111";
  REQUIRE(Probe(fake, {}, /*ssh=*/false).cli.status == Status::kPass);
}

TEST_CASE("the gateway's own version: series that cannot be mixed fail", "[openshell]") {
  SECTION("a 0.0.x CLI with a 0.1.x gateway") {
    Seam seam("0.0.111", "0.1.2");
    Result r = seam.Run();
    REQUIRE(r.cli.status == Status::kPass);
    REQUIRE(r.gateway.status == Status::kFail);
    REQUIRE(r.gateway.reason ==
            "The OpenShell gateway local at https://127.0.0.1:17670 is 0.1.2 and the CLI "
            "0.0.111, releases of different series (0.1.x and 0.0.x), which cannot be mixed; "
            "install the CLI and the gateway from the same release.");
  }
  SECTION("a 0.1.x CLI with a 0.0.x gateway") {
    Seam seam("0.1.2", "0.0.111");
    Result r = seam.Run();
    REQUIRE(r.gateway.status == Status::kFail);
    REQUIRE_THAT(r.gateway.reason,
                 Contains("is 0.0.111 and the CLI 0.1.2") && Contains("which cannot be mixed"));
  }
  SECTION("through the fake executable too") {
    FakeOpenShellOptions fake;
    fake.version = "0.1.0";
    fake.gateway_version = "0.0.111";
    REQUIRE_THAT(Probe(fake).gateway.reason, Contains("cannot be mixed"));
  }
}

TEST_CASE("the gateway's own version: another release of the same series warns", "[openshell]") {
  Seam seam("0.1.2", "0.1.4");
  Result r = seam.Run();
  REQUIRE(r.gateway.status == Status::kWarn);
  REQUIRE(r.gateway.summary ==
          "The OpenShell gateway local at https://127.0.0.1:17670 is 0.1.4 but the CLI is 0.1.2, "
          "two releases of the 0.1.x series that OpenShell does not test together.");
  REQUIRE(r.gateway.remedy == "Install the same OpenShell release for both.");
  REQUIRE(r.gateway.detail == "gateway version 0.1.4");
}

TEST_CASE("the gateway's own version: a release newer than those modelled warns", "[openshell]") {
  REQUIRE(kModelledOpenShell.newest == SemVer{0, 1, 10});
  REQUIRE(kModelledOpenShell.oldest == SemVer{0, 0, 92});
  SECTION("0.1.10, the newest modelled, passes") {
    Seam seam("0.1.10", "0.1.10");
    REQUIRE(seam.Run().gateway.status == Status::kPass);
  }
  SECTION("0.1.11") {
    Seam seam("0.1.11", "0.1.11");
    Result r = seam.Run();
    REQUIRE(r.gateway.status == Status::kWarn);
    REQUIRE(r.gateway.summary ==
            "The OpenShell gateway local at https://127.0.0.1:17670 is 0.1.11, newer than 0.1.10, "
            "the newest release this node was written for, so refusals it gives may go "
            "unexplained.");
    REQUIRE(r.gateway.remedy ==
            "Install OpenShell 0.1.10 for the CLI and the gateway, or a mojoup-node release that "
            "knows OpenShell 0.1.11.");
  }
  SECTION("a 0.2 series") {
    Seam seam("0.2.0", "0.2.0");
    Result r = seam.Run();
    REQUIRE(r.gateway.status == Status::kWarn);
    REQUIRE_THAT(r.gateway.summary, Contains("is 0.2.0, newer than 0.1.10"));
  }
}

TEST_CASE("gateway preflight: asked only of a 0.1 installation, with the probe's timeout",
          "[openshell]") {
  ProbeOptions options;
  options.timeout = std::chrono::milliseconds(1500);
  SECTION("0.1.x CLI and `openshell-gateway` on PATH: asked, and a pass is noted") {
    Seam seam("0.1.2", "0.1.2", true);
    seam.runner.answers[kPreflight] = Exited(0, "");
    Result r = seam.Run(options);
    REQUIRE(r.gateway.status == Status::kPass);
    REQUIRE(seam.runner.Calls(kPreflight) ==
            std::vector<std::chrono::milliseconds>{options.timeout});
    REQUIRE(r.gateway.detail ==
            "gateway version 0.1.2; `openshell-gateway config preflight` passed");
  }
  SECTION("a 0.0.x CLI: never asked, even with `openshell-gateway` on PATH") {
    Seam seam("0.0.111", "0.0.111", true);
    REQUIRE(seam.Run(options).gateway.status == Status::kPass);
    REQUIRE(seam.runner.Calls(kPreflight).empty());
  }
  SECTION("no `openshell-gateway` on PATH: not asked") {
    Seam seam("0.1.2", "0.1.2");
    REQUIRE(seam.Run(options).gateway.status == Status::kPass);
    REQUIRE(seam.runner.Calls(kPreflight).empty());
  }
  SECTION("a preflight that hangs is cut off and only noted") {
    Seam seam("0.1.2", "0.1.2", true);
    CommandResult hang;
    hang.outcome = CommandResult::Outcome::kTimedOut;
    seam.runner.answers[kPreflight] = hang;
    options.timeout = std::chrono::milliseconds(200);
    Result r = seam.Run(options);
    REQUIRE(r.gateway.status == Status::kPass);
    REQUIRE_THAT(r.gateway.detail, Contains("config preflight` did not answer within 0.2 s"));
  }
}

// The words around `category=legacy_schema_v1` are ours: the gateway's tests
// verify only that substring (and category=malformed, detected_version=).
constexpr const char* kLegacyPreflight =
    "Error:   × gateway config /home/ada/.config/openshell/gateway.toml: category=legacy_schema_v1"
    "\n  │ detected_version=1; failed input was preserved\n";

TEST_CASE("gateway preflight: a config that is not version 2 fails naming the setting",
          "[openshell]") {
  Seam seam("0.1.2", "0.1.2", true);
  seam.runner.answers[kPreflight] = Exited(1, "", kLegacyPreflight);
  Result r = seam.Run();
  REQUIRE(r.gateway.status == Status::kFail);
  REQUIRE(r.gateway.reason ==
          "The OpenShell gateway's gateway.toml is not schema `version = 2`, which OpenShell 0.1 "
          "gateways refuse to start with; add `version = 2` under `[openshell]`, move driver "
          "settings under `[openshell.drivers.<name>]` (Docker's `sandbox_namespace` is now "
          "`sandbox_label`), and check the file with `openshell-gateway config preflight`.");
  REQUIRE_THAT(r.gateway.detail, Contains("category=legacy_schema_v1"));

  SECTION("and it names the cause of a gateway that is down") {
    seam.runner.answers["openshell status -o json"] = Exited(
        1, "", "Error:   × client error (Connect)\n  ╰─▶ Connection refused (os error 111)\n");
    REQUIRE_THAT(seam.Run().gateway.reason, StartsWith("The OpenShell gateway's gateway.toml is "
                                                       "not schema `version = 2`"));
  }
}

TEST_CASE("gateway preflight: any other failure fails with what it said", "[openshell]") {
  Seam seam("0.1.2", "0.1.2", true);
  seam.runner.answers[kPreflight] = Exited(
      1, "",
      "Error:   × gateway config /etc/gw.toml is invalid: category=malformed detected_version=2\n");
  Result r = seam.Run();
  REQUIRE(r.gateway.status == Status::kFail);
  REQUIRE(r.gateway.reason ==
          "The OpenShell gateway's configuration fails `openshell-gateway config preflight` "
          "(exit 1: Error: gateway config /etc/gw.toml is invalid: category=malformed "
          "detected_version=2); fix gateway.toml as the preflight says, run it again, and restart "
          "the gateway with `systemctl --user restart openshell-gateway`.");
}

TEST_CASE("gateway preflight: a finding naming a refused setting gets that setting's sentence",
          "[openshell]") {
  // No 0.1.x preflight is known to report allow_driver_config or resource
  // admission (both are valid settings); should one ever print the gateway's
  // refusal, the doctor says the same sentence the runtime would.
  Seam seam("0.1.2", "0.1.2", true);
  seam.runner.answers[kPreflight] =
      Exited(1, "",
             "caller driver config is disabled; a gateway administrator must enable "
             "allow_driver_config\n");
  Result r = seam.Run();
  REQUIRE(r.gateway.status == Status::kFail);
  REQUIRE(r.gateway.reason == *ExplainGatewayRefusal("caller driver config is disabled"));
}

// `openshell sandbox create` stderr as the v0.1.2 CLI prints a gateway refusal,
// wrapped by miette (captured live by another project; the messages are the
// gateway's own, read in its source).
std::string Wrapped(const std::string& first, const std::string& second) {
  return "Error:   × code: 'The system is not in a state required for the operation's\n  │ "
         "execution', message: \"" +
         first + "\n  │ " + second + "\"\n";
}

TEST_CASE("ExplainGatewayRefusal: one sentence naming the setting, per refusal", "[openshell]") {
  struct Case {
    std::string text;
    std::string sentence;
  };
  const Case cases[] = {
      {Wrapped("caller driver config is disabled; a gateway",
               "administrator must enable allow_driver_config"),
       "The OpenShell gateway refuses the sandbox's mounts because caller driver config is off "
       "(`allow_driver_config`, off by default since OpenShell 0.1.0); set "
       "`allow_driver_config = true` under `[openshell.drivers.docker]` in the gateway's "
       "gateway.toml and restart the gateway."},
      {Wrapped("docker bind mounts require enable_bind_mounts = true",
               "in [openshell.drivers.docker]"),
       "The OpenShell gateway refuses host bind mounts because its Docker driver has "
       "`enable_bind_mounts` off; set `enable_bind_mounts = true` under "
       "`[openshell.drivers.docker]` in the gateway's gateway.toml and restart the gateway."},
      // 0.0.x (v0.0.111 openshell-driver-docker), unwrapped.
      {"Error:   × docker volume 'repo' is backed by a host bind mount and requires "
       "enable_bind_mounts = true in [openshell.drivers.docker]",
       "The OpenShell gateway refuses host bind mounts because its Docker driver has "
       "`enable_bind_mounts` off; set `enable_bind_mounts = true` under "
       "`[openshell.drivers.docker]` in the gateway's gateway.toml and restart the gateway."},
      {Wrapped("host bind or image mount cannot be attached while",
               "resource admission is enabled: no trusted label resolver"),
       "The OpenShell gateway refuses host bind mounts while resource admission is on, because "
       "it has no trusted label resolver for host paths; set `enabled = false` under "
       "`[openshell.drivers.docker.resource_admission]` in the gateway's gateway.toml and "
       "restart the gateway."},
      {Wrapped("external resource not admitted by required", "labels"),
       "The OpenShell gateway's resource admission refuses a volume that lacks its approval "
       "labels; label the volume `openshell.ai/sandbox-attachable=true` and "
       "`openshell.ai/sandbox-attachable-workspace=<workspace>`, or set `enabled = false` under "
       "`[openshell.drivers.docker.resource_admission]` and restart the gateway."},
      {Wrapped("sandbox uses forbidden driver config or lacks admission",
               "provenance; recreate it"),
       "The OpenShell gateway will not run this sandbox again: it was created before the "
       "gateway's current admission settings, or before OpenShell 0.1; delete it with "
       "`openshell sandbox delete <name>` and create it again."},
      {kLegacyPreflight,
       "The OpenShell gateway's gateway.toml is not schema `version = 2`, which OpenShell 0.1 "
       "gateways refuse to start with; add `version = 2` under `[openshell]`, move driver "
       "settings under `[openshell.drivers.<name>]` (Docker's `sandbox_namespace` is now "
       "`sandbox_label`), and check the file with `openshell-gateway config preflight`."},
      // v0.0.111 grpc/validation.rs, INVALID_ARGUMENT.
      {"Error:   × code: 'Client specified an invalid argument', message: \"name exceeds "
       "maximum length (24 > 19)\"",
       "OpenShell refuses sandbox names longer than 19 characters; use a name of at most 19 "
       "lowercase letters, digits and hyphens."},
      {"Error:   × code: 'Client specified an invalid argument', message: \"name must contain "
       "only lowercase alphanumeric characters or hyphens\"",
       "OpenShell refuses sandbox names that are not DNS-1123 labels; use only lowercase "
       "letters, digits and single hyphens, neither first nor last, at most 19 characters."},
      // tonic's UNIMPLEMENTED, as a 0.0.x/0.1.x mix would give it (inferred, not captured).
      {"Error:   × code: 'Operation is not implemented or not supported', message: \"\"",
       "The OpenShell gateway does not implement a call the CLI made, the sign of a 0.0.x CLI "
       "with a 0.1.x gateway or the reverse, which cannot be mixed; install the CLI and the "
       "gateway from the same release (compare `openshell --version` with the `version` in "
       "`openshell status -o json`)."},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    std::optional<std::string> sentence = ExplainGatewayRefusal(c.text);
    REQUIRE(sentence.has_value());
    REQUIRE(*sentence == c.sentence);
  }
  SECTION("texts that are not a known refusal") {
    REQUIRE_FALSE(ExplainGatewayRefusal("").has_value());
    REQUIRE_FALSE(ExplainGatewayRefusal(
                      "Error:   × sandbox entered error phase while provisioning: ImagePullFailed")
                      .has_value());
    REQUIRE_FALSE(ExplainGatewayRefusal("log_level exceeds maximum length (40 > 32)").has_value());
    REQUIRE_FALSE(
        ExplainGatewayRefusal("workspace name exceeds maximum length (20 > 63)").has_value());
  }
}

// The gateway's own gateway.toml, read through the Kernel seam (MockKernel
// files and environment). Each refusal the file guarantees is the sentence
// ExplainGatewayRefusal gives for the gateway's words, naming the file.
constexpr const char* kHomeConfig = "/home/ada/.config/openshell/gateway.toml";

// The sentence the runtime gives for the gateway's refusal `said`, with the
// file it names.
std::string RefusalNaming(const std::string& said, const std::string& path = kHomeConfig) {
  std::string sentence = ExplainGatewayRefusal(said).value();
  for (std::size_t at = sentence.find("gateway.toml"); at != std::string::npos;
       at = sentence.find("gateway.toml", at + path.size())) {
    sentence.replace(at, std::string("gateway.toml").size(), path);
  }
  return sentence;
}

const std::string kBindMountsOff = "docker bind mounts require enable_bind_mounts = true";
const std::string kDriverConfigOff = "caller driver config is disabled";
const std::string kAdmissionOn = "while resource admission is enabled";
const std::string kLegacy = "category=legacy_schema_v1";

// A 0.1.x gateway.toml that grants what the node's sandboxes need.
constexpr const char* kGood01 =
    "[openshell]\nversion = 2\n\n"
    "[openshell.drivers.docker]\nallow_driver_config = true\nenable_bind_mounts = true\n\n"
    "[openshell.drivers.docker.resource_admission]\nenabled = false\n";

Result WithConfig(const std::string& version, const std::string& toml) {
  Seam seam(version, version);
  seam.kernel.env["HOME"] = "/home/ada";
  seam.kernel.files[kHomeConfig] = toml;
  return seam.Run();
}

TEST_CASE("gateway.toml, 0.0.x: bind mounts off is refused before any sandbox", "[openshell]") {
  SECTION("no enable_bind_mounts: its default, off") {
    Result r = WithConfig("0.0.111", "[openshell.gateway]\nlog_level = \"info\"\n");
    REQUIRE(r.gateway.status == Status::kFail);
    REQUIRE(r.gateway.reason ==
            "The OpenShell gateway refuses host bind mounts because its Docker driver has "
            "`enable_bind_mounts` off; set `enable_bind_mounts = true` under "
            "`[openshell.drivers.docker]` in the gateway's "
            "/home/ada/.config/openshell/gateway.toml and restart the gateway.");
    REQUIRE(r.gateway.reason == RefusalNaming(kBindMountsOff));
    REQUIRE(r.gateway.detail == "read /home/ada/.config/openshell/gateway.toml");
  }
  SECTION("an empty file is all defaults") {
    REQUIRE(WithConfig("0.0.92", "").gateway.reason == RefusalNaming(kBindMountsOff));
  }
  SECTION("enable_bind_mounts = false") {
    Result r = WithConfig("0.0.111", "[openshell.drivers.docker]\nenable_bind_mounts = false\n");
    REQUIRE(r.gateway.reason == RefusalNaming(kBindMountsOff));
  }
  SECTION("enable_bind_mounts = true passes, and says the file was read") {
    Result r = WithConfig("0.0.111", "[openshell.drivers.docker]\nenable_bind_mounts = true\n");
    REQUIRE(r.gateway.status == Status::kPass);
    REQUIRE(r.gateway.detail ==
            "gateway version 0.0.111; /home/ada/.config/openshell/gateway.toml allows the "
            "sandboxes' bind mounts");
  }
  SECTION("the 0.1.x settings are not asked of a 0.0.x gateway") {
    Result r = WithConfig("0.0.111",
                          "[openshell]\nversion = 1\n[openshell.drivers.docker]\n"
                          "enable_bind_mounts = true\n");
    REQUIRE(r.gateway.status == Status::kPass);
  }
}

TEST_CASE("gateway.toml, 0.0.x: a schema version above 1 stops the gateway", "[openshell]") {
  const std::string toml =
      "[openshell]\nversion = 2\n[openshell.drivers.docker]\nenable_bind_mounts = true\n";
  Result r = WithConfig("0.0.111", toml);
  REQUIRE(r.gateway.status == Status::kFail);
  REQUIRE(r.gateway.reason ==
          "The OpenShell gateway's /home/ada/.config/openshell/gateway.toml declares a schema "
          "`version` above 1, which OpenShell 0.0.x gateways refuse to start with; remove "
          "`version` from `[openshell]` or set it to 1, or install OpenShell 0.1 for the CLI "
          "and the gateway.");
  // The gateway's own words (v0.0.111 config_file.rs) give the same sentence.
  REQUIRE(*ExplainGatewayRefusal("unsupported gateway config version 2; this build only "
                                 "supports version 1") ==
          "The OpenShell gateway's gateway.toml declares a schema `version` above 1, which "
          "OpenShell 0.0.x gateways refuse to start with; remove `version` from `[openshell]` or "
          "set it to 1, or install OpenShell 0.1 for the CLI and the gateway.");

  SECTION("and it names the cause of a gateway that is down") {
    Seam seam("0.0.111", "");
    seam.kernel.env["HOME"] = "/home/ada";
    seam.kernel.files[kHomeConfig] = toml;
    seam.runner.answers["openshell status -o json"] = Exited(
        1, "", "Error:   × client error (Connect)\n  ╰─▶ Connection refused (os error 111)\n");
    REQUIRE(seam.Run().gateway.reason == r.gateway.reason);
  }
  SECTION("but bind mounts off does not hide a gateway that is down") {
    Seam seam("0.0.111", "");
    seam.kernel.env["HOME"] = "/home/ada";
    seam.kernel.files[kHomeConfig] = "";
    seam.runner.answers["openshell status -o json"] = Exited(
        1, "", "Error:   × client error (Connect)\n  ╰─▶ Connection refused (os error 111)\n");
    REQUIRE_THAT(seam.Run().gateway.reason, StartsWith("The OpenShell gateway is not reachable"));
  }
}

TEST_CASE("gateway.toml, 0.1.x: each refusal the file guarantees, in one sentence", "[openshell]") {
  SECTION("a file granting all three, version 2: passes") {
    Result r = WithConfig("0.1.2", kGood01);
    REQUIRE(r.gateway.status == Status::kPass);
    REQUIRE_THAT(r.gateway.detail, Contains("gateway.toml allows the sandboxes' bind mounts"));
  }
  struct Case {
    const char* what;
    std::string from;  // in kGood01
    std::string to;
    std::string refusal;  // the gateway's words
  };
  const Case cases[] = {
      {"no version", "version = 2\n", "", kLegacy},
      {"version = 1", "version = 2\n", "version = 1\n", kLegacy},
      {"allow_driver_config absent", "allow_driver_config = true\n", "", kDriverConfigOff},
      {"allow_driver_config = false", "allow_driver_config = true\n",
       "allow_driver_config = false\n", kDriverConfigOff},
      {"enable_bind_mounts absent", "enable_bind_mounts = true\n", "", kBindMountsOff},
      {"enable_bind_mounts = \"true\", not a boolean", "enable_bind_mounts = true\n",
       "enable_bind_mounts = \"true\"\n", kBindMountsOff},
      {"resource_admission absent", "enabled = false\n", "", kAdmissionOn},
      {"resource_admission enabled = true", "enabled = false\n", "enabled = true\n", kAdmissionOn},
  };
  for (const Case& c : cases) {
    std::string toml = kGood01;
    toml.replace(toml.find(c.from), c.from.size(), c.to);
    INFO(c.what << "\n" << toml);
    Result r = WithConfig("0.1.2", toml);
    REQUIRE(r.gateway.status == Status::kFail);
    REQUIRE(r.gateway.reason == RefusalNaming(c.refusal));
  }
  SECTION("the exact words of one") {
    std::string toml = kGood01;
    toml.replace(toml.find("allow_driver_config = true"), 26, "");
    Result r = WithConfig("0.1.10", toml);
    REQUIRE(r.gateway.summary ==
            "The OpenShell gateway refuses the sandbox's mounts because caller driver config is "
            "off (`allow_driver_config`, off by default since OpenShell 0.1.0).");
    REQUIRE(r.gateway.remedy ==
            "Set `allow_driver_config = true` under `[openshell.drivers.docker]` in the "
            "gateway's /home/ada/.config/openshell/gateway.toml and restart the gateway.");
  }
}

TEST_CASE("gateway.toml, 0.1.x: several refusals are joined, in the gateway's order",
          "[openshell]") {
  Result r = WithConfig("0.1.2", "");
  REQUIRE(r.gateway.status == Status::kFail);
  const std::string sentences[] = {RefusalNaming(kLegacy), RefusalNaming(kDriverConfigOff),
                                   RefusalNaming(kBindMountsOff), RefusalNaming(kAdmissionOn)};
  // doctor's first line quotes the reason: the first sentence, counting the rest.
  REQUIRE(r.gateway.reason ==
          sentences[0].substr(0, sentences[0].size() - 1) +
              " (and 3 more refusals that file guarantees: see openshell.gateway).");
  // The check's own line lists them all: each cause, then each fix.
  REQUIRE(r.gateway.summary ==
          "The OpenShell gateway's /home/ada/.config/openshell/gateway.toml is not schema "
          "`version = 2`, which OpenShell 0.1 gateways refuse to start with. The OpenShell "
          "gateway refuses the sandbox's mounts because caller driver config is off "
          "(`allow_driver_config`, off by default since OpenShell 0.1.0). The OpenShell gateway "
          "refuses host bind mounts because its Docker driver has `enable_bind_mounts` off. The "
          "OpenShell gateway refuses host bind mounts while resource admission is on, because it "
          "has no trusted label resolver for host paths.");
  REQUIRE_THAT(r.gateway.summary,
               StartsWith("The OpenShell gateway's /home/ada/.config/openshell/gateway.toml is "
                          "not schema `version = 2`, which OpenShell 0.1 gateways refuse to "
                          "start with. The OpenShell gateway refuses the sandbox's mounts"));
  REQUIRE_THAT(*r.gateway.remedy,
               StartsWith("Add `version = 2` under `[openshell]`") &&
                   Contains("preflight`. Set `allow_driver_config = true`") &&
                   Contains("gateway.toml and restart the gateway. Set `enable_bind_mounts"));

  SECTION("schema 2 alone: the three refusals of a create") {
    Result s = WithConfig("0.1.2", "[openshell]\nversion = 2\n");
    REQUIRE_THAT(s.gateway.reason,
                 StartsWith(sentences[1].substr(0, sentences[1].size() - 1) + " (and 2 more"));
    REQUIRE(*s.gateway.remedy ==
            "Set `allow_driver_config = true` under `[openshell.drivers.docker]` in the "
            "gateway's /home/ada/.config/openshell/gateway.toml and restart the gateway. Set "
            "`enable_bind_mounts = true` under `[openshell.drivers.docker]` in the gateway's "
            "/home/ada/.config/openshell/gateway.toml and restart the gateway. Set `enabled = "
            "false` under `[openshell.drivers.docker.resource_admission]` in the gateway's "
            "/home/ada/.config/openshell/gateway.toml and restart the gateway.");
  }
}

TEST_CASE("gateway.toml: no file, or one that cannot be read, changes nothing", "[openshell]") {
  Seam seam("0.1.2", "0.1.2");
  seam.kernel.env["HOME"] = "/home/ada";
  Result r = seam.Run();
  REQUIRE(r.gateway.status == Status::kPass);
  REQUIRE(r.gateway.detail == "gateway version 0.1.2");

  SECTION("nor does an environment without HOME or XDG_CONFIG_HOME") {
    Seam bare("0.1.2", "0.1.2");
    bare.kernel.files[kHomeConfig] = "";
    REQUIRE(bare.Run().gateway.status == Status::kPass);
  }
  SECTION("nor does a series with no rules here") {
    Seam later("0.2.0", "0.2.0");
    later.kernel.env["HOME"] = "/home/ada";
    later.kernel.files[kHomeConfig] = "";
    REQUIRE_THAT(later.Run().gateway.summary, Contains("newer than 0.1.10"));
  }
}

TEST_CASE("gateway.toml that does not parse: a warning naming the file and line", "[openshell]") {
  Result r = WithConfig("0.1.2", "[openshell]\nversion = 2\n\n[openshell.drivers.docker\n");
  REQUIRE(r.gateway.status == Status::kWarn);
  REQUIRE_THAT(r.gateway.summary,
               StartsWith("The OpenShell gateway's /home/ada/.config/openshell/gateway.toml:4:") &&
                   Contains(" does not parse as TOML (") &&
                   Contains("), so a gateway that reads it will not start."));
  REQUIRE(r.gateway.remedy ==
          "Correct line 4 of /home/ada/.config/openshell/gateway.toml and restart the gateway, "
          "unless the gateway reads another file.");

  SECTION("a failure of the status still comes first") {
    Seam seam("0.0.111", "");
    seam.kernel.env["HOME"] = "/home/ada";
    seam.kernel.files[kHomeConfig] = "enable_bind_mounts = = true\n";
    seam.runner.answers["openshell status -o json"] =
        Exited(0, R"({"gateway": "local", "status": "disconnected", "error": "transport error"})");
    Result s = seam.Run();
    REQUIRE(s.gateway.status == Status::kFail);
    REQUIRE_THAT(s.gateway.reason, Contains("is disconnected"));
  }
}

TEST_CASE("gateway.toml: OPENSHELL_GATEWAY_CONFIG, then XDG_CONFIG_HOME, then HOME",
          "[openshell]") {
  Seam seam("0.0.111", "0.0.111");
  seam.kernel.env["HOME"] = "/home/ada";
  seam.kernel.files[kHomeConfig] = "[openshell.drivers.docker]\nenable_bind_mounts = true\n";
  seam.kernel.files["/xdg/openshell/gateway.toml"] = "";
  seam.kernel.files["/etc/openshell/gw.toml"] = "[openshell]\nversion = 7\n";

  SECTION("HOME") { REQUIRE(seam.Run().gateway.status == Status::kPass); }
  SECTION("XDG_CONFIG_HOME is preferred to HOME") {
    seam.kernel.env["XDG_CONFIG_HOME"] = "/xdg";
    REQUIRE(seam.Run().gateway.reason ==
            RefusalNaming(kBindMountsOff, "/xdg/openshell/gateway.toml"));
  }
  SECTION("OPENSHELL_GATEWAY_CONFIG is preferred to both") {
    seam.kernel.env["XDG_CONFIG_HOME"] = "/xdg";
    seam.kernel.env["OPENSHELL_GATEWAY_CONFIG"] = "/etc/openshell/gw.toml";
    Result r = seam.Run();
    REQUIRE_THAT(r.gateway.summary,
                 StartsWith("The OpenShell gateway's /etc/openshell/gw.toml declares a schema "
                            "`version` above 1"));
    REQUIRE_THAT(*r.gateway.remedy, EndsWith(" under `[openshell.drivers.docker]` in the gateway's "
                                             "/etc/openshell/gw.toml and restart the gateway."));
  }
  SECTION("an empty OPENSHELL_GATEWAY_CONFIG is unset") {
    seam.kernel.env["OPENSHELL_GATEWAY_CONFIG"] = "";
    REQUIRE(seam.Run().gateway.status == Status::kPass);
  }
  SECTION("a named file that is not there: nothing is judged") {
    seam.kernel.env["OPENSHELL_GATEWAY_CONFIG"] = "/nowhere/gateway.toml";
    seam.kernel.env["XDG_CONFIG_HOME"] = "/xdg";
    REQUIRE(seam.Run().gateway.status == Status::kPass);
  }
}

TEST_CASE("no CLI on PATH, or a configured path that is wrong", "[openshell]") {
  MockKernel kernel;
  kernel.env["PATH"] = "/nonexistent";
  auto runner = mojoup::probe::MakeSystemCommandRunner();
  ProbeOptions options;
  auto [cli, gateway] = CheckOpenShell(kernel, *runner, options);
  REQUIRE(cli.status == Status::kFail);
  REQUIRE_THAT(cli.reason, StartsWith("The OpenShell CLI `openshell` is not on PATH"));
  REQUIRE_THAT(cli.reason, Contains("node.sandbox.runtime native"));
  REQUIRE(gateway.status == Status::kSkip);

  options.openshell_path = "/opt/openshell/bin/openshell";
  auto [configured, unused] = CheckOpenShell(kernel, *runner, options);
  REQUIRE_THAT(configured.reason,
               Contains("/opt/openshell/bin/openshell (node.sandbox.openshell_path)"));

  SECTION("the configured path is used instead of PATH") {
    TempDir dir;
    std::string path = WriteFakeOpenShell(dir.path(), {});
    options.openshell_path = path;
    auto [found, gw] = CheckOpenShell(kernel, *runner, options);
    REQUIRE(found.status == Status::kPass);
    REQUIRE_THAT(found.summary, Contains(path));
  }
}

TEST_CASE("the native runtime does not need OpenShell", "[openshell]") {
  MockKernel kernel;
  kernel.env["PATH"] = "/nonexistent";
  auto runner = mojoup::probe::MakeSystemCommandRunner();
  ProbeOptions options;
  options.require_openshell = false;
  auto [cli, gateway] = CheckOpenShell(kernel, *runner, options);
  REQUIRE(cli.status == Status::kSkip);
  REQUIRE(cli.summary == "Not needed by the native runtime.");
  REQUIRE_FALSE(cli.required);

  SECTION("a present but unhealthy OpenShell is not asked at all") {
    FakeOpenShellOptions fake;
    fake.gateway = Gateway::kHang;
    Result r = Probe(fake, options);
    REQUIRE(r.cli.status == Status::kSkip);
    REQUIRE(r.gateway.status == Status::kSkip);
    REQUIRE(r.gateway.summary == "Not needed by the native runtime.");
    REQUIRE_FALSE(r.gateway.required);
  }
}

namespace {

// The gateway check when `openshell status -o json` prints `status`.
Check GatewayFor(const std::string& status) {
  Seam seam("0.0.111", "");
  seam.runner.answers["openshell status -o json"] = Exited(0, status);
  return seam.Run().gateway;
}

}  // namespace

TEST_CASE("gateway status of another shape: what is not a string is not there", "[openshell]") {
  SECTION("a status that is not a string, or no object, is no status") {
    for (const char* status :
         {R"({"status": 5, "gateway": "local"})", R"({"status": null})", R"({"gateway": "local"})",
          R"(["connected"])", "null", "connected"}) {
      INFO(status);
      Check check = GatewayFor(status);
      CHECK(check.status == Status::kFail);
      CHECK(check.reason ==
            "`openshell status -o json` printed no status (" + std::string(status) +
                "); check that the OpenShell CLI is a release that supports `status -o json`.");
    }
  }
  SECTION("a gateway or server that is not a string is left out of the name") {
    Check check =
        GatewayFor(R"({"status": "connected", "gateway": 5, "server": "https://10.0.0.2:8080"})");
    CHECK(check.status == Status::kPass);
    CHECK(check.summary == "The OpenShell gateway at https://10.0.0.2:8080 is connected.");
    check = GatewayFor(R"({"status": "connected", "gateway": "local", "server": {}})");
    CHECK(check.summary == "The OpenShell gateway local is connected.");
    check = GatewayFor(R"({"status": "connected", "gateway": [], "server": false, "x": 1})");
    CHECK(check.summary == "The OpenShell gateway is connected.");
  }
  SECTION("a version that is not a string is unknown") {
    Check check = GatewayFor(R"({"status": "connected", "gateway": "local", "version": 111})");
    CHECK(check.status == Status::kPass);
    CHECK(check.detail.empty());
  }
  SECTION("an error or http_status that is not a string is not said") {
    Check check = GatewayFor(R"({"status": "disconnected", "gateway": "local", "error": ["x"]})");
    CHECK(check.reason ==
          "The OpenShell gateway local is disconnected; start the gateway with `systemctl --user "
          "enable --now openshell-gateway`.");
    check = GatewayFor(R"({"status": "connected_http", "http_status": 200, "error": false})");
    CHECK_THAT(check.reason,
               StartsWith("The OpenShell gateway answers only over HTTP: its gRPC health check "
                          "failed, and every"));
    CHECK(check.detail.empty());
  }
}

TEST_CASE("gateway authentication of another shape", "[openshell]") {
  SECTION("an authentication that is not an object, or not failed, passes") {
    for (const char* status : {R"({"status": "connected", "authentication": "failed"})",
                               R"({"status": "connected", "authentication": ["failed"]})",
                               R"({"status": "connected", "authentication": {"status": 0}})",
                               R"({"status": "connected", "authentication": {"error": "expired"}})",
                               R"({"status": "connected", "authentication": null})"}) {
      INFO(status);
      CHECK(GatewayFor(status).status == Status::kPass);
    }
  }
  SECTION("failed, with an error that is not a string or none") {
    for (const char* status :
         {R"({"status": "connected", "authentication": {"status": "failed"}})",
          R"({"status": "connected", "authentication": {"status": "failed", "error": 7}})"}) {
      INFO(status);
      Check check = GatewayFor(status);
      CHECK(check.status == Status::kFail);
      CHECK(check.reason ==
            "The OpenShell gateway does not accept this user's credentials (); sign in with "
            "`openshell gateway login <gateway>`.");
    }
    Check check = GatewayFor(
        R"({"status": "connected", "gateway": "local", "authentication": {"status": "failed",)"
        R"( "error": "token expired", "provider": 1}})");
    CHECK(check.reason ==
          "The OpenShell gateway local does not accept this user's credentials (token expired); "
          "sign in with `openshell gateway login local`.");
  }
}

TEST_CASE("doctor's JSON for gateway answers of another shape", "[openshell][json]") {
  Report report;
  for (const char* status :
       {R"({"status": "connected", "gateway": 5, "server": "https://10.0.0.2:8080"})",
        R"({"status": "connected", "authentication": {"status": "failed", "error": 7}})",
        R"({"status": "connected_http", "gateway": "local", "http_status": 200, "error": "e"})",
        R"({"status": ["connected"]})"}) {
    Check check = GatewayFor(status);
    check.duration_ms = 0;
    report.checks.push_back(check);
  }
  report.verdict = VerdictFor(report.checks);
  CHECK_GOLDEN("probe/mojoup.doctor.v1.gateway_shapes.json", ReportToJson(report));
}

namespace {

// A user's OpenShell config for the gateway prod-k8s, as `openshell gateway
// add` leaves it (v0.0.111 crates/openshell-bootstrap/src/metadata.rs,
// mtls.rs, oidc_token.rs): real files, under XDG_CONFIG_HOME.
struct RemoteSeam : Seam {
  TempDir config;
  std::string gateway_dir;

  RemoteSeam() : Seam("0.0.111", "0.0.111") {
    kernel.env["XDG_CONFIG_HOME"] = config.path();
    gateway_dir = config.path() + "/openshell/gateways/prod-k8s";
    runner.answers["openshell -g prod-k8s --version"] = Exited(0, "openshell 0.0.111\n");
    runner.answers["openshell -g prod-k8s status -o json"] = Exited(
        0, R"({"authentication": {"provider": "mTLS transport", "status": "authenticated"},)"
           R"( "gateway": "prod-k8s", "server": "https://gw.example.com", "status": "connected",)"
           R"( "version": "0.0.111"})");
    // A gateway.toml here that a local gateway would refuse: not read for a
    // remote one.
    kernel.files[config.path() + "/openshell/gateway.toml"] = "[openshell.gateway]\n";
  }

  void Metadata(bool remote, const std::string& auth_mode = "") {
    std::filesystem::create_directories(gateway_dir);
    std::ofstream(gateway_dir + "/metadata.json")
        << R"({"name": "prod-k8s", "gateway_endpoint": "https://gw.example.com", "is_remote": )"
        << (remote ? "true" : "false") << R"(, "gateway_port": 443)"
        << (auth_mode.empty() ? "" : R"(, "auth_mode": ")" + auth_mode + "\"") << "}\n";
  }

  void Mtls() {
    std::filesystem::create_directories(gateway_dir + "/mtls");
    for (const char* file : {"ca.crt", "tls.crt", "tls.key"}) {
      std::ofstream(gateway_dir + "/mtls/" + file) << "pem\n";
    }
  }

  Result Named(std::optional<bool> remote = std::nullopt) {
    ProbeOptions options;
    options.openshell_gateway = "prod-k8s";
    options.openshell_remote = remote;
    return Run(options);
  }
};

}  // namespace

TEST_CASE("remote gateway: connected, with its metadata and mTLS files, passes naming it",
          "[openshell]") {
  RemoteSeam seam;
  seam.Metadata(true);
  seam.Mtls();
  Result r = seam.Named();
  INFO(r.gateway.summary << " / " << r.gateway.detail);
  REQUIRE(r.cli.status == Status::kPass);
  REQUIRE(r.gateway.status == Status::kPass);
  CHECK(r.gateway.summary ==
        "The remote OpenShell gateway prod-k8s at https://gw.example.com is connected");
  CHECK_THAT(r.gateway.detail,
             StartsWith("gateway prod-k8s at https://gw.example.com, remote; metadata " +
                        seam.gateway_dir + "/metadata.json; credentials: mTLS ("));
  // The local gateway.toml (which refuses bind mounts) was not judged.
  CHECK(r.gateway.detail.find("gateway.toml") == std::string::npos);
  // Every call named the gateway.
  CHECK(seam.runner.Calls("openshell status -o json").empty());
  CHECK(seam.runner.Calls("openshell -g prod-k8s status -o json").size() == 1);
}

TEST_CASE("remote gateway: what a user cannot present or reach is one sentence naming it",
          "[openshell]") {
  RemoteSeam seam;
  SECTION("no mTLS files") {
    seam.Metadata(true);
    Result r = seam.Named();
    REQUIRE(r.gateway.status == Status::kFail);
    const std::string mtls = seam.gateway_dir + "/mtls/";
    CHECK(r.gateway.reason ==
          "The OpenShell gateway prod-k8s at https://gw.example.com is remote and this user has "
          "no mTLS credentials for it (missing " +
              mtls + "ca.crt, " + mtls + "tls.crt, " + mtls +
              "tls.key); put the gateway's client bundle (ca.crt, tls.crt, tls.key) where the "
              "CLI reads it, as `openshell gateway add https://gw.example.com --name prod-k8s` "
              "does.");
  }
  SECTION("an OIDC gateway without its token") {
    seam.Metadata(true, "oidc");
    Result r = seam.Named();
    REQUIRE(r.gateway.status == Status::kFail);
    CHECK_THAT(r.gateway.reason, Contains("no OIDC token credentials for it (missing " +
                                          seam.gateway_dir + "/oidc_token.json)"));
    CHECK_THAT(r.gateway.reason, EndsWith("sign in with `openshell gateway login prod-k8s`."));
  }
  SECTION("no metadata, remote by the config") {
    Result r = seam.Named(true);
    REQUIRE(r.gateway.status == Status::kFail);
    CHECK_THAT(r.gateway.reason,
               StartsWith("The OpenShell CLI has no record of the remote gateway prod-k8s (no " +
                          seam.gateway_dir + "/metadata.json)"));
  }
  SECTION("metadata that is a symbolic link") {
    std::filesystem::create_directories(seam.gateway_dir);
    seam.Mtls();
    std::filesystem::create_symlink("/etc/hostname", seam.gateway_dir + "/metadata.json");
    Result r = seam.Named();
    REQUIRE(r.gateway.status == Status::kFail);
    CHECK_THAT(r.gateway.reason, Contains("metadata " + seam.gateway_dir + "/metadata.json"));
    CHECK_THAT(r.gateway.reason, Contains("symbolic link"));
  }
  SECTION("disconnected") {
    seam.Metadata(true);
    seam.Mtls();
    seam.runner.answers["openshell -g prod-k8s status -o json"] = Exited(
        0, R"({"gateway": "prod-k8s", "status": "disconnected", "error": "transport error"})");
    Result r = seam.Named();
    REQUIRE(r.gateway.status == Status::kFail);
    CHECK(r.gateway.reason ==
          "The remote OpenShell gateway prod-k8s at https://gw.example.com is disconnected: "
          "transport error; ask its operator whether it is up, and check `openshell -g prod-k8s "
          "status`.");
  }
}

TEST_CASE("a named gateway whose metadata says local keeps the local checks", "[openshell]") {
  RemoteSeam seam;
  seam.Metadata(false);
  Result r = seam.Named();
  // gateway.toml (no enable_bind_mounts) is judged as for any local gateway.
  REQUIRE(r.gateway.status == Status::kFail);
  CHECK_THAT(r.gateway.detail, EndsWith("/openshell/gateway.toml"));
  // And `no` overrides metadata that says remote.
  seam.Metadata(true);
  r = seam.Named(false);
  CHECK(r.gateway.status == Status::kFail);
  CHECK_THAT(r.gateway.detail, EndsWith("/openshell/gateway.toml"));
}

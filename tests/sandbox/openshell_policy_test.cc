// Golden tests of the OpenShell policy translation. The expected YAML lives in
// tests/sandbox/testdata/openshell/; MOJOUP_UPDATE_GOLDEN=1 rewrites it from
// the current output (review the diff before committing it).
#include "mojoup/sandbox/openshell_policy.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>

#include "../support/test_support.h"
#include "mojoup/policy/effective_policy.h"
#include "mojoup/policy/policy.h"
#include "mojoup/sandbox/openshell_backend.h"

namespace {

using Catch::Matchers::Contains;
using mojoup::policy::Level;
using mojoup::sandbox::OpenShellPolicy;
using mojoup::sandbox::OpenShellPolicyOptions;
using mojoup::sandbox::TranslateToOpenShell;

using mojoup::test::Message;

const std::string kGoldenDir = MOJOUP_SOURCE_DIR "/tests/sandbox/testdata/openshell/";

mojoup::policy::EffectivePolicy Effective(const std::vector<std::pair<Level, std::string>>& files) {
  std::vector<mojoup::policy::PolicyFile> parsed;
  for (const auto& [level, text] : files) {
    const std::string path = level == Level::kRepo ? "/src/app/.mojoup/policy.json"
                                                   : "/etc/mojoup/org.json";
    auto file = mojoup::policy::ParsePolicy(text, path, level);
    REQUIRE(file.ok());
    parsed.push_back(*file);
  }
  return mojoup::policy::Layer(parsed);
}

mojoup::policy::NetworkRules Rules(const mojoup::policy::EffectivePolicy& effective,
                                   std::string_view tool = "") {
  return mojoup::policy::NetworkRules::Build(effective, tool);
}

void RequireGolden(const std::string& name, const OpenShellPolicy& out) {
  const std::string path = kGoldenDir + name;
  if (std::getenv("MOJOUP_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::trunc) << out.yaml;
  }
  INFO("golden file " << path);
  REQUIRE(out.yaml == mojoup::test::Slurp(path));
}

OpenShellPolicyOptions Options() {
  OpenShellPolicyOptions options;
  options.repo = "/src/app";
  options.home = "/home/ada";
  options.uid = 1617;
  options.gid = 1618;
  options.proxy_port = 40123;
  return options;
}

TEST_CASE("openshell policy: allow rules, the tool's hosts and the credential proxy",
          "[openshell][golden]") {
  auto effective = Effective({{Level::kRepo, R"({"agents": {"sandbox": "required",
      "network": {"allow": [{"host": "api.github.com", "ports": [443]},
                            {"host": "*.npmjs.org"}]}}})"}});
  OpenShellPolicy out = TranslateToOpenShell(Rules(effective, "claude-code"), Options());
  REQUIRE(out.dropped.empty());
  RequireGolden("claude-code.yaml", out);
}

TEST_CASE("openshell policy: read back as YAML, every value has the type OpenShell's takes",
          "[openshell]") {
  auto effective = Effective({{Level::kRepo, R"({"agents": {"network": {"allow": [
      {"host": "api.github.com", "ports": [443]}], "tool_services": false}}})"}});
  OpenShellPolicyOptions options = Options();
  options.proxy_allowed_ip = "172.18.0.1";
  const YAML::Node policy = YAML::Load(TranslateToOpenShell(Rules(effective), options).yaml);
  REQUIRE(policy["version"].as<int>() == 1);
  REQUIRE(policy["filesystem_policy"]["include_workdir"].as<bool>() == false);
  REQUIRE(policy["filesystem_policy"]["read_only"][0].as<std::string>() == "/");
  REQUIRE(policy["filesystem_policy"]["read_write"][0].as<std::string>() == "/src/app");
  REQUIRE(policy["landlock"]["compatibility"].as<std::string>() == "hard_requirement");
  // Quoted, so a YAML reader takes the ids as strings ("!"), not numbers.
  REQUIRE(policy["process"]["run_as_user"].Tag() == "!");
  REQUIRE(policy["process"]["run_as_user"].as<std::string>() == "1617");
  REQUIRE(policy["process"]["run_as_group"].as<std::string>() == "1618");
  const YAML::Node allow = policy["network_policies"]["mojoup_allow_1"];
  REQUIRE(allow["name"].as<std::string>() ==
          "allow api.github.com:443 (repo: /src/app/.mojoup/policy.json)");
  REQUIRE(allow["endpoints"][0]["host"].as<std::string>() == "api.github.com");
  REQUIRE(allow["endpoints"][0]["port"].Tag() == "?");
  REQUIRE(allow["endpoints"][0]["port"].as<int>() == 443);
  REQUIRE(allow["binaries"][0]["path"].as<std::string>() == "/**");
  const YAML::Node proxy = policy["network_policies"]["mojoup_credential_proxy"]["endpoints"][0];
  REQUIRE(proxy["host"].as<std::string>() == "host.openshell.internal");
  REQUIRE(proxy["port"].as<int>() == 40123);
  REQUIRE(proxy["allowed_ips"][0].as<std::string>() == "172.18.0.1/32");
}

TEST_CASE("openshell policy: a deny drops every allowed entry it touches, and says so",
          "[openshell][golden]") {
  auto effective = Effective(
      {{Level::kOrg, R"({"agents": {"network": {"deny": [{"host": "gist.github.com"}]}}})"},
       {Level::kRepo, R"({"agents": {"network": {"allow": [{"host": "*.github.com"},
           {"host": "api.github.com", "ports": [443]}, {"host": "gist.github.com", "ports": [8443]},
           {"host": "pypi.org"}], "tool_services": false}}})"}});
  OpenShellPolicy out = TranslateToOpenShell(Rules(effective), Options());
  // *.github.com would let gist.github.com through: both its ports go. The
  // deny names 443 and 80, so gist.github.com:8443 stays.
  REQUIRE(out.dropped.size() == 2);
  REQUIRE_THAT(out.dropped[0], Contains("*.github.com:443 is left out"));
  REQUIRE_THAT(out.dropped[0], Contains("deny gist.github.com:443,80 (org: /etc/mojoup/org.json)"));
  REQUIRE_THAT(out.dropped[1], Contains("*.github.com:80 is left out"));
  RequireGolden("deny-drops.yaml", out);
}

TEST_CASE("openshell policy: a worktree, an old gateway and no proxy", "[openshell][golden]") {
  auto effective = Effective({{Level::kRepo, R"({"agents": {"network": {"tool_services": false}}})"}});
  OpenShellPolicyOptions options = Options();
  options.writable = {"/src/main/.git"};
  options.proxy_allowed_ip = "172.18.0.1";
  OpenShellPolicy with_proxy = TranslateToOpenShell(Rules(effective), options);
  RequireGolden("worktree-old-gateway.yaml", with_proxy);

  options.proxy_port = 0;
  OpenShellPolicy nothing = TranslateToOpenShell(Rules(effective), options);
  REQUIRE_THAT(nothing.yaml, Contains("network_policies: {}\n"));
}

TEST_CASE("openshell policy: a wildcard reaches every depth below its domain, as ours does",
          "[openshell]") {
  auto effective = Effective({{Level::kRepo, R"({"agents": {"network": {"allow": [{"host": "*.example.com", "ports": [443]}], "tool_services": false}}})"}});
  OpenShellPolicy out = TranslateToOpenShell(Rules(effective), Options());
  REQUIRE(out.refused.empty());
  // OpenShell's "*" is one label: "*.example.com" would not reach
  // a.b.example.com, which our rule allows.
  REQUIRE_THAT(out.yaml, Contains("- {host: \"**.example.com\", port: 443}"));
  REQUIRE_THAT(out.yaml, !Contains("\"*.example.com\""));
}

TEST_CASE("openshell policy: a rule over a whole top-level domain is refused, naming it",
          "[openshell]") {
  for (const std::string host : {"*.dev", "*.io"}) {
    INFO(host);
    auto effective = Effective({{Level::kRepo, R"({"agents": {"network": {"allow": [
        {"host": "api.example.com", "ports": [443]}, {"host": ")" + host + R"(", "ports": [443]}],
        "tool_services": false}}})"}});
    OpenShellPolicy out = TranslateToOpenShell(Rules(effective), Options());
    REQUIRE_THAT(out.refused, Contains("allow " + host + ":443 (repo: /src/app/.mojoup/policy.json)"));
    REQUIRE_THAT(out.refused, Contains("TLD wildcard '*" + host + "' is not allowed"));
  }
  // Three labels are a domain's subdomains, which OpenShell takes.
  auto effective = Effective({{Level::kRepo, R"({"agents": {"network": {"allow": [{"host": "*.co.uk", "ports": [443]}], "tool_services": false}}})"}});
  REQUIRE(TranslateToOpenShell(Rules(effective), Options()).refused.empty());
}

TEST_CASE("openshell policy: the devices every program writes are writable, as natively",
          "[openshell]") {
  auto effective = Effective({{Level::kRepo, R"({"agents": {}})"}});
  const std::string yaml = TranslateToOpenShell(Rules(effective), Options()).yaml;
  const std::string writable = yaml.substr(yaml.find("  read_write:\n"));
  for (const char* device : {"/dev/null", "/dev/tty", "/dev/zero", "/dev/pts", "/dev/shm"}) {
    INFO(device);
    REQUIRE_THAT(writable.substr(0, writable.find("landlock:")),
                 Contains(std::string("    - \"") + device + "\"\n"));
  }
}

TEST_CASE("openshell policy: odd characters in paths stay inside their quotes", "[openshell]") {
  auto effective = Effective({{Level::kRepo, R"({"agents": {}})"}});
  OpenShellPolicyOptions options = Options();
  options.repo = "/src/we\"ird\\ name\n: x";
  OpenShellPolicy out = TranslateToOpenShell(Rules(effective), options);
  REQUIRE_THAT(out.yaml, Contains("    - \"/src/we\\\"ird\\\\ name\\n: x\"\n"));
  // Past ASCII, DEL included, as escapes; bytes that are not UTF-8, which
  // OpenShell would not read, refused.
  options.repo = "/src/caf\xc3\xa9\x7f";
  out = TranslateToOpenShell(Rules(effective), options);
  REQUIRE(out.refused.empty());
  REQUIRE_THAT(out.yaml, Contains("    - \"/src/caf\\xe9\\x7f\"\n"));
  for (const char* bad : {"/src/\xff", "/src/\xc0\xaf", "/src/\xed\xa0\x80", "/src/\xe2\x82"}) {
    options.repo = bad;
    REQUIRE_THAT(TranslateToOpenShell(Rules(effective), options).refused, Contains("is not UTF-8"));
  }
}

}  // namespace

// The openshell backend's own rules, before it runs anything.
namespace {

using mojoup::sandbox::MakeOpenShellBackend;
using mojoup::sandbox::OpenShellBackendOptions;
using mojoup::sandbox::OpenShellBaseUrls;
using mojoup::sandbox::OpenShellLabelValue;

TEST_CASE("openshell backend: versions that cannot run sessions are refused in a sentence",
          "[openshell]") {
  OpenShellBackendOptions options;
  options.bridge_gateway = "172.18.0.1";
  options.version = {0, 0, 60};
  auto old = MakeOpenShellBackend(options);
  REQUIRE(absl::IsFailedPrecondition(old.status()));
  REQUIRE_THAT(Message(old.status()), Contains("0.0.92 or later"));
  REQUIRE_THAT(Message(old.status()), Contains("`status -o json` and `sandbox get -o json`"));
  options.version = {0, 0, 91};
  REQUIRE_THAT(Message(MakeOpenShellBackend(options).status()), Contains("0.0.92 or later"));

  options.version = {0, 0, 111};
  options.bridge_gateway.clear();
  REQUIRE_THAT(Message(MakeOpenShellBackend(options).status()), Contains("no address for host.openshell.internal"));

  options.bridge_gateway = "172.18.0.1";
  auto backend = MakeOpenShellBackend(options);
  REQUIRE(backend.ok());
  REQUIRE((*backend)->ProxyListen() == "172.18.0.1:0");
}

TEST_CASE("openshell backend: run_as_user and run_as_group need v0.0.110 below 1000",
          "[openshell]") {
  OpenShellBackendOptions options;
  options.bridge_gateway = "172.18.0.1";
  options.path = "/nonexistent/openshell";  // nothing may run before the check
  mojoup::policy::NetworkRules rules;
  mojoup::sandbox::SandboxSpec spec;
  spec.session = "s1";
  spec.rules = &rules;
  spec.repo = "/src/app";
  spec.home = "/home/ada";
  spec.writable = {"/src/app", "/home/ada", "/tmp"};
  struct Case {
    mojoup::probe::SemVer version;
    uid_t uid;
    gid_t gid;
    std::string refusal;  // "" when the ids are fine (then the missing CLI fails instead)
  };
  // Ids of 1000 and above need 0.0.76, below the 0.0.92 minimum, so every
  // release a backend accepts runs them. MIN_SANDBOX_UID holds for the
  // group as for the user (crates/openshell-policy/src/lib.rs at v0.0.92
  // and v0.0.109): a Debian user in group "users" (100) is refused there.
  for (const Case& c :
       {Case{{0, 0, 109}, 500, 1617, "cannot run a sandbox as uid 500; that needs 0.0.110"},
        Case{{0, 0, 111}, 0, 1617, "does not run sandboxes as root"},
        Case{{0, 0, 109}, 1617, 100,
             "OpenShell 0.0.109 cannot run a sandbox with primary group gid 100 (below 1000); "
             "that needs 0.0.110 or later"},
        Case{{0, 0, 92}, 1617, 999, "primary group gid 999"},
        Case{{0, 0, 111}, 1617, 0, "primary group gid 0 (root)"},
        Case{{0, 0, 92}, 1617, 1617, ""}, Case{{0, 0, 110}, 500, 100, ""}}) {
    INFO(c.version.ToString() << " uid " << c.uid << " gid " << c.gid);
    options.version = c.version;
    spec.uid = c.uid;
    spec.gid = c.gid;
    auto backend = MakeOpenShellBackend(options);
    REQUIRE(backend.ok());
    mojoup::test::TempDir dir;
    spec.session_dir = dir.path();
    auto created = (*backend)->Create(spec);
    REQUIRE_FALSE(created.ok());
    if (c.refusal.empty()) {
      REQUIRE_THAT(Message(created.status()), Contains("/nonexistent/openshell"));
    } else {
      REQUIRE(absl::IsFailedPrecondition(created.status()));
      REQUIRE_THAT(Message(created.status()), Contains(c.refusal));
    }
  }
}

TEST_CASE("openshell backend: label values OpenShell refuses are hashed, others kept",
          "[openshell]") {
  REQUIRE(OpenShellLabelValue("3f9a0c1e5b7d2a64") == "3f9a0c1e5b7d2a64");
  const std::string hashed = OpenShellLabelValue("/run/user/1000/mojoup");
  REQUIRE(hashed.size() == 17);
  REQUIRE(hashed[0] == 'h');
  REQUIRE(hashed == OpenShellLabelValue("/run/user/1000/mojoup"));
  REQUIRE(hashed != OpenShellLabelValue("/run/mojoup"));
  REQUIRE(OpenShellLabelValue(std::string(64, 'a')).size() == 17);
}

TEST_CASE("openshell backend: base URLs send a tool's API traffic to our proxy", "[openshell]") {
  const std::string proxy = "http://host.openshell.internal:40123";
  auto claude = OpenShellBaseUrls(proxy, "claude-code", {});
  REQUIRE(claude.at("ANTHROPIC_BASE_URL") == proxy + "/api.anthropic.com");
  auto by_key = OpenShellBaseUrls(proxy, "", {{"OPENAI_API_KEY", "sk-stand-in"}});
  REQUIRE(by_key.at("OPENAI_BASE_URL") == proxy + "/api.openai.com/v1");
  REQUIRE(OpenShellBaseUrls(proxy, "kilocode", {}).at("KILO_API_URL") == proxy + "/api.kilo.ai");
  REQUIRE(OpenShellBaseUrls(proxy, "copilot", {}).empty());  // no base-URL setting
}

}  // namespace

TEST_CASE("openshell backend: label values must start and end alphanumeric", "[openshell]") {
  // v0.0.111 crates/openshell-server/src/grpc/validation.rs validate_label_value.
  REQUIRE(OpenShellLabelValue("") == "");
  REQUIRE(OpenShellLabelValue("a-b.c_d") == "a-b.c_d");
  for (const char* edge : {"-abc", "abc-", ".abc", "abc_", "_"}) {
    INFO(edge);
    const std::string kept = OpenShellLabelValue(edge);
    REQUIRE(kept.size() == 17);
    REQUIRE(kept[0] == 'h');
  }
}

TEST_CASE("openshell backend: images go to OpenShell fully qualified", "[openshell]") {
  using mojoup::sandbox::QualifiedImageReference;
  // A bare name would be one of OpenShell's community images (v0.0.111
  // crates/openshell-core/src/image.rs resolve_community_image).
  REQUIRE(QualifiedImageReference("debian") == "docker.io/library/debian:latest");
  REQUIRE(QualifiedImageReference("mojoup/agents:0.1.0") == "docker.io/mojoup/agents:0.1.0");
  REQUIRE(QualifiedImageReference("mojoup-sandbox-test:1") ==
          "docker.io/library/mojoup-sandbox-test:1");
  REQUIRE(QualifiedImageReference("ghcr.io/org/img:v1") == "ghcr.io/org/img:v1");
  REQUIRE(QualifiedImageReference("localhost:5000/img") == "localhost:5000/img:latest");
  REQUIRE(QualifiedImageReference("localhost/img:2") == "localhost/img:2");
  const std::string digest =
      "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  REQUIRE(QualifiedImageReference("img@" + digest) == "docker.io/library/img@" + digest);
}

TEST_CASE("openshell backend: an error is its message, out of miette's box", "[openshell]") {
  using mojoup::sandbox::OpenShellErrorMessage;
  // A gateway refusal: tonic 0.14's Status Display (v0.0.111 Cargo.lock)
  // in a miette report, wrapped at 80 columns.
  REQUIRE(OpenShellErrorMessage(
              "Error:   × code: 'Client specified an invalid argument', message: \"name exceeds\n"
              "  │ maximum length (23 > 19)\"\n") == "name exceeds maximum length (23 > 19)");
  // A cause chain: the status is the last link.
  REQUIRE(OpenShellErrorMessage(
              "Error:   × failed to create sandbox\n"
              "  ╰─▶ code: 'The system is not in a state required for the operation's\n"
              "      execution', message: \"docker bind mounts require enable_bind_mounts =\n"
              "      true in [openshell.drivers.docker]\"\n") ==
          "docker bind mounts require enable_bind_mounts = true in [openshell.drivers.docker]");
  // The earlier tonic form, and an escaped quote inside the message.
  REQUIRE(OpenShellErrorMessage(
              "Error:   x status: NotFound, message: \"sandbox \\\"x\\\" not found\", details: [], "
              "metadata: MetadataMap { headers: {} }\n") == "sandbox \"x\" not found");
  // Not a gateway status: the whole report, unwrapped, without its help.
  REQUIRE(OpenShellErrorMessage("Error:   × sandbox 'mojoup-1' is not ready (phase: Error); wait\n"
                                "  │ for it to reach Ready state\n"
                                "  help: run `openshell logs mojoup-1`\n") ==
          "sandbox 'mojoup-1' is not ready (phase: Error); wait for it to reach Ready state");
  REQUIRE(OpenShellErrorMessage("").empty());
}

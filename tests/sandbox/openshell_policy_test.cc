// Golden tests of the OpenShell policy translation. The expected YAML lives in
// tests/sandbox/testdata/openshell/; MOJOUP_UPDATE_GOLDEN=1 rewrites it from
// the current output (review the diff before committing it).
#include <cstdlib>
#include <fstream>

#include "../support/test_support.h"
#include "mojoup/policy/effective_policy.h"
#include "mojoup/policy/policy.h"
#include "mojoup/sandbox/openshell_policy.h"

namespace {

using Catch::Matchers::Contains;
using mojoup::policy::Level;
using mojoup::sandbox::OpenShellPolicy;
using mojoup::sandbox::OpenShellPolicyOptions;
using mojoup::sandbox::TranslateToOpenShell;

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

TEST_CASE("openshell policy: odd characters in paths stay inside their quotes", "[openshell]") {
  auto effective = Effective({{Level::kRepo, R"({"agents": {}})"}});
  OpenShellPolicyOptions options = Options();
  options.repo = "/src/we\"ird\\ name\n: x";
  OpenShellPolicy out = TranslateToOpenShell(Rules(effective), options);
  REQUIRE_THAT(out.yaml, Contains("    - \"/src/we\\\"ird\\\\ name\\x0a: x\"\n"));
}

}  // namespace

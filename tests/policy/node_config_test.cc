// NodeConfig: loading and validation.
#include "mojoup/policy/node_config.h"

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "../support/test_support.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using mojoup::policy::NodeConfig;
using mojoup::policy::ValidateConfigValue;
using mojoup::test::TempDir;

TEST_CASE("a missing config file is an empty config", "[config]") {
  TempDir dir;
  auto config = NodeConfig::Load(dir / "node.json");
  REQUIRE(config.ok());
  REQUIRE(config->values().empty());
}

TEST_CASE("a valid config is read", "[config]") {
  TempDir dir;
  std::string path = dir.Write("node.json", R"({
    "schema": "mojoup.node/v1",
    "node.sandbox.engine": "docker",
    "node.sandbox.role": true,
    "node.sandbox.runtime": "native",
    "node.sandbox.openshell_path": "/opt/openshell/bin/openshell",
    "node.sandbox.allowed_users": "alice,bob"
  })");
  auto config = NodeConfig::Load(path);
  REQUIRE(config.ok());
  REQUIRE(config->Get("node.sandbox.role") == "true");
  REQUIRE(config->Get("node.sandbox.engine") == "docker");
  REQUIRE(config->Get("node.sandbox.openshell_path") == "/opt/openshell/bin/openshell");
}

TEST_CASE("a broken config is an error naming the file, line and column", "[config]") {
  TempDir dir;
  std::string path = dir.Write("node.json", "{\n  \"node.sandbox.engine\": \"docker\",\n}\n");
  auto config = NodeConfig::Load(path);
  REQUIRE_FALSE(config.ok());
  REQUIRE_THAT(std::string(config.status().message()), StartsWith(path + ":3:1: "));
}

TEST_CASE("unknown keys and bad values are refused with what is accepted", "[config]") {
  TempDir dir;
  auto config = NodeConfig::Load(dir.Write("a.json", R"({"node.sandbox.engin": "docker"})"));
  REQUIRE_FALSE(config.ok());
  REQUIRE_THAT(std::string(config.status().message()), Contains("/node.sandbox.engin"));
  REQUIRE_THAT(std::string(config.status().message()), Contains("known keys: node.sandbox.engine"));

  config = NodeConfig::Load(dir.Write("b.json", R"({"node.sandbox.runtime": "podman"})"));
  REQUIRE_FALSE(config.ok());
  REQUIRE_THAT(std::string(config.status().message()), Contains("expected openshell or native"));

  config = NodeConfig::Load(dir.Write("c.json", R"({"schema": "mojoup.node/v9"})"));
  REQUIRE_FALSE(config.ok());
  REQUIRE_THAT(std::string(config.status().message()), Contains("/schema"));

  REQUIRE(ValidateConfigValue("node.sandbox.allowed_users", "*").ok());
  REQUIRE(ValidateConfigValue("node.sandbox.allowed_users", "alice,bob").ok());
  REQUIRE_FALSE(ValidateConfigValue("node.sandbox.allowed_users", "alice,").ok());
  REQUIRE_FALSE(ValidateConfigValue("node.sandbox.allowed_users", "Alice Smith").ok());
  REQUIRE_FALSE(ValidateConfigValue("node.sandbox.openshell_path", "bin/openshell").ok());
  REQUIRE(ValidateConfigValue("node.sandbox.openshell_host_address", "172.18.0.1").ok());
  for (const char* bad : {"host.openshell.internal", "172.18.0", "::1", "172.18.0.1:80", ""}) {
    INFO(bad);
    auto refused = ValidateConfigValue("node.sandbox.openshell_host_address", bad);
    REQUIRE_FALSE(refused.ok());
    REQUIRE_THAT(std::string(refused.message()), Contains("expected an IPv4 address"));
  }
  // A switch takes the same words everywhere: on/off, yes/no, true/false.
  for (const char* word : {"on", "off", "yes", "no", "true", "false", "YES"}) {
    INFO(word);
    REQUIRE(ValidateConfigValue("node.sandbox.role", word).ok());
  }
  auto maybe = ValidateConfigValue("node.sandbox.role", "maybe");
  REQUIRE_FALSE(maybe.ok());
  REQUIRE_THAT(std::string(maybe.message()), Contains("on or off, yes or no, true or false"));
  REQUIRE(ValidateConfigValue("node.sandbox.image", "mojoup/sandbox:1.0").ok());
}

TEST_CASE("updates write the whole file atomically and keep other keys", "[config]") {
  TempDir dir;
  const std::string path = dir / "etc/mojoup/node.json";  // the directory is created
  REQUIRE(mojoup::policy::UpdateNodeConfig(path, {{"node.sandbox.engine", "docker"}}).ok());
  REQUIRE(mojoup::policy::UpdateNodeConfig(
              path, {{"node.sandbox.role", "true"}, {"node.sandbox.runtime", "native"}})
              .ok());
  REQUIRE(mojoup::policy::UpdateNodeConfig(path, {{"node.sandbox.runtime", std::nullopt}}).ok());
  auto config = NodeConfig::Load(path);
  REQUIRE(config.ok());
  REQUIRE(config->Get("node.sandbox.engine") == "docker");
  REQUIRE(config->Get("node.sandbox.role") == "true");
  REQUIRE_FALSE(config->Get("node.sandbox.runtime").has_value());
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE_THAT(text, Contains("\"node.sandbox.role\": true"));
  REQUIRE_THAT(text, Contains("\"schema\": \"mojoup.node/v1\""));
  // No temporary file is left beside it.
  for (const auto& entry : std::filesystem::directory_iterator(dir / "etc/mojoup")) {
    REQUIRE(entry.path().filename().string().find(".tmp") == std::string::npos);
  }
}

TEST_CASE("a bad change writes nothing, a corrupt file is reported and left alone", "[config]") {
  TempDir dir;
  const std::string path = dir / "node.json";
  REQUIRE(mojoup::policy::UpdateNodeConfig(path, {{"node.sandbox.engine", "docker"}}).ok());
  auto bad = mojoup::policy::UpdateNodeConfig(
      path, {{"node.sandbox.role", "true"}, {"node.sandbox.runtime", "podman"}});
  REQUIRE_FALSE(bad.ok());
  REQUIRE_FALSE(NodeConfig::Load(path)->Get("node.sandbox.role").has_value());

  const std::string corrupt = "{\"node.sandbox.engine\": \"docker\"";
  dir.Write("node.json", corrupt);
  auto refused = mojoup::policy::UpdateNodeConfig(path, {{"node.sandbox.role", "true"}});
  REQUIRE_FALSE(refused.ok());
  REQUIRE_THAT(std::string(refused.message()), Contains("left as it is"));
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(text == corrupt);
}

TEST_CASE("credential host bindings are a family of keys", "[config]") {
  REQUIRE(ValidateConfigValue("node.sandbox.credential_hosts.ACME_TOKEN", "api.acme.test").ok());
  REQUIRE(ValidateConfigValue("node.sandbox.credential_hosts.ACME_TOKEN",
                              "api.acme.test,uploads.acme.test")
              .ok());
  REQUIRE_FALSE(ValidateConfigValue("node.sandbox.credential_hosts.acme", "api.acme.test").ok());
  REQUIRE_FALSE(ValidateConfigValue("node.sandbox.credential_hosts.ACME", "*.acme.test").ok());
  REQUIRE_FALSE(ValidateConfigValue("node.sandbox.credential_hosts.ACME", "").ok());
  REQUIRE_FALSE(mojoup::policy::ValidateConfigKey("node.sandbox.credential_hosts.").ok());
  // A host the policy would refuse is refused here for the same reason.
  auto numeric = ValidateConfigValue("node.sandbox.credential_hosts.ACME", "api.acme.test,*.0.0.1");
  REQUIRE_FALSE(numeric.ok());
  REQUIRE_THAT(std::string(numeric.message()),
               Contains("node.sandbox.credential_hosts.ACME") &&
                   Contains("\"*.0.0.1\" is a wildcard over numbers only"));
}

TEST_CASE("a sandbox's CPUs: node.sandbox.cpus, else half the node's, at least 2", "[config]") {
  TempDir dir;
  auto unset = NodeConfig::Load(dir / "absent.json");
  REQUIRE(unset.ok());
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  const double expected = static_cast<double>(std::min(online, std::max(2L, online / 2)));
  REQUIRE(mojoup::policy::SandboxCpus(*unset) == expected);

  auto set = NodeConfig::Load(dir.Write("node.json", R"({"node.sandbox.cpus": "1.5"})"));
  REQUIRE(set.ok());
  REQUIRE(mojoup::policy::SandboxCpus(*set) == 1.5);

  for (const char* bad : {"0", "0.05", "-1", "two", "1e3", "2000", "1.2345", ""}) {
    INFO(bad);
    auto refused = ValidateConfigValue("node.sandbox.cpus", bad);
    REQUIRE_FALSE(refused.ok());
    REQUIRE_THAT(std::string(refused.message()), Contains("a number of CPUs from 0.1 to 1024"));
  }
  REQUIRE(ValidateConfigValue("node.sandbox.cpus", "0.1").ok());
  REQUIRE(ValidateConfigValue("node.sandbox.cpus", "64").ok());
}

TEST_CASE("ask and audit settings: their defaults, and what each key accepts", "[config]") {
  using namespace std::chrono_literals;
  TempDir dir;
  auto unset = NodeConfig::Load(dir / "absent.json");
  REQUIRE(unset.ok());
  CHECK_FALSE(mojoup::policy::ProxyAskOn(*unset));
  const mojoup::policy::AskSettings ask = mojoup::policy::AskSettingsOf(*unset);
  CHECK(ask.hold == 30s);
  CHECK(ask.expiry == 3600s);
  CHECK(ask.max_pending == 8);
  const mojoup::policy::AuditSettings audit = mojoup::policy::AuditSettingsOf(*unset);
  CHECK(audit.max_bytes == 16777216);
  CHECK(audit.keep == 200);
  CHECK(audit.max_age == std::chrono::days(30));
  for (const char* key : {"node.proxy.ask", "node.proxy.ask_hold", "node.proxy.ask_expiry",
                          "node.proxy.ask_max_pending", "node.audit.max_bytes", "node.audit.keep",
                          "node.audit.max_age_days"}) {
    INFO(key);
    CHECK(mojoup::policy::ConfigDefault(*unset, key).has_value());
  }

  auto set = NodeConfig::Load(dir.Write("node.json", R"({"node.proxy.ask": "on",
      "node.proxy.ask_hold": "300", "node.proxy.ask_expiry": "60",
      "node.proxy.ask_max_pending": "64", "node.audit.max_bytes": "1073741824",
      "node.audit.keep": "1", "node.audit.max_age_days": "3650"})"));
  REQUIRE(set.ok());
  CHECK(mojoup::policy::ProxyAskOn(*set));
  CHECK(mojoup::policy::ProxyAskHold(*set) == 300s);
  CHECK(mojoup::policy::ProxyAskExpiry(*set) == 60s);
  CHECK(mojoup::policy::ProxyAskMaxPending(*set) == 64);
  CHECK(mojoup::policy::AuditMaxBytes(*set) == 1073741824);
  CHECK(mojoup::policy::AuditKeep(*set) == 1);
  CHECK(mojoup::policy::AuditMaxAge(*set) == std::chrono::days(3650));
  auto off = NodeConfig::Load(dir.Write("off.json", R"({"node.proxy.ask": false})"));
  REQUIRE(off.ok());
  CHECK_FALSE(mojoup::policy::ProxyAskOn(*off));

  struct Bad {
    const char* key;
    const char* value;
    const char* expected;
  };
  for (const Bad& bad : {
           Bad{"node.proxy.ask", "maybe", "on or off, yes or no, true or false"},
           Bad{"node.proxy.ask_hold", "0", "seconds, from 1 to 300"},
           Bad{"node.proxy.ask_hold", "301", "seconds, from 1 to 300"},
           Bad{"node.proxy.ask_hold", "30s", "seconds, from 1 to 300"},
           Bad{"node.proxy.ask_expiry", "59", "seconds, from 60 to 86400"},
           Bad{"node.proxy.ask_expiry", "86401", "seconds, from 60 to 86400"},
           Bad{"node.proxy.ask_max_pending", "0", "a whole number from 1 to 64"},
           Bad{"node.proxy.ask_max_pending", "65", "a whole number from 1 to 64"},
           Bad{"node.audit.max_bytes", "65535", "bytes, from 65536 to 1073741824"},
           Bad{"node.audit.max_bytes", "1073741825", "bytes, from 65536 to 1073741824"},
           Bad{"node.audit.max_bytes", "99999999999", "bytes, from 65536 to 1073741824"},
           Bad{"node.audit.keep", "-1", "a whole number from 1 to 100000"},
           Bad{"node.audit.keep", "100001", "a whole number from 1 to 100000"},
           Bad{"node.audit.max_age_days", "", "days, from 1 to 3650"},
           Bad{"node.audit.max_age_days", "3651", "days, from 1 to 3650"},
       }) {
    INFO(bad.key << " = " << bad.value);
    auto refused = ValidateConfigValue(bad.key, bad.value);
    REQUIRE_FALSE(refused.ok());
    CHECK(std::string(refused.message()) == std::string("\"") + bad.value +
                                                "\" is not a valid value for " + bad.key +
                                                ": expected " + bad.expected);
  }
}

TEST_CASE("node.proxy.ask is a switch, stored as true or false", "[config]") {
  TempDir dir;
  const std::string path = dir / "node.json";
  REQUIRE(mojoup::policy::UpdateNodeConfig(path, {{"node.proxy.ask", "on"}}).ok());
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Contains("\"node.proxy.ask\": true"));
  auto config = NodeConfig::Load(path);
  REQUIRE(config.ok());
  CHECK(mojoup::policy::ProxyAskOn(*config));
  auto near = mojoup::policy::ValidateConfigKey("node.proxy.ask_hld");
  REQUIRE_FALSE(near.ok());
  CHECK_THAT(std::string(near.message()), Contains("did you mean \"node.proxy.ask_hold\"?"));
}

TEST_CASE("the OpenShell gateway keys take what the CLI takes", "[config]") {
  for (const char* name : {"openshell", "prod-k8s", "gw.example.com", "team_1", "a b"}) {
    INFO(name);
    CHECK(ValidateConfigValue("node.sandbox.openshell_gateway", name).ok());
  }
  // Not one path component (validated_gateway_name), not a value clap gives
  // -g, or not kept as it is by the active gateway file.
  for (std::string bad :
       {std::string(), std::string("."), std::string(".."), std::string("../escape"),
        std::string("a/b"), std::string("-g"), std::string(" lead"), std::string("trail "),
        std::string("a\nb"), std::string(256, 'x')}) {
    INFO(bad);
    auto refused = ValidateConfigValue("node.sandbox.openshell_gateway", bad);
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(std::string(refused.message()),
               Contains("is not a valid value for node.sandbox.openshell_gateway: expected an "
                        "OpenShell gateway name"));
  }
  for (const char* word : {"auto", "yes", "no"}) {
    CHECK(ValidateConfigValue("node.sandbox.openshell_remote", word).ok());
  }
  for (const char* bad : {"true", "on", "maybe", "", "AUTO"}) {
    INFO(bad);
    auto refused = ValidateConfigValue("node.sandbox.openshell_remote", bad);
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(std::string(refused.message()), Contains("expected auto, yes or no"));
  }

  // In the file: one sentence naming the file, the key and what was expected.
  TempDir dir;
  const std::string path = dir.Write("node.json", R"({"node.sandbox.openshell_gateway": "../x"})");
  auto config = NodeConfig::Load(path);
  REQUIRE_FALSE(config.ok());
  CHECK(std::string(config.status().message()) ==
        path +
            ": /node.sandbox.openshell_gateway: \"../x\" is not a valid value for "
            "node.sandbox.openshell_gateway: expected an OpenShell gateway name, as `openshell "
            "gateway select` lists it (one path component, not starting with -)");
  config = NodeConfig::Load(dir.Write(
      "ok.json",
      R"({"node.sandbox.openshell_gateway": "prod-k8s", "node.sandbox.openshell_remote": "yes"})"));
  REQUIRE(config.ok());
  CHECK(config->Get("node.sandbox.openshell_gateway") == "prod-k8s");
  CHECK(config->Get("node.sandbox.openshell_remote") == "yes");
}

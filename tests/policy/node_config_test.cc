// NodeConfig: loading, validation, and what the probe learns from it.
#include "mojoup/policy/node_config.h"

#include <catch2/catch.hpp>

#include "../support/test_support.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using mojoup::policy::NodeConfig;
using mojoup::policy::ProbeOptionsFor;
using mojoup::policy::ValidateConfigValue;
using mojoup::test::TempDir;

TEST_CASE("a missing config file is an empty config", "[config]") {
  TempDir dir;
  auto config = NodeConfig::Load(dir / "node.json");
  REQUIRE(config.ok());
  REQUIRE(config->values().empty());
  auto options = ProbeOptionsFor(*config);
  REQUIRE(options.require_openshell);
  REQUIRE_FALSE(options.openshell_path.has_value());
}

TEST_CASE("a valid config is read, and steers the probe", "[config]") {
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
  auto options = ProbeOptionsFor(*config);
  REQUIRE_FALSE(options.require_openshell);
  REQUIRE(options.openshell_path == "/opt/openshell/bin/openshell");
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
  REQUIRE_FALSE(ValidateConfigValue("node.sandbox.role", "yes").ok());
  REQUIRE(ValidateConfigValue("node.sandbox.image", "mojoup/sandbox:1.0").ok());
}

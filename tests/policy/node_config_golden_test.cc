// The node config's bytes: the file `mojoup-node config set` writes (schema
// mojoup.node/v1) and `config list --json` (mojoup.config/v1), compared
// with the files under tests/golden/policy/, and the reader's sentences.
#include <catch2/catch.hpp>
#include <string>

#include "../support/golden.h"
#include "../support/test_support.h"
#include "mojoup/policy/node_config.h"

using mojoup::policy::NodeConfig;
using mojoup::test::TempDir;

namespace {

// Every key that has a default, so that none comes from this machine.
mojoup::policy::SuppliedDefaults Supplied() {
  return {{"node.sandbox.runtime", "openshell"},
          {"node.sandbox.role", "false"},
          {"node.sandbox.cpus", "2"},
          {"node.service.max_sessions", "8"},
          {"node.service.max_sessions_per_user", "4"},
          {"node.service.drain_timeout", "300"},
          {"node.service.min_free_disk_mb", "1024"},
          {"node.sandbox.allowed_users", "alice \"admin\""}};
}

// `text` with every `from` replaced by `to`.
std::string Replaced(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
  return text;
}

std::string LoadError(const TempDir& dir, const std::string& text) {
  auto config = NodeConfig::Load(dir.Write("node.json", text));
  REQUIRE_FALSE(config.ok());
  return Replaced(std::string(config.status().message()), dir / "node.json", "NODE");
}

}  // namespace

TEST_CASE("the node config file keeps the bytes of schema mojoup.node/v1", "[config]") {
  CHECK_GOLDEN("policy/mojoup.node.v1.json",
               mojoup::policy::NodeConfigJson(
                   {{"node.sandbox.role", "true"},
                    {"node.sandbox.runtime", "native"},
                    {"policy.org", "/etc/mojoup/org \"hub\"\t.json"},
                    {"node.sandbox.credential_hosts.GH_TOKEN", "api.github.com,github.com"}}));
  CHECK_GOLDEN("policy/mojoup.node.v1.role_off.json",
               mojoup::policy::NodeConfigJson({{"node.sandbox.role", "false"}}));
  CHECK_GOLDEN("policy/mojoup.node.v1.empty.json", mojoup::policy::NodeConfigJson({}));
}

TEST_CASE("config list's JSON keeps the bytes of schema mojoup.config/v1", "[config]") {
  TempDir dir;
  const std::string path = dir.Write("node.json", R"({
    "schema": "mojoup.node/v1",
    "node.sandbox.role": true,
    "node.sandbox.runtime": "native",
    "policy.team": "/etc/mojoup/team.json"
  })");
  auto config = NodeConfig::Load(path, Supplied());
  REQUIRE(config.ok());
  CHECK_GOLDEN("policy/mojoup.config.v1.json",
               Replaced(mojoup::policy::NodeConfigListJson(*config), path, "NODE"));
  auto absent = NodeConfig::Load("/nonexistent/mojoup \"node\".json", Supplied());
  REQUIRE(absent.ok());
  CHECK_GOLDEN("policy/mojoup.config.v1.unset.json", mojoup::policy::NodeConfigListJson(*absent));
}

TEST_CASE("the node config reader's sentences name the file and the key", "[config]") {
  TempDir dir;
  CHECK(LoadError(dir, "[]") == "NODE: the node config must be a JSON object of \"key\": value");
  CHECK(LoadError(dir, "\"x\"") == "NODE: the node config must be a JSON object of \"key\": value");
  const std::string schema =
      "NODE: /schema: expected \"mojoup.node/v1\", the only node config schema this build reads";
  CHECK(LoadError(dir, R"({"schema": "mojoup.node/v2"})") == schema);
  CHECK(LoadError(dir, R"({"schema": 1})") == schema);
  CHECK(LoadError(dir, R"({"schema": null})") == schema);
  for (const char* value : {"1", "null", "[]", "{}", "1.5"}) {
    INFO(value);
    CHECK(LoadError(dir, std::string(R"({"node.sandbox.runtime": )") + value + "}") ==
          "NODE: /node.sandbox.runtime: expected a string or true/false");
  }
  CHECK(LoadError(dir, R"({"node.sandbox.runtime": "podman"})") ==
        "NODE: /node.sandbox.runtime: \"podman\" is not a valid value for node.sandbox.runtime: "
        "expected openshell or native");
  CHECK(LoadError(dir, R"({"node.sandbox.role": "maybe"})") ==
        "NODE: /node.sandbox.role: \"maybe\" is not a valid value for node.sandbox.role: "
        "expected on or off, yes or no, true or false");
  // The first problem in the file's order is the one reported.
  CHECK(LoadError(dir, R"({"node.sandbox.engine": 3, "schema": "v0", "x": "y"})") ==
        "NODE: /node.sandbox.engine: expected a string or true/false");
  CHECK(LoadError(dir, R"({"x": "y", "schema": "v0"})").rfind("NODE: /x: unknown config key", 0) ==
        0);
  CHECK(LoadError(dir, R"({"node.sandbox.cpus": "9999", "node.sandbox.role": 1})") ==
        "NODE: /node.sandbox.cpus: \"9999\" is not a valid value for node.sandbox.cpus: expected "
        "a number of CPUs from 0.1 to 1024, such as 2 or 1.5");
  // A later member of the same name wins.
  auto twice = NodeConfig::Load(dir.Write("twice.json", R"({"node.sandbox.runtime": "native",
                                                   "node.sandbox.runtime": "openshell"})"));
  REQUIRE(twice.ok());
  CHECK(twice->Get("node.sandbox.runtime") == "openshell");
}

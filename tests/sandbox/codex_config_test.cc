// Codex's config.toml, written into the session's staging home: the bytes
// are kept in tests/golden/sandbox/codex.config.toml.
#include "runtime/openshell/codex_config.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "../support/golden.h"
#include "../support/test_support.h"

namespace {

using mojoup::sandbox::SandboxSpec;
using mojoup::test::TempDir;

std::string ReadAll(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

SandboxSpec StagedHome(const TempDir& dir) {
  SandboxSpec spec;
  spec.home = "/home/ada";
  spec.mounts.push_back({dir / "repo", "/src/app", false});
  spec.mounts.push_back({dir / "staging", spec.home, false});
  ::mkdir((dir / "staging").c_str(), 0700);
  return spec;
}

}  // namespace

TEST_CASE("codex config: the base URL goes through the proxy, in the staging home",
          "[sandbox][codex]") {
  TempDir dir;
  REQUIRE(mojoup::sandbox::WriteCodexConfig(StagedHome(dir), "http://10.200.0.1:8080").ok());
  CHECK_GOLDEN("sandbox/codex.config.toml", ReadAll(dir / "staging/.codex/config.toml"));
  struct stat info {};
  REQUIRE(::stat((dir / "staging/.codex").c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0700);
}

TEST_CASE("codex config: a config.toml the home already has is kept", "[sandbox][codex]") {
  TempDir dir;
  const SandboxSpec spec = StagedHome(dir);
  dir.Write("staging/.codex/config.toml", "model = \"o3\"\n");
  REQUIRE(mojoup::sandbox::WriteCodexConfig(spec, "http://10.200.0.1:8080").ok());
  CHECK(ReadAll(dir / "staging/.codex/config.toml") == "model = \"o3\"\n");
}

TEST_CASE("codex config: without a staged home nothing is written", "[sandbox][codex]") {
  TempDir dir;
  SandboxSpec spec = StagedHome(dir);
  spec.mounts.pop_back();
  REQUIRE(mojoup::sandbox::WriteCodexConfig(spec, "http://10.200.0.1:8080").ok());
  CHECK(::access((dir / "staging/.codex").c_str(), F_OK) != 0);
}

#include "mojoup/internal/atomic_file.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "../support/test_support.h"

using mojoup::internal::ReplaceAtomically;
using mojoup::test::TempDir;

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

unsigned ModeOf(const std::string& path) {
  struct stat info {};
  REQUIRE(::stat(path.c_str(), &info) == 0);
  return info.st_mode & 07777;
}

}  // namespace

TEST_CASE("ReplaceAtomically writes a new file with the mode asked for", "[atomic_file]") {
  TempDir dir;
  const std::string path = dir / "state.json";
  REQUIRE(ReplaceAtomically(path, "{\"a\": 1}\n", 0600).ok());
  REQUIRE(Slurp(path) == "{\"a\": 1}\n");
  REQUIRE(ModeOf(path) == 0600);
}

TEST_CASE("ReplaceAtomically replaces an existing file whole and leaves nothing beside it",
          "[atomic_file]") {
  TempDir dir;
  const std::string path = dir / "node.json";
  REQUIRE(ReplaceAtomically(path, std::string(10000, 'x'), 0600).ok());
  REQUIRE(ReplaceAtomically(path, "short", 0644).ok());
  REQUIRE(Slurp(path) == "short");
  REQUIRE(ModeOf(path) == 0644);
  int entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    (void)entry;
    ++entries;
  }
  REQUIRE(entries == 1);
}

TEST_CASE("ReplaceAtomically fails, saying where, when the directory is missing", "[atomic_file]") {
  TempDir dir;
  const std::string path = dir / "missing/state.json";
  absl::Status put = ReplaceAtomically(path, "x", 0600);
  REQUIRE_FALSE(put.ok());
  REQUIRE_THAT(std::string(put.message()), Catch::Matchers::Contains(path));
  REQUIRE_FALSE(std::filesystem::exists(path));
}

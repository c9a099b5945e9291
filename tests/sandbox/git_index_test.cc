// The gitlinks of index files written by this host's real git, in each
// format git writes.
#include "guard/git_index.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "../support/test_support.h"

namespace {

using mojoup::sandbox::IndexGitlinks;
using mojoup::sandbox::ParseIndexGitlinks;
using mojoup::test::RunWithEnv;
using mojoup::test::TempDir;

// `git ARGS` in `dir`, as a test step that must work.
void Git(const std::string& dir, std::vector<std::string> args) {
  std::vector<std::string> argv{"git", "-C",         dir, "-c", "user.email=t@example.com",
                                "-c",  "user.name=T"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto run = RunWithEnv({}, argv, std::chrono::seconds(30));
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
}

// A repository whose index has two files and two gitlinks, one with a long
// shared prefix (what version 4 compresses).
std::string RepositoryWithGitlinks(const TempDir& dir, std::vector<std::string> init) {
  const std::string repo = dir / "repo";
  std::filesystem::create_directories(repo);
  init.insert(init.begin(), "init");
  init.push_back("-q");
  Git(repo, init);
  dir.Write("repo/a.txt", "a\n");
  dir.Write("repo/deep/directory/name/file.txt", "b\n");
  Git(repo, {"add", "."});
  Git(repo, {"commit", "-q", "-m", "one"});
  auto rev = RunWithEnv({}, {"git", "-C", repo, "rev-parse", "HEAD"});
  std::string object = rev.result.out.substr(0, rev.result.out.find('\n'));
  for (const std::string path : {"deep/directory/name/sub", "vendor/lib"}) {
    Git(repo, {"update-index", "--add", "--cacheinfo", "160000," + object + "," + path});
  }
  return repo;
}

TEST_CASE("git index: gitlinks in every format git writes", "[git]") {
  if (RunWithEnv({}, {"git", "--version"}).result.exit_code != 0) {
    MOJOUP_SKIP("needs git (Debian's git package) to write index files");
  }
  TempDir dir;
  const std::vector<std::string> expected = {"deep/directory/name/sub", "vendor/lib"};

  SECTION("version 2 (the default), SHA-1") {
    const std::string repo = RepositoryWithGitlinks(dir, {});
    REQUIRE(*IndexGitlinks(repo + "/.git") == expected);
  }
  SECTION("version 4, prefix-compressed paths") {
    const std::string repo = RepositoryWithGitlinks(dir, {});
    Git(repo, {"update-index", "--index-version", "4"});
    REQUIRE(*IndexGitlinks(repo + "/.git") == expected);
  }
  SECTION("version 3, an entry with extended flags (intent to add)") {
    const std::string repo = RepositoryWithGitlinks(dir, {});
    dir.Write("repo/new.txt", "n\n");
    Git(repo, {"add", "--intent-to-add", "new.txt"});
    REQUIRE(*IndexGitlinks(repo + "/.git") == expected);
  }
  SECTION("SHA-256 object names") {
    const std::string repo = RepositoryWithGitlinks(dir, {"--object-format=sha256"});
    REQUIRE(*IndexGitlinks(repo + "/.git") == expected);
  }
  SECTION("a split index: the gitlinks in its shared part count too") {
    const std::string repo = RepositoryWithGitlinks(dir, {});
    Git(repo, {"update-index", "--split-index"});
    dir.Write("repo/later.txt", "l\n");
    Git(repo, {"add", "later.txt"});
    auto found = IndexGitlinks(repo + "/.git");
    REQUIRE(found.ok());
    std::sort(found->begin(), found->end());
    found->erase(std::unique(found->begin(), found->end()), found->end());
    REQUIRE(*found == expected);
  }
  SECTION("no index at all: no gitlinks") {
    std::filesystem::create_directories(dir / "empty/.git");
    REQUIRE(IndexGitlinks(dir / "empty/.git")->empty());
  }
}

TEST_CASE("git index: malformed bytes are an error, never a crash", "[git]") {
  std::string shared;
  REQUIRE(!ParseIndexGitlinks("", 20, &shared).ok());
  REQUIRE(!ParseIndexGitlinks(std::string("DIRC\0\0\0\x09\0\0\0\0", 12) + std::string(20, '\0'), 20,
                              &shared)
               .ok());
  // A header claiming one entry, and nothing after it but the checksum.
  std::string one = std::string("DIRC\0\0\0\x02\0\0\0\x01", 12) + std::string(20, '\0');
  REQUIRE(!ParseIndexGitlinks(one, 20, &shared).ok());
  // An entry whose path never ends.
  std::string unterminated = std::string("DIRC\0\0\0\x02\0\0\0\x01", 12) + std::string(62, '\0');
  unterminated[12 + 61] = 5;  // name length 5
  unterminated += "abcde";
  unterminated += std::string(20, 'x');
  REQUIRE(!ParseIndexGitlinks(unterminated, 20, &shared).ok());
}

}  // namespace

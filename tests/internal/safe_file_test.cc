#include "mojoup/internal/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../support/test_support.h"

using Catch::Matchers::Contains;
using mojoup::internal::CheckPrivateDir;
using mojoup::internal::MakePrivateDir;
using mojoup::internal::OpenBeneath;
using mojoup::internal::OpenDirectory;
using mojoup::internal::ReadBeneath;
using mojoup::internal::ReadRegularFile;
using mojoup::internal::RemoveTree;
using mojoup::test::TempDir;
namespace fs = std::filesystem;

namespace {

void Put(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("ReadBeneath reads a regular file beneath a directory", "[safe_file]") {
  TempDir dir;
  Put(dir.path() + "/a/b/file", "bytes");
  auto root = OpenDirectory(dir.path());
  REQUIRE(root.ok());
  auto read = ReadBeneath(root->get(), "a/b/file", 100);
  REQUIRE(read.ok());
  CHECK(read->bytes == "bytes");
  CHECK(absl::IsNotFound(ReadBeneath(root->get(), "a/none", 100).status()));
  CHECK(absl::IsInvalidArgument(ReadBeneath(root->get(), "../x", 100).status()));
  CHECK(absl::IsInvalidArgument(ReadBeneath(root->get(), "/etc/passwd", 100).status()));
}

TEST_CASE("ReadBeneath follows no symbolic link, last or on the way", "[safe_file]") {
  TempDir dir;
  TempDir outside;
  Put(outside.path() + "/secret", "secret");
  fs::create_directories(dir.path() + "/real");
  fs::create_symlink(outside.path() + "/secret", dir.path() + "/last");
  fs::create_symlink(outside.path(), dir.path() + "/way");
  auto root = OpenDirectory(dir.path());
  REQUIRE(root.ok());
  auto last = ReadBeneath(root->get(), "last", 100);
  REQUIRE(absl::IsFailedPrecondition(last.status()));
  CHECK_THAT(std::string(last.status().message()), Contains("symbolic link"));
  auto way = ReadBeneath(root->get(), "way/secret", 100);
  REQUIRE(absl::IsFailedPrecondition(way.status()));
  CHECK_THAT(std::string(way.status().message()), Contains("way/secret"));
}

TEST_CASE("ReadRegularFile refuses a FIFO at once and a file over its bound", "[safe_file]") {
  TempDir dir;
  const std::string fifo = dir.path() + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // No writer: a blocking open would hang here for good.
  auto read = ReadRegularFile(fifo, 100);
  REQUIRE(absl::IsFailedPrecondition(read.status()));
  CHECK_THAT(std::string(read.status().message()), Contains("is a FIFO"));

  const std::string sparse = dir.path() + "/sparse";
  { std::ofstream(sparse).put('x'); }
  REQUIRE(::truncate(sparse.c_str(), 32LL << 30) == 0);  // 32 GiB, no blocks
  auto big = ReadRegularFile(sparse, 1 << 20);
  REQUIRE(absl::IsFailedPrecondition(big.status()));
  CHECK_THAT(std::string(big.status().message()), Contains("34359738368 bytes"));

  fs::create_symlink(sparse, dir.path() + "/link");
  CHECK(absl::IsFailedPrecondition(ReadRegularFile(dir.path() + "/link", 100).status()));
}

TEST_CASE("OpenBeneath creates beneath a directory without following links", "[safe_file]") {
  TempDir dir;
  TempDir outside;
  fs::create_symlink(outside.path(), dir.path() + "/away");
  auto root = OpenDirectory(dir.path());
  REQUIRE(root.ok());
  auto made = OpenBeneath(root->get(), "new", O_WRONLY | O_CREAT | O_EXCL, 0600);
  REQUIRE(made.ok());
  CHECK(fs::exists(dir.path() + "/new"));
  // Made by someone else first: said so, not an error of another kind.
  auto again = OpenBeneath(root->get(), "new", O_WRONLY | O_CREAT | O_EXCL, 0600);
  CHECK(absl::IsAlreadyExists(again.status()));
  auto away = OpenBeneath(root->get(), "away/new", O_WRONLY | O_CREAT | O_EXCL, 0600);
  CHECK_FALSE(away.ok());
  CHECK_FALSE(fs::exists(outside.path() + "/new"));
}

TEST_CASE("MakePrivateDir makes 0700 directories, CheckPrivateDir refuses what others can change",
          "[safe_file]") {
  TempDir dir;
  const std::string state = dir.path() + "/a/b/state";
  REQUIRE(MakePrivateDir(state, "the state directory").ok());
  struct stat info {};
  REQUIRE(::stat(state.c_str(), &info) == 0);
  CHECK((info.st_mode & 07777) == 0700);
  REQUIRE(::stat((dir.path() + "/a").c_str(), &info) == 0);
  CHECK((info.st_mode & 07777) == 0700);

  SECTION("a symbolic link") {
    fs::create_symlink(state, dir.path() + "/link");
    absl::Status checked = CheckPrivateDir(dir.path() + "/link", "the state directory");
    REQUIRE(absl::IsFailedPrecondition(checked));
    CHECK_THAT(std::string(checked.message()), Contains("is a symbolic link"));
  }
  SECTION("writable by others") {
    REQUIRE(::chmod(state.c_str(), 0777) == 0);
    absl::Status checked = CheckPrivateDir(state, "the state directory");
    REQUIRE(absl::IsFailedPrecondition(checked));
    CHECK_THAT(std::string(checked.message()), Contains("writable by others (mode 0777)"));
    CHECK_THAT(std::string(checked.message()), Contains(state));
  }
  SECTION("in a directory anyone may write, not sticky") {
    REQUIRE(::chmod((dir.path() + "/a/b").c_str(), 0777) == 0);
    absl::Status checked = CheckPrivateDir(state, "the state directory");
    REQUIRE(absl::IsFailedPrecondition(checked));
    CHECK_THAT(std::string(checked.message()), Contains("anyone may write"));
  }
  SECTION("in a sticky directory anyone may write, as /tmp") {
    REQUIRE(::chmod((dir.path() + "/a/b").c_str(), 01777) == 0);
    CHECK(CheckPrivateDir(state, "the state directory").ok());
  }
  SECTION("a file") {
    Put(dir.path() + "/file", "");
    CHECK(absl::IsFailedPrecondition(CheckPrivateDir(dir.path() + "/file", "the state directory")));
  }
  CHECK(absl::IsNotFound(CheckPrivateDir(dir.path() + "/none", "the state directory")));
}

TEST_CASE("RemoveTree removes whatever the modes, deep trees and links", "[safe_file]") {
  TempDir dir;
  TempDir outside;
  Put(outside.path() + "/kept", "kept");
  const std::string tree = dir.path() + "/tree";
  Put(tree + "/a/file", "x");
  Put(tree + "/b/c/file", "y");
  fs::create_symlink(outside.path(), tree + "/link");
  REQUIRE(::chmod((tree + "/b/c").c_str(), 0500) == 0);
  REQUIRE(::chmod((tree + "/b").c_str(), 0) == 0);
  REQUIRE(::chmod((tree + "/a/file").c_str(), 0) == 0);
  // Deeper than a path can name and than a process has descriptors.
  {
    auto root = OpenDirectory(tree);
    REQUIRE(root.ok());
    int at = ::dup(root->get());
    for (int depth = 0; depth < 2000; ++depth) {
      REQUIRE(::mkdirat(at, "d", 0700) == 0);
      int next = ::openat(at, "d", O_RDONLY | O_DIRECTORY);
      REQUIRE(next >= 0);
      ::close(at);
      at = next;
    }
    ::close(at);
  }
  absl::Status removed = RemoveTree(tree);
  INFO(removed.message());
  REQUIRE(removed.ok());
  CHECK_FALSE(fs::exists(tree));
  CHECK(fs::exists(outside.path() + "/kept"));
  CHECK(RemoveTree(tree).ok());  // absent: nothing to do
}

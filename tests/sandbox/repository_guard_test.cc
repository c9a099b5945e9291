// Sessions that start at once on one repository: each makes the git
// directory's absent trusted entries or finds them made by another, and
// every one of them gets the same protections.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <latch>
#include <thread>

#include "../support/test_support.h"
#include "guard/repository.h"

namespace {

using mojoup::sandbox::GuardRepository;
using mojoup::sandbox::RepositoryGuardOptions;
using mojoup::test::RunWithEnv;
using mojoup::test::TempDir;

// A repository `git init` made, with the guard's options for it.
RepositoryGuardOptions FreshRepository(const TempDir& dir) {
  const std::string repo = dir / "repo";
  std::filesystem::create_directories(repo);
  auto init = RunWithEnv({}, {"git", "-C", repo, "init", "-q"}, std::chrono::seconds(30));
  REQUIRE(init.result.exit_code == 0);
  RepositoryGuardOptions options;
  options.repo = std::filesystem::canonical(repo).string();
  options.uid = ::getuid();
  options.home = dir / "home";
  options.state_dir = dir / "state";
  return options;
}

TEST_CASE("sessions starting at once on a fresh repository all get its protections",
          "[repository]") {
  constexpr int kSessions = 6;
  for (int round = 0; round < 10; ++round) {
    TempDir dir;
    const RepositoryGuardOptions options = FreshRepository(dir);
    const std::string repo = options.repo;

    std::latch start(kSessions);
    std::vector<std::string> errors(kSessions);
    std::vector<std::size_t> mounts(kSessions);
    std::vector<std::thread> sessions;
    for (int i = 0; i < kSessions; ++i) {
      sessions.emplace_back([&, i] {
        start.arrive_and_wait();
        auto guarded = GuardRepository(options);
        if (guarded.ok()) {
          mounts[i] = guarded->mounts.size();
        } else {
          errors[i] = std::string(guarded.status().message());
        }
      });
    }
    for (auto& session : sessions) session.join();
    for (int i = 0; i < kSessions; ++i) {
      INFO("round " << round << ", session " << i);
      CHECK(errors[i] == "");
      CHECK(mounts[i] == mounts[0]);
    }
    CHECK(mounts[0] > 1);
    CHECK(std::filesystem::is_regular_file(repo + "/.git/info/attributes"));
  }
}

// What a session leaves in the git directory it could write is moved
// aside after it, each with one sentence, and what was there before stays.
TEST_CASE("after a session, what it planted in the git directory is moved aside", "[repository]") {
  TempDir dir;
  const RepositoryGuardOptions options = FreshRepository(dir);
  const std::string git_dir = options.repo + "/.git";
  auto guarded = GuardRepository(options);
  REQUIRE(guarded.ok());
  auto places = mojoup::sandbox::NoteGitPlaces(options.repo, *guarded);
  REQUIRE(places.ok());
  // The session begins after every file git init made changed last.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  dir.Write("marker", "");
  struct stat marker {};
  REQUIRE(::stat((dir / "marker").c_str(), &marker) == 0);
  const std::int64_t since =
      static_cast<std::int64_t>(marker.st_ctim.tv_sec) * 1000000000 + marker.st_ctim.tv_nsec;

  std::filesystem::create_directories(git_dir + "/rebase-merge");
  std::filesystem::create_directories(git_dir + "/logs");
  std::filesystem::create_symlink(dir / "home", git_dir + "/logs/planted");
  std::vector<std::string> notices;
  std::vector<std::string> errors;
  mojoup::sandbox::MoveAsidePlantedRepositories(options.repo, *places, since, "s1", notices,
                                                errors);
  CHECK(errors.empty());
  CHECK(!std::filesystem::exists(git_dir + "/rebase-merge"));
  CHECK(!std::filesystem::is_symlink(git_dir + "/logs/planted"));
  CHECK(std::filesystem::is_regular_file(git_dir + "/HEAD"));
  CHECK(std::filesystem::is_regular_file(git_dir + "/config"));
  REQUIRE(notices.size() == 2);
  CHECK_THAT(notices[0], Catch::Matchers::Contains("the session made " + git_dir +
                                                   "/rebase-merge, which git on this host would "
                                                   "obey"));
  CHECK_THAT(notices[1], Catch::Matchers::Contains("the session made " + git_dir +
                                                   "/logs/planted a symbolic link"));
}

}  // namespace

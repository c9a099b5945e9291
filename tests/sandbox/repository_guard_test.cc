// Sessions that start at once on one repository: each makes the git
// directory's absent trusted entries or finds them made by another, and
// every one of them gets the same protections.
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

TEST_CASE("sessions starting at once on a fresh repository all get its protections",
          "[repository]") {
  constexpr int kSessions = 6;
  for (int round = 0; round < 10; ++round) {
    TempDir dir;
    const std::string repo = dir / "repo";
    std::filesystem::create_directories(repo);
    auto init = RunWithEnv({}, {"git", "-C", repo, "init", "-q"}, std::chrono::seconds(30));
    REQUIRE(init.result.exit_code == 0);
    RepositoryGuardOptions options;
    options.repo = std::filesystem::canonical(repo).string();
    options.uid = ::getuid();
    options.home = dir / "home";
    options.state_dir = dir / "state";

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

}  // namespace

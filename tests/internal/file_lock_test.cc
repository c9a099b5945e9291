#include "mojoup/internal/file_lock.h"

#include <sys/file.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "../support/test_support.h"

using mojoup::internal::LockFile;
using mojoup::test::TempDir;

TEST_CASE("LockFile creates the lock file and holds it until the descriptor closes",
          "[file_lock]") {
  TempDir dir;
  const std::string path = dir / "state.lock";
  {
    auto held = LockFile(path, std::chrono::milliseconds(100));
    REQUIRE(held.ok());
    // flock locks belong to the open file description: a second open waits.
    auto second = LockFile(path, std::chrono::milliseconds(20));
    REQUIRE(second.status().code() == absl::StatusCode::kDeadlineExceeded);
    REQUIRE_THAT(std::string(second.status().message()), Catch::Matchers::Contains(path));
  }
  REQUIRE(LockFile(path, std::chrono::milliseconds(20)).ok());
}

TEST_CASE("LockFile says which lock file it cannot open", "[file_lock]") {
  TempDir dir;
  const std::string path = dir / "missing/state.lock";
  auto lock = LockFile(path, std::chrono::milliseconds(20));
  REQUIRE(lock.status().code() == absl::StatusCode::kPermissionDenied);
  REQUIRE_THAT(std::string(lock.status().message()), Catch::Matchers::Contains(path));
}

#include "session/audit_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "../support/test_support.h"

namespace mojoup::sandbox {
namespace audit_files_test {
namespace {

using std::chrono::hours;
using test::TempDir;

const auto kNow = std::chrono::system_clock::time_point(std::chrono::hours(500000));

// An audit file of session `id` last written `age` before kNow.
void Audit(const TempDir& dir, const std::string& id, hours age) {
  const std::string path = test::WriteFile(dir / (id + ".jsonl"), "{}\n");
  const auto when =
      std::chrono::duration_cast<std::chrono::seconds>((kNow - age).time_since_epoch());
  const timespec times[2] = {{when.count(), 0}, {when.count(), 0}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
}

bool Exists(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

TEST_CASE("PruneAudits keeps the newest and the live, and removes by age", "[audit]") {
  TempDir dir;
  Audit(dir, "000000000000000a", hours(1));
  Audit(dir, "000000000000000b", hours(2));
  Audit(dir, "000000000000000c", hours(3));
  Audit(dir, "000000000000000d", hours(4));
  Audit(dir, "000000000000000e", hours(24 * 40));  // older than the age, but live
  Audit(dir, "000000000000000f", hours(24 * 31));
  std::vector<std::string> errors;
  auto removed = PruneAudits(dir.path(),
                             {.keep = 3,
                              .max_age = hours(24 * 30),
                              .now = kNow,
                              .live = {"000000000000000e", "000000000000000d"}},
                             errors);
  CHECK(errors.empty());
  std::sort(removed.begin(), removed.end());
  CHECK(removed == std::vector<std::string>{"000000000000000f"});
  CHECK(Exists(dir / "000000000000000d.jsonl"));
  CHECK(Exists(dir / "000000000000000e.jsonl"));
  removed = PruneAudits(dir.path(), {.keep = 1, .max_age = hours(24 * 30), .now = kNow}, errors);
  std::sort(removed.begin(), removed.end());
  CHECK(removed == std::vector<std::string>{"000000000000000b", "000000000000000c",
                                            "000000000000000d", "000000000000000e"});
  CHECK(Exists(dir / "000000000000000a.jsonl"));
}

TEST_CASE("PruneAudits leaves links and other names alone, never following them", "[audit]") {
  TempDir dir;
  TempDir elsewhere;
  const std::string target = test::WriteFile(elsewhere / "precious.jsonl", "keep\n");
  REQUIRE(::symlink(target.c_str(), (dir / "0000000000000001.jsonl").c_str()) == 0);
  REQUIRE(::mkdir((dir / "0000000000000002.jsonl").c_str(), 0700) == 0);
  test::WriteFile(dir / "notes.jsonl", "mine\n");
  test::WriteFile(dir / "0000000000000003.json", "mine\n");
  std::vector<std::string> errors;
  auto removed = PruneAudits(dir.path(), {.keep = 0, .max_age = hours(0), .now = kNow}, errors);
  CHECK(removed.empty());
  CHECK(errors.empty());
  CHECK(test::Slurp(target) == "keep\n");
  CHECK(Exists(dir / "0000000000000001.jsonl"));
  CHECK(Exists(dir / "0000000000000002.jsonl"));
  CHECK(Exists(dir / "notes.jsonl"));
  CHECK(Exists(dir / "0000000000000003.json"));
}

TEST_CASE("PruneAudits of a directory that is not there removes nothing", "[audit]") {
  TempDir dir;
  std::vector<std::string> errors;
  CHECK(PruneAudits(dir / "none", {.now = kNow}, errors).empty());
  CHECK(errors.empty());
}

}  // namespace
}  // namespace audit_files_test
}  // namespace mojoup::sandbox

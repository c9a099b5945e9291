// The supervisor's Landlock (landlock.cc) against the running kernel, in forked
// children.
#include "landlock.h"

#include <fcntl.h>
#include <seccomp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <fstream>

#include "../../support/test_support.h"
#include "supervisor_test_support.h"

using namespace mojoup::supervisor;
using mojoup::test::BinDir;
using mojoup::test::TempDir;
using namespace mojoup::supervisor::test;

TEST_CASE("supervisor: Landlock handles exactly the write rights each ABI knows",
          "[supervisor][landlock]") {
  constexpr std::uint64_t kAbi1 = (1ULL << 13) - 1 - (1ULL << 0) - (1ULL << 2) - (1ULL << 3);
  CHECK(LandlockWriteAccess(1) == kAbi1);
  CHECK(LandlockWriteAccess(2) == (kAbi1 | 1ULL << 13));
  CHECK(LandlockWriteAccess(3) == (kAbi1 | 1ULL << 13 | 1ULL << 14));
  CHECK(LandlockWriteAccess(4) == LandlockWriteAccess(3));
  CHECK(LandlockWriteAccess(7) == (kAbi1 | 1ULL << 13 | 1ULL << 14 | 1ULL << 15));
}

TEST_CASE("supervisor: Landlock: writes only beneath the allowed directories, reads anywhere",
          "[supervisor][landlock]") {
  if (std::string reason = LandlockSkipReason(); !reason.empty()) {
    RequireLandlockRefusal(reason);
    return;
  }
  TempDir allowed;
  TempDir other;
  std::string readable = other.Write("readable", "hello");
  std::string file_ok = other.Write("writable-file", "old");

  ChildOutcome child = InChild([&] {
    std::string report = SetNoNewPrivs();
    if (std::string error = ApplyLandlock({allowed.path()}, {file_ok}); !error.empty()) {
      return "ApplyLandlock: " + error;
    }
    int error = 0;
    CreateFile(allowed / "created", &error);
    report += error == 0 ? "" : "creating a file in the allowed directory failed\n";
    CreateFile(other / "created", &error);
    report += error == EACCES ? "" : "creating a file elsewhere did not fail with EACCES\n";
    report += ExpectFailure(mkdir((other / "dir").c_str(), 0755), EACCES, "mkdir elsewhere");
    report += ExpectFailure(truncate(readable.c_str(), 0), EACCES, "truncate elsewhere");
    report += ExpectFailure(unlink(readable.c_str()), EACCES, "unlink elsewhere");
    report += Expect(mkdir((allowed / "dir").c_str(), 0755) == 0, "mkdir in the allowed dir");

    std::ifstream in(readable);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    report += text == "hello" ? "" : "reading a file elsewhere gave \"" + text + "\"\n";

    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    report += Expect(null >= 0 && write(null, "x", 1) == 1, "writing /dev/null");
    if (null >= 0) close(null);

    // A --write-file: its contents may change, its directory may not.
    int file = open(file_ok.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    report += Expect(file >= 0 && write(file, "new", 3) == 3, "writing the allowed file");
    if (file >= 0) close(file);
    return report;
  });
  INFO(child.report);
  CHECK(child.exit_code == 0);
  CHECK(Exists(allowed / "created"));
  CHECK_FALSE(Exists(other / "created"));
  CHECK(Exists(readable));
}

TEST_CASE("supervisor: Landlock: on a kernel without it, a refusal and the command never runs",
          "[supervisor][landlock]") {
  TempDir dir;
  const std::string init = BinDir() + "/mojoup-sandbox-init";
  ChildOutcome child = InChild([&] {
    // The kernel's answer as a seam: landlock_create_ruleset gives ENOSYS, as
    // on a kernel built without Landlock (FACTS.md). Children inherit it.
    std::string report = SetNoNewPrivs();
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == nullptr || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), 444, 0) != 0 ||
        seccomp_load(ctx) != 0) {
      return std::string("cannot install the ENOSYS filter");
    }
    seccomp_release(ctx);
    const std::string error = ApplyLandlock({dir.path()}, {});
    if (error.find("Landlock is unavailable") == std::string::npos ||
        error.find("refusing to run the command") == std::string::npos) {
      report += "ApplyLandlock: \"" + error + "\"\n";
    }
    pid_t pid = fork();
    if (pid == 0) {
      const std::string touch = "touch " + (dir / "ran");
      execl(init.c_str(), init.c_str(), "--write", dir.path().c_str(), "--", "/bin/sh", "-c",
            touch.c_str(), nullptr);
      _exit(99);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 126) {
      report += "mojoup-sandbox-init did not exit 126\n";
    }
    return report;
  });
  INFO(child.report);
  CHECK(child.exit_code == 0);
  CHECK_FALSE(Exists(dir / "ran"));
}

TEST_CASE(
    "supervisor: Landlock: a write directory that does not exist is an error, enforcing nothing",
    "[supervisor][landlock]") {
  if (std::string reason = LandlockSkipReason(); !reason.empty()) {
    RequireLandlockRefusal(reason);
    return;
  }
  TempDir dir;
  std::string missing = dir / "no-such-dir";
  std::string a_file = dir.Write("a-file", "");

  ChildOutcome child = InChild([&] {
    std::string report = SetNoNewPrivs();
    std::string error = ApplyLandlock({dir.path(), missing}, {});
    if (error.find(missing) == std::string::npos ||
        error.find("No such file") == std::string::npos) {
      report += "missing dir: \"" + error + "\"\n";
    }
    error = ApplyLandlock({a_file}, {});
    if (error.find(a_file) == std::string::npos ||
        error.find("Not a directory") == std::string::npos) {
      report += "file as dir: \"" + error + "\"\n";
    }
    error = ApplyLandlock({}, {missing});
    if (error.find(missing) == std::string::npos) report += "missing file: \"" + error + "\"\n";
    // Nothing was enforced: writing elsewhere still works.
    int created = 0;
    CreateFile(dir / "still-writable", &created);
    if (created != 0) report += "a failed ApplyLandlock still restricted writes\n";
    return report;
  });
  INFO(child.report);
  CHECK(child.exit_code == 0);
}

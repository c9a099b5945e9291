// The real CommandRunner: output, exit codes, and the deadline.
#include "mojoup/probe/command_runner.h"

#include <catch2/catch.hpp>

using mojoup::probe::CommandResult;
using mojoup::probe::MakeSystemCommandRunner;
using Outcome = CommandResult::Outcome;

TEST_CASE("captures stdout and stderr apart, and the exit code", "[runner]") {
  auto runner = MakeSystemCommandRunner();
  CommandResult r =
      runner->Run({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, std::chrono::seconds(5));
  REQUIRE(r.outcome == Outcome::kExited);
  REQUIRE(r.exit_code == 3);
  REQUIRE(r.out == "out\n");
  REQUIRE(r.err == "err\n");
}

TEST_CASE("stdin is /dev/null, so a reader does not wait", "[runner]") {
  auto runner = MakeSystemCommandRunner();
  CommandResult r = runner->Run({"cat"}, std::chrono::seconds(5));
  REQUIRE(r.Succeeded());
  REQUIRE(r.out.empty());
}

TEST_CASE("a missing program is not started, with ENOENT", "[runner]") {
  auto runner = MakeSystemCommandRunner();
  CommandResult r = runner->Run({"/nonexistent/program"}, std::chrono::seconds(5));
  REQUIRE(r.outcome == Outcome::kNotStarted);
  REQUIRE(r.spawn_error == ENOENT);
}

TEST_CASE("the deadline kills the program and everything it started", "[runner]") {
  auto runner = MakeSystemCommandRunner();
  auto start = std::chrono::steady_clock::now();
  // The grandchild keeps the pipes open; the group kill must end it too.
  CommandResult r =
      runner->Run({"/bin/sh", "-c", "sleep 30 & sleep 30"}, std::chrono::milliseconds(200));
  REQUIRE(r.outcome == Outcome::kTimedOut);
  REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
}

TEST_CASE("a program that exits while a grandchild holds its output still returns", "[runner]") {
  auto runner = MakeSystemCommandRunner();
  auto start = std::chrono::steady_clock::now();
  CommandResult r =
      runner->Run({"/bin/sh", "-c", "echo hi; sleep 3 & exit 0"}, std::chrono::seconds(4));
  REQUIRE(r.Succeeded());
  REQUIRE(r.out == "hi\n");
  REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
}

TEST_CASE("an environment for one program: added, replaced, the rest kept", "[runner]") {
  auto runner = MakeSystemCommandRunner();
  setenv("MOJOUP_RUNNER_KEPT", "kept", 1);
  setenv("MOJOUP_RUNNER_SECRET", "old", 1);
  CommandResult r = runner->RunWithEnvironment(
      {"/bin/sh", "-c", "echo \"$MOJOUP_RUNNER_SECRET $MOJOUP_RUNNER_KEPT $MOJOUP_RUNNER_NEW\""},
      {"MOJOUP_RUNNER_SECRET=s3cret", "MOJOUP_RUNNER_NEW=new"}, std::chrono::seconds(5));
  REQUIRE(r.Succeeded());
  REQUIRE(r.out == "s3cret kept new\n");
  // Our own environment is untouched.
  REQUIRE(std::string(getenv("MOJOUP_RUNNER_SECRET")) == "old");
  // A bare name (or "=x") would match every variable: refused, nothing run.
  for (const char* bad : {"MOJOUP_RUNNER_SECRET", "=x"}) {
    INFO(bad);
    CommandResult refused =
        runner->RunWithEnvironment({"/bin/true"}, {bad}, std::chrono::seconds(5));
    REQUIRE(refused.outcome == Outcome::kNotStarted);
    REQUIRE(refused.spawn_error == EINVAL);
  }
  unsetenv("MOJOUP_RUNNER_KEPT");
  unsetenv("MOJOUP_RUNNER_SECRET");
}

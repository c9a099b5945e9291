#include "mojoup/internal/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <string>

#include "../support/signal_state.h"

namespace mojoup::internal {
namespace {

using Clock = std::chrono::steady_clock;

// Runs `argv` with output captured and `environment` as given.
ChildExit RunCaptured(std::vector<std::string> argv, std::vector<std::string> environment = {}) {
  SpawnOptions options;
  options.argv = std::move(argv);
  options.environment = std::move(environment);
  options.out = Stream::Capture();
  options.err = Stream::Capture();
  auto child = Spawn(options);
  REQUIRE(child.ok());
  return child->Wait(Clock::now() + std::chrono::seconds(10));
}

TEST_CASE("a child's environment is exactly the one given", "[spawn]") {
  ::setenv("MOJOUP_SPAWN_TEST_PARENT", "parent", 1);
  ChildExit done = RunCaptured({"env"}, {"A=1", "B=two words", "EMPTY="});
  CHECK(done.Succeeded());
  CHECK(done.out == "A=1\nB=two words\nEMPTY=\n");
  // The parent's own environment is unchanged.
  CHECK(std::getenv("A") == nullptr);
  CHECK(std::string(std::getenv("MOJOUP_SPAWN_TEST_PARENT")) == "parent");

  ChildExit none = RunCaptured({"env"});
  CHECK(none.Succeeded());
  CHECK(none.out.empty());
  ::unsetenv("MOJOUP_SPAWN_TEST_PARENT");
}

TEST_CASE("CurrentEnvironment replaces the overridden names and keeps the rest", "[spawn]") {
  ::setenv("MOJOUP_SPAWN_TEST_KEEP", "kept", 1);
  ::setenv("MOJOUP_SPAWN_TEST_SWAP", "old", 1);
  std::vector<std::string> environment = CurrentEnvironment({"MOJOUP_SPAWN_TEST_SWAP=new"});
  ChildExit done = RunCaptured(
      {"sh", "-c", "echo \"$MOJOUP_SPAWN_TEST_KEEP $MOJOUP_SPAWN_TEST_SWAP\""}, environment);
  CHECK(done.out == "kept new\n");
  CHECK(std::string(std::getenv("MOJOUP_SPAWN_TEST_SWAP")) == "old");
  ::unsetenv("MOJOUP_SPAWN_TEST_KEEP");
  ::unsetenv("MOJOUP_SPAWN_TEST_SWAP");
}

TEST_CASE("descriptors not passed are closed in the child, kept ones are placed", "[spawn]") {
  // Open without close-on-exec, as a careless caller might leave one.
  const int leaked = ::fcntl(0, F_DUPFD, 20);
  REQUIRE(leaked >= 20);
  const int kept_source = ::fcntl(0, F_DUPFD, 30);
  REQUIRE(kept_source >= 30);
  SpawnOptions options;
  options.argv = {"sh", "-c",
                  "for fd in " + std::to_string(leaked) +
                      " 3 4 5; do if [ -e /proc/self/fd/$fd ]; then echo open; "
                      "else echo closed; fi; done"};
  options.out = Stream::Capture();
  options.keep = {{kept_source, 5}};
  auto child = Spawn(options);
  REQUIRE(child.ok());
  ChildExit done = child->Wait(Clock::now() + std::chrono::seconds(10));
  ::close(leaked);
  ::close(kept_source);
  CHECK(done.Succeeded());
  CHECK(done.out == "closed\nclosed\nclosed\nopen\n");
}

TEST_CASE("the deadline kills a child that runs on, promptly", "[spawn]") {
  SpawnOptions options;
  options.argv = {"sleep", "100"};
  auto child = Spawn(options);
  REQUIRE(child.ok());
  const auto start = Clock::now();
  ChildExit done = child->Wait(start + std::chrono::milliseconds(200));
  const auto took = Clock::now() - start;
  CHECK(done.timed_out);
  CHECK(done.signal == SIGKILL);
  CHECK_FALSE(done.Succeeded());
  CHECK(took >= std::chrono::milliseconds(200));
  CHECK(took < std::chrono::seconds(2));
}

TEST_CASE("the deadline kills the child's group, which holds its output open", "[spawn]") {
  SpawnOptions options;
  // The grandchild keeps stdout open after the shell is killed.
  options.argv = {"sh", "-c", "echo started; sleep 100 & wait"};
  options.out = Stream::Capture();
  options.group = SpawnOptions::Group::kGroup;
  auto child = Spawn(options);
  REQUIRE(child.ok());
  const auto start = Clock::now();
  ChildExit done = child->Wait(start + std::chrono::milliseconds(300));
  CHECK(done.timed_out);
  CHECK(done.out == "started\n");
  CHECK(Clock::now() - start < std::chrono::seconds(2));
}

TEST_CASE("captured output is bounded and says it was cut", "[spawn]") {
  SpawnOptions options;
  options.argv = {"head", "-c", "100000", "/dev/zero"};
  options.out = Stream::Capture();
  auto child = Spawn(options);
  REQUIRE(child.ok());
  ChildExit done = child->Wait(Clock::now() + std::chrono::seconds(10), 1000);
  // The rest was read and dropped: the child was not stopped by a full pipe.
  CHECK(done.Succeeded());
  CHECK(done.out.size() == 1000);
  CHECK(done.out_truncated);

  ChildExit small = RunCaptured({"sh", "-c", "printf out; printf err >&2"});
  CHECK(small.out == "out");
  CHECK(small.err == "err");
  CHECK_FALSE(small.out_truncated);
  CHECK_FALSE(small.err_truncated);
}

TEST_CASE("exit codes and signals are reported", "[spawn]") {
  ChildExit three = RunCaptured({"sh", "-c", "exit 3"});
  CHECK(three.Exited());
  CHECK(three.exit_code == 3);
  CHECK(three.ShellCode() == 3);

  ChildExit killed = RunCaptured({"sh", "-c", "kill -TERM $$"});
  CHECK_FALSE(killed.Exited());
  CHECK_FALSE(killed.timed_out);
  CHECK(killed.signal == SIGTERM);
  CHECK(killed.ShellCode() == 128 + SIGTERM);

  // Without a deadline or captures, Wait only reaps.
  SpawnOptions options;
  options.argv = {"sh", "-c", "exit 7"};
  auto child = Spawn(options);
  REQUIRE(child.ok());
  CHECK(child->Wait().exit_code == 7);
}

TEST_CASE("a signal sent to the child reaches it", "[spawn]") {
  SpawnOptions options;
  options.argv = {"sleep", "100"};
  auto child = Spawn(options);
  REQUIRE(child.ok());
  child->Signal(SIGINT);
  ChildExit done = child->Wait(Clock::now() + std::chrono::seconds(10));
  CHECK_FALSE(done.timed_out);
  CHECK(done.signal == SIGINT);
}

TEST_CASE("a missing program is a clear error", "[spawn]") {
  SpawnOptions options;
  options.argv = {"mojoup-no-such-program", "x"};
  auto child = Spawn(options);
  REQUIRE_FALSE(child.ok());
  CHECK(absl::IsNotFound(child.status()));
  CHECK(child.status().message() == "cannot run mojoup-no-such-program: No such file or directory");
  CHECK(SpawnErrno(child.status()) == ENOENT);

  options.argv = {"/nonexistent/mojoup"};
  child = Spawn(options);
  REQUIRE_FALSE(child.ok());
  CHECK(child.status().message() == "cannot run /nonexistent/mojoup: No such file or directory");

  // A directory is not a program.
  options.argv = {"/"};
  child = Spawn(options);
  REQUIRE_FALSE(child.ok());
  CHECK(absl::IsFailedPrecondition(child.status()));
  CHECK(SpawnErrno(child.status()) == EACCES);
  CHECK(SpawnExecFailed(child.status()));
}

TEST_CASE("a failed exec is told apart from a failed set-up", "[spawn]") {
  SpawnOptions options;
  options.argv = {"mojoup-no-such-program"};
  auto child = Spawn(options);
  REQUIRE_FALSE(child.ok());
  CHECK(SpawnExecFailed(child.status()));

  // The program exists; the directory it was to start in does not.
  options.argv = {"true"};
  options.workdir = "/nonexistent-mojoup";
  child = Spawn(options);
  REQUIRE_FALSE(child.ok());
  CHECK(absl::IsFailedPrecondition(child.status()));
  CHECK(SpawnErrno(child.status()) == ENOENT);
  CHECK_FALSE(SpawnExecFailed(child.status()));
  CHECK_FALSE(SpawnExecFailed(absl::NotFoundError("cannot run x: No such file or directory")));
}

TEST_CASE("the child starts with no signal blocked and the named ones at their default",
          "[spawn]") {
  SpawnOptions options;
  options.argv = {"cat", "/proc/self/status"};
  options.out = Stream::Capture();
  options.default_signals = {SIGPIPE};
  auto child = [&options] {
    // This process blocks one signal and ignores two; an ignored signal
    // stays ignored across exec unless it is named.
    test::SignalState state({SIGUSR1}, {SIGUSR2, SIGPIPE});
    return Spawn(options);
  }();
  REQUIRE(child.ok());
  ChildExit done = child->Wait(Clock::now() + std::chrono::seconds(10));
  REQUIRE(done.Succeeded());
  CHECK(test::SignalMask(done.out, "SigBlk") == 0ULL);
  const auto ignored = test::SignalMask(done.out, "SigIgn");
  REQUIRE(ignored.has_value());
  CHECK(test::HasSignal(*ignored, SIGUSR2));
  CHECK_FALSE(test::HasSignal(*ignored, SIGPIPE));
}

TEST_CASE("the working directory, argv[0] and stdin are the ones given", "[spawn]") {
  SpawnOptions options;
  options.argv = {"pwd"};
  options.workdir = "/usr";
  options.out = Stream::Capture();
  auto child = Spawn(options);
  REQUIRE(child.ok());
  CHECK(child->Wait().out == "/usr\n");

  options.workdir = "/nonexistent-mojoup";
  child = Spawn(options);
  REQUIRE_FALSE(child.ok());
  CHECK(child.status().message() ==
        "cannot run pwd: cannot enter /nonexistent-mojoup: No such file or directory");

  SpawnOptions named;
  named.program = "/bin/sh";
  named.argv = {"custom-name", "-c", "echo $0; cat"};
  named.in = Stream::Capture();
  named.out = Stream::Capture();
  child = Spawn(named);
  REQUIRE(child.ok());
  {
    Fd input = child->TakeStdin();
    REQUIRE(input.ok());
    REQUIRE(::write(input.get(), "hello", 5) == 5);
  }
  CHECK(child->Wait(Clock::now() + std::chrono::seconds(10)).out == "custom-name\nhello");
}

TEST_CASE("bad options are refused before anything starts", "[spawn]") {
  SpawnOptions options;
  CHECK(absl::IsInvalidArgument(Spawn(options).status()));
  options.argv = {"env"};
  options.environment = {"NOEQUALS"};
  auto child = Spawn(options);
  REQUIRE_FALSE(child.ok());
  CHECK(child.status().message() ==
        "cannot run env: its environment entry \"NOEQUALS\" is not NAME=VALUE");
  options.environment = {};
  options.keep = {{0, 1}};
  CHECK(absl::IsInvalidArgument(Spawn(options).status()));
}

}  // namespace
}  // namespace mojoup::internal

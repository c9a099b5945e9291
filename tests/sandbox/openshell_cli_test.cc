// The session's own `openshell sandbox exec`, on a stand-in CLI (a script):
// the caller's stdio, the signals the command must get, its exit code, and
// a CLI that is not there.
#include "runtime/openshell/openshell_cli.h"

#include <fcntl.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <string>

#include "../support/signal_state.h"
#include "../support/test_support.h"
#include "mojoup/internal/fd.h"

using mojoup::internal::Fd;
using mojoup::sandbox::OpenShellBackendOptions;
using mojoup::sandbox::OpenShellCli;
using mojoup::sandbox::Stdio;
using mojoup::test::HasSignal;
using mojoup::test::SignalMask;
using mojoup::test::Slurp;
using mojoup::test::TempDir;

TEST_CASE("openshell exec runs the CLI on the caller's stdio with the session's signals",
          "[openshell]") {
  TempDir dir;
  // Says its arguments, passes its input on, shows its signals, exits 7.
  const std::string cli =
      dir.Write("openshell",
                "#!/bin/sh\necho \"$*\"; cat; grep -E '^Sig(Blk|Ign)' /proc/$$/status >&2\n"
                "exit 7\n");
  REQUIRE(::chmod(cli.c_str(), 0755) == 0);
  dir.Write("in", "typed\n");
  Fd in(::open((dir / "in").c_str(), O_RDONLY | O_CLOEXEC));
  Fd out(::open((dir / "out").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  Fd err(::open((dir / "err").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  REQUIRE((in.ok() && out.ok() && err.ok()));
  Stdio stdio;
  stdio.in = in.get();
  stdio.out = out.get();
  stdio.err = err.get();

  OpenShellBackendOptions options;
  options.path = cli;
  OpenShellCli openshell(options);
  auto code = [&] {
    // The session's signals are blocked, and some ignored, where it runs.
    mojoup::test::SignalState state({SIGINT}, {SIGPIPE, SIGUSR2});
    return openshell.Exec("box", "/work", {{"A", "1"}}, {"make", "test"}, stdio);
  }();

  REQUIRE(code.ok());
  CHECK(*code == 7);
  const std::string said = Slurp(dir / "out");
  CHECK_THAT(said, Catch::Matchers::StartsWith(
                       "sandbox exec -n box --no-tty --workdir /work --env A=1 -- /bin/sh -c "));
  CHECK_THAT(said, Catch::Matchers::EndsWith(" sh make test\ntyped\n"));
  const std::string signals = Slurp(dir / "err");
  CHECK(SignalMask(signals, "SigBlk") == 0ULL);
  const auto ignored = SignalMask(signals, "SigIgn");
  REQUIRE(ignored.has_value());
  CHECK_FALSE(HasSignal(*ignored, SIGPIPE));  // the session's default
  CHECK(HasSignal(*ignored, SIGUSR2));        // left as it was
  CHECK(openshell.running() == 0);

  // No stdio at all: /dev/null, and the exit code still comes through.
  Stdio none;
  none.in = none.out = none.err = -1;
  code = openshell.Exec("box", "/work", {}, {"true"}, none);
  REQUIRE(code.ok());
  CHECK(*code == 7);
}

TEST_CASE("openshell exec of a CLI that is not there says so", "[openshell]") {
  OpenShellBackendOptions options;
  options.path = "/nonexistent/openshell";
  OpenShellCli openshell(options);
  auto code = openshell.Exec("box", "/work", {}, {"true"}, Stdio{});
  REQUIRE_FALSE(code.ok());
  CHECK(absl::IsUnavailable(code.status()));
  CHECK(code.status().message() == "cannot run /nonexistent/openshell: No such file or directory");
}

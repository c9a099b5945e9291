// The built mojoup-sandbox-init (main.cc) end to end.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "../../support/test_support.h"
#include "supervisor_test_support.h"

using namespace mojoup::supervisor;
using Catch::Matchers::Contains;
using mojoup::test::BinDir;
using mojoup::test::RunWithEnv;
using mojoup::test::TempDir;
using namespace mojoup::supervisor::test;

TEST_CASE("supervisor: mojoup-sandbox-init end to end", "[supervisor][e2e]") {
  if (std::string reason = LandlockSkipReason(); !reason.empty()) {
    RequireLandlockRefusal(reason);
    return;
  }
  const std::string init = BinDir() + "/mojoup-sandbox-init";
  REQUIRE(Exists(init));
  TempDir allowed;
  TempDir other;

  SECTION("the command runs confined and its exit status comes back") {
    auto run = RunWithEnv({}, {init, "--write", allowed.path(), "--", "/bin/sh", "-c",
                               "touch " + (allowed / "ok") + " && ! touch " + (other / "no") +
                                   " && echo quiet > /dev/null"});
    INFO(run.result.err);
    CHECK(run.result.outcome == mojoup::probe::CommandResult::Outcome::kExited);
    CHECK(run.result.exit_code == 0);
    CHECK(Exists(allowed / "ok"));
    CHECK_FALSE(Exists(other / "no"));

    run = RunWithEnv({}, {init, "--write=" + allowed.path(), "/bin/sh", "-c", "exit 7"});
    CHECK(run.result.exit_code == 7);
  }
  SECTION("a --write directory that does not exist refuses to run the command") {
    auto run = RunWithEnv({}, {init, "--write", allowed / "missing", "--", "/bin/sh", "-c",
                               "touch " + (allowed / "ran")});
    CHECK(run.result.exit_code == 126);
    CHECK_THAT(run.result.err, Contains("mojoup-sandbox-init: "));
    CHECK_THAT(run.result.err, Contains(allowed / "missing"));
    CHECK_FALSE(Exists(allowed / "ran"));
  }
  SECTION("a command that is not there exits 127, one that cannot run 126") {
    auto run = RunWithEnv({}, {init, "--write", allowed.path(), "--", "mojoup-no-such-command"});
    CHECK(run.result.exit_code == 127);
    CHECK_THAT(run.result.err, Contains("mojoup-sandbox-init: cannot run mojoup-no-such-command: "
                                        "No such file or directory"));
    run = RunWithEnv({}, {init, "--", allowed.path()});
    CHECK(run.result.exit_code == 126);
    CHECK_THAT(run.result.err, Contains("cannot run " + allowed.path()));
  }
  SECTION("usage mistakes refuse to run the command") {
    auto run = RunWithEnv({}, {init, "--write", allowed.path()});
    CHECK(run.result.exit_code == 126);
    CHECK_THAT(run.result.err, Contains("no command"));
    run = RunWithEnv({}, {init, "--no-such-option", "--", "/bin/true"});
    CHECK(run.result.exit_code == 126);
    CHECK_THAT(run.result.err, Contains("unknown option --no-such-option"));
    run = RunWithEnv({}, {init, "--listen", "127.0.0.1:1", "--", "/bin/true"});
    CHECK(run.result.exit_code == 126);
    run = RunWithEnv({}, {init, "--help"});
    CHECK(run.result.exit_code == 0);
    CHECK_THAT(run.result.out, Contains("Usage: mojoup-sandbox-init"));
  }
  SECTION("the command reaches the unix socket through the TCP bridge") {
    if (!Exists("/bin/bash")) MOJOUP_SKIP("no /bin/bash for its /dev/tcp");
    UnixEchoServer echo(allowed / "proxy.sock");
    // A free port, found by letting the kernel pick one and giving it back.
    int probe = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    REQUIRE(bind(probe, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    socklen_t length = sizeof address;
    getsockname(probe, reinterpret_cast<sockaddr*>(&address), &length);
    std::string port = std::to_string(ntohs(address.sin_port));
    close(probe);

    auto run = RunWithEnv(
        {}, {init, "--proxy-socket", allowed / "proxy.sock", "--listen", "127.0.0.1:" + port,
             "--write", allowed.path(), "--", "/bin/bash", "-c",
             "exec 3<>/dev/tcp/127.0.0.1/" + port + " && echo ping >&3 && head -n1 <&3"});
    INFO(run.result.err);
    CHECK(run.result.exit_code == 0);
    CHECK(run.result.out == "ping\n");
  }
}

// What the session's OpenShell exec sends, and what it stages, when the
// command, its environment or its working directory would pass the
// gateway's limits (v0.0.111 crates/openshell-server/src/grpc/validation.rs):
// each request is checked against those limits, and staged requests are
// played here as the sandbox plays them (the staging exec's line with the
// script on stdin, then the command's line, each by `/bin/bash -c`), so the
// command is seen to get every byte.
#include "runtime/openshell/openshell_exec.h"

#include <fcntl.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "../support/test_support.h"
#include "mojoup/internal/fd.h"
#include "mojoup/internal/spawn.h"

using mojoup::internal::Fd;
using mojoup::sandbox::kOpenShellCommandPidFile;
using mojoup::sandbox::kOpenShellMaxExecArg;
using mojoup::sandbox::kOpenShellMaxExecArgs;
using mojoup::sandbox::kOpenShellMaxExecLine;
using mojoup::sandbox::kOpenShellMaxExecWorkdir;
using mojoup::sandbox::OpenShellExecLine;
using mojoup::sandbox::OpenShellExecRequest;
using mojoup::sandbox::OpenShellStageCommand;
using mojoup::sandbox::PlanOpenShellExec;
using mojoup::test::Slurp;
using mojoup::test::TempDir;
using Environment = std::map<std::string, std::string>;

namespace {

// Whether the gateway takes the request: validate_exec_request_fields, and
// a line bash can be given.
void CheckAdmitted(const OpenShellExecRequest& request) {
  CHECK(request.command.size() <= kOpenShellMaxExecArgs);
  for (const std::string& word : request.command) CHECK(word.size() <= kOpenShellMaxExecArg);
  for (const auto& [name, value] : request.environment) {
    CHECK(value.size() <= kOpenShellMaxExecArg);
    CHECK(value.find_first_of("\r\n") == std::string::npos);
  }
  CHECK(request.workdir.size() <= kOpenShellMaxExecWorkdir);
  CHECK(request.workdir.find_first_of("\r\n") == std::string::npos);
  CHECK(OpenShellExecLine(request.workdir, request.environment, request.command).size() <=
        kOpenShellMaxExecLine);
}

// Runs `line` as the sandbox's shell would, with `input` as its stdin: its
// exit code.
int RunLine(const TempDir& dir, const std::string& line, const std::string& input) {
  const std::string in = dir.Write("stdin", input);
  Fd fd(::open(in.c_str(), O_RDONLY | O_CLOEXEC));
  mojoup::internal::SpawnOptions options;
  options.argv = {"/bin/bash", "-c", line};
  options.environment = {"PATH=/usr/bin:/bin"};
  options.in = mojoup::internal::Stream::Descriptor(fd.get());
  options.out = mojoup::internal::Stream::Capture();
  options.err = mojoup::internal::Stream::Capture();
  auto child = mojoup::internal::Spawn(options);
  REQUIRE(child.ok());
  auto done = child->Wait(std::chrono::steady_clock::now() + std::chrono::seconds(30));
  INFO(done.err);
  return done.ShellCode();
}

// Plays the staging exec (when something is staged) and the command's exec
// of `request` here, the pid file moved into `dir`.
void Play(const TempDir& dir, const std::string& stage_dir, const OpenShellExecRequest& request) {
  if (!request.staged.empty()) {
    REQUIRE(RunLine(dir, OpenShellExecLine("", {}, OpenShellStageCommand(stage_dir)),
                    request.staged) == 0);
  }
  std::string line = OpenShellExecLine(request.workdir, request.environment, request.command);
  const std::string pid_file(kOpenShellCommandPidFile);
  for (auto at = line.find(pid_file); at != std::string::npos; at = line.find(pid_file)) {
    line.replace(at, pid_file.size(), dir / "pid");
  }
  REQUIRE(RunLine(dir, line, "") == 0);
  CHECK(Slurp(dir / "pid").size() > 1);  // the command left its pid
}

// A command that writes its first argument, $BIG and its working
// directory to files in `dir`, and then its argument count.
std::vector<std::string> Reporter(const TempDir& dir, const std::string& argument) {
  return {"/bin/sh",
          "-c",
          "printf %s \"$1\" > \"$2\"; printf %s \"$BIG\" > \"$3\"; pwd > \"$4\"; echo $# > \"$5\"",
          "sh",
          argument,
          dir / "argument",
          dir / "big",
          dir / "cwd",
          dir / "count"};
}

}  // namespace

TEST_CASE("openshell exec: a command within the gateway's limits goes as it is", "[openshell]") {
  auto request = PlanOpenShellExec("/work", {{"A", "1"}}, {"make", "test"}, "/tmp/.stage");
  REQUIRE(request.ok());
  CHECK(request->staged.empty());
  CHECK(request->workdir == "/work");
  CHECK(request->environment == Environment{{"A", "1"}});
  REQUIRE(request->command.size() == 6);
  CHECK(request->command[0] == "/bin/sh");
  CHECK(request->command[2].find("/tmp/.stage") == std::string::npos);
  CHECK(request->command[4] == "make");
  CHECK(request->command[5] == "test");
  CheckAdmitted(*request);
}

TEST_CASE("openshell exec: what the gateway refuses is staged and arrives whole", "[openshell]") {
  TempDir dir;
  const std::string stage_dir = dir / "stage";
  std::string argument(40 * 1024, 'a');
  argument += "'\"$x\\\n\n";
  std::string big = "first line\r\nsecond 'line'\n";
  big += std::string(33 * 1024, 'b') + "\n\n";
  const std::string workdir = dir.path();
  auto request = PlanOpenShellExec(workdir, {{"BIG", big}, {"SMALL", "s"}}, Reporter(dir, argument),
                                   stage_dir);
  REQUIRE(request.ok());
  CHECK_FALSE(request->staged.empty());
  CHECK(request->environment == Environment{{"SMALL", "s"}});
  CHECK(request->command.size() == 4);  // the wrapper alone: the command is staged
  CheckAdmitted(*request);
  Play(dir, stage_dir, *request);
  CHECK(Slurp(dir / "argument") == argument);
  CHECK(Slurp(dir / "big") == big);
  CHECK(Slurp(dir / "cwd") == workdir + "\n");
  CHECK(Slurp(dir / "count") == "5\n");
  CHECK_FALSE(std::filesystem::exists(stage_dir));  // read, then removed
}

TEST_CASE("openshell exec: a working directory with a line break is entered from the stage",
          "[openshell]") {
  TempDir dir;
  const std::string workdir = dir / "line\nbreak";
  std::filesystem::create_directory(workdir);
  auto request = PlanOpenShellExec(workdir, {}, Reporter(dir, "x"), dir / "stage");
  REQUIRE(request.ok());
  CHECK(request->workdir.empty());
  CHECK(request->command.size() == 13);  // the wrapper and the command: it fits
  CheckAdmitted(*request);
  Play(dir, dir / "stage", *request);
  CHECK(Slurp(dir / "cwd") == workdir + "\n");
  CHECK(Slurp(dir / "argument") == "x");
}

TEST_CASE("openshell exec: too many arguments, or a line bash cannot take, are staged",
          "[openshell]") {
  TempDir dir;
  SECTION("2000 arguments") {
    std::vector<std::string> command = Reporter(dir, "first");
    command.resize(2000, "more");
    auto request = PlanOpenShellExec(dir.path(), {}, command, dir / "stage");
    REQUIRE(request.ok());
    CHECK(request->command.size() == 4);
    CheckAdmitted(*request);
    Play(dir, dir / "stage", *request);
    CHECK(Slurp(dir / "count") == "1996\n");
    CHECK(Slurp(dir / "argument") == "first");
  }
  SECTION("eight variables of 30 KiB, each within the limit, 240 KiB together") {
    Environment environment;
    for (char name = 'C'; name < 'K'; ++name) {
      environment[std::string("V") + name] = std::string(30 * 1024, name);
    }
    environment["BIG"] = "in the line";
    auto request = PlanOpenShellExec(dir.path(), environment, Reporter(dir, "y"), dir / "stage");
    REQUIRE(request.ok());
    CHECK(request->environment.count("BIG") == 1);
    CHECK(request->environment.size() < environment.size());
    CheckAdmitted(*request);
    Play(dir, dir / "stage", *request);
    CHECK(Slurp(dir / "big") == "in the line");
  }
}

TEST_CASE("openshell exec: what cannot be met is refused in one sentence", "[openshell]") {
  SECTION("a working directory over 4096 bytes") {
    auto request = PlanOpenShellExec("/" + std::string(4096, 'w'), {}, {"true"}, "/tmp/.s");
    REQUIRE(absl::IsInvalidArgument(request.status()));
    CHECK(request.status().message() ==
          "the working directory is 4097 bytes long, and OpenShell's exec takes one of at most "
          "4096");
  }
  SECTION("more than 4 MiB to stage") {
    std::vector<std::string> command(200, std::string(30 * 1024, 'x'));
    auto request = PlanOpenShellExec("/work", {}, command, "/tmp/.s");
    REQUIRE(absl::IsInvalidArgument(request.status()));
    CHECK_THAT(std::string(request.status().message()),
               Catch::Matchers::StartsWith("the command and its environment need ") &&
                   Catch::Matchers::Contains("more than the 4194304 its exec can carry"));
  }
  SECTION("a variable name the CLI refuses") {
    for (const std::string name : {"OPENSHELL_X", "1A", "A-B"}) {
      auto request = PlanOpenShellExec("/work", {{name, "v"}}, {"true"}, "/tmp/.s");
      REQUIRE(absl::IsInvalidArgument(request.status()));
      CHECK_THAT(std::string(request.status().message()),
                 Catch::Matchers::Contains("'" + name + "'"));
    }
  }
}

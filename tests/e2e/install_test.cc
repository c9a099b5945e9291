// `cmake --install` gives a package other programs build on: the examples/
// project builds against it through the CMake package and through
// pkg-config, without setting a C++ standard of its own, and its programs
// run: doctor_embed (either verdict), decide on a repository of its own,
// harness, an integration test on the installed test doubles alone, and
// egress_proxy, the credential proxy's own library alone.
// run_session runs a real session on the native runtime when a dockerd answers.
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "../support/background_process.h"
#include "../support/sandbox_image.h"
#include "../support/test_support.h"

using Catch::Matchers::Contains;
using mojoup::test::Run;
using mojoup::test::RunWithEnv;
using mojoup::test::TempDir;

namespace {

constexpr auto kBuild = std::chrono::minutes(10);
const char* const kExamples[] = {"doctor_embed", "decide",       "run_session",
                                 "harness",      "egress_proxy", "service_sessions"};

void RequireOk(const Run& run) {
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.Succeeded());
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string Install(const TempDir& dir) {
  const std::string prefix = dir / "prefix";
  RequireOk(RunWithEnv({}, {"cmake", "--install", MOJOUP_BINARY_DIR, "--prefix", prefix}, kBuild));
  for (const char* file : {"/include/mojoup/mojoup.h",
                           "/include/mojoup/version.h",
                           "/include/mojoup/probe/probe.h",
                           "/include/mojoup/sandbox/node.h",
                           "/include/mojoup/probe/testing/mock_kernel.h",
                           "/include/mojoup/sandbox/testing/in_memory_backend.h",
                           "/lib/libmojoup_sandbox.a",
                           "/lib/libmojoup_sandbox_testing.a",
                           "/lib/libmojoup_credproxy.a",
                           "/include/mojoup/credproxy/proxy.h",
                           "/lib/pkgconfig/mojoup_credproxy.pc",
                           "/include/mojoup/service/client.h",
                           "/include/mojoup/sandbox/run_request.h",
                           "/lib/libmojoup_service_client.a",
                           "/lib/pkgconfig/mojoup_service_client.pc",
                           "/bin/mojoup-node",
                           "/lib/pkgconfig/mojoup_sandbox.pc",
                           "/lib/pkgconfig/mojoup_sandbox_testing.pc",
                           "/lib/cmake/mojoup_sandbox/mojoup_sandboxConfig.cmake",
                           "/libexec/mojoup/mojoup-sandbox-init",
                           "/libexec/mojoup/fake-openshell",
                           "/libexec/mojoup/fake-dockerd"}) {
    INFO(file);
    REQUIRE(access((prefix + file).c_str(), F_OK) == 0);
  }
  // Nothing private leaks into the installed headers.
  for (const char* dir_name : {"/include/mojoup/internal", "/include/rapidjson"}) {
    INFO(dir_name);
    REQUIRE(access((prefix + dir_name).c_str(), F_OK) != 0);
  }
  return prefix;
}

// Runs the built examples in `bin_dir` on a node of their own (config, state
// and repository in `dir`), with no real component needed.
void RunExamples(const TempDir& dir, const std::string& prefix, const std::string& bin_dir) {
  const std::vector<std::string> env = {"MOJOUP_NODE_CONFIG=" + (dir / "node.json"),
                                        "MOJOUP_STATE_DIR=" + (dir / "state"), "NO_COLOR="};
  dir.Write("node.json", R"({"node.sandbox.allowed_users": "*"})");

  // The verdict on the first line, whatever it is.
  Run doctor = RunWithEnv(env, {bin_dir + "/doctor_embed"}, std::chrono::seconds(60));
  {
    INFO(doctor.result.out << doctor.result.err);
    REQUIRE((doctor.result.exit_code == 0 || doctor.result.exit_code == 1));
    const std::string first = FirstLine(doctor.result.out);
    REQUIRE((first == "Agents run in a sandbox." ||
             first.rfind("This machine cannot sandbox agents: ", 0) == 0));
  }

  // A policy that requires a sandbox: sandboxed when this machine can run
  // one, refused when it cannot; never unsandboxed.
  mojoup::test::MakeGitDir(dir / "repo/.git");
  dir.Write("repo/.mojoup/policy.json", R"({"agents": {"sandbox": "required"}})");
  const passwd* pw = ::getpwuid(::getuid());
  REQUIRE(pw != nullptr);
  Run decide =
      RunWithEnv(env, {bin_dir + "/decide", dir / "repo", pw->pw_name}, std::chrono::seconds(60));
  {
    INFO(decide.result.out << decide.result.err);
    REQUIRE(decide.result.Succeeded());
    const std::string first = FirstLine(decide.result.out);
    REQUIRE((first.rfind("sandboxed: ", 0) == 0 || first.rfind("refused: ", 0) == 0));
  }

  Run harness = RunWithEnv({}, {bin_dir + "/harness"}, std::chrono::seconds(60));
  RequireOk(harness);

  // The proxy library alone: one host allowed, another refused.
  Run proxy = RunWithEnv({}, {bin_dir + "/egress_proxy"}, std::chrono::seconds(60));
  RequireOk(proxy);
  REQUIRE(proxy.result.out == "allowed.test: 200\nother.test: 403\n");

  // A real session: the native runtime on this machine's dockerd, the
  // supervisor from the installed package.
  if (std::string why = mojoup::test::WhyNoSandboxDocker(); !why.empty()) {
    MOJOUP_SKIP("run_session needs a real dockerd: " + why);
  }
  dir.Write("node.json", std::string(R"({"node.sandbox.allowed_users": "*",
      "node.sandbox.runtime": "native", "node.sandbox.image": ")") +
                             mojoup::test::kSandboxImage + "\"}");
  std::vector<std::string> session_env = env;
  session_env.push_back("MOJOUP_SANDBOX_INIT=" + prefix + "/libexec/mojoup/mojoup-sandbox-init");
  Run session =
      RunWithEnv(session_env,
                 {bin_dir + "/run_session", dir / "repo", "sh", "-c",
                  "test \"$(pwd)\" = \"$0\" && touch made-inside && exit 7", dir / "repo"},
                 std::chrono::seconds(120));
  INFO(session.result.out << session.result.err);
  REQUIRE(session.result.exit_code == 7);
  REQUIRE_THAT(session.result.err, Contains("requires a sandbox"));
  REQUIRE(access((dir / "repo/made-inside").c_str(), F_OK) == 0);

  // Two sessions at once through the installed service.
  std::vector<std::string> service_env = env;
  service_env.push_back("MOJOUP_SERVICE_SOCKET=" + (dir / "state/node.sock"));
  mojoup::test::BackgroundProcess service(service_env, {prefix + "/bin/mojoup-node", "serve"});
  for (int i = 0; i < 100 && access((dir / "state/node.sock").c_str(), F_OK) != 0; ++i) {
    usleep(100000);
  }
  Run two = RunWithEnv(service_env, {bin_dir + "/service_sessions", dir / "repo"},
                       std::chrono::seconds(120));
  INFO(two.result.out << two.result.err << service.Stderr());
  REQUIRE(two.result.exit_code == 0);
  REQUIRE_THAT(two.result.out, Contains("first from") && Contains("second from"));
  const int status = service.Stop(std::chrono::seconds(30));
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);

  auto left = mojoup::test::ContainersLabelled("mojoup.state=" + (dir / "state"));
  REQUIRE(left.has_value());
  REQUIRE(left->empty());
}

}  // namespace

TEST_CASE("the examples build on the installed CMake package and run", "[install]") {
  TempDir dir;
  const std::string prefix = Install(dir);
  // No CMAKE_CXX_STANDARD: the exported targets carry C++20 themselves.
  RequireOk(
      RunWithEnv({},
                 {"cmake", "-S", MOJOUP_SOURCE_DIR "/examples", "-B", dir / "build", "-G", "Ninja",
                  "-DCMAKE_BUILD_TYPE=Debug", "-DCMAKE_PREFIX_PATH=" + prefix},
                 kBuild));
  RequireOk(RunWithEnv({}, {"cmake", "--build", dir / "build"}, kBuild));
  for (const char* example : kExamples) {
    INFO(example);
    REQUIRE(access((dir / "build/" + example).c_str(), X_OK) == 0);
  }
  RunExamples(dir, prefix, dir / "build");
}

TEST_CASE("the examples build with pkg-config and run", "[install]") {
  TempDir dir;
  const std::string prefix = Install(dir);
  const std::vector<std::string> env = {"PKG_CONFIG_PATH=" + prefix + "/lib/pkgconfig"};
  for (const char* example : kExamples) {
    const std::string name = example;
    const std::string package = name == "harness"            ? "mojoup_sandbox_testing"
                                : name == "egress_proxy"     ? "mojoup_credproxy"
                                : name == "service_sessions" ? "mojoup_service_client"
                                                             : "mojoup_sandbox";
    const bool alone = name == "egress_proxy" || name == "service_sessions";
    Run flags = RunWithEnv(env, {"pkg-config", "--cflags", "--libs", package});
    RequireOk(flags);
    REQUIRE_THAT(flags.result.out, Contains("-l" + (alone ? package : "mojoup_sandbox")));
    const std::string command = std::string("c++ -std=c++20 ") + MOJOUP_SOURCE_DIR + "/examples/" +
                                example + ".cc -o " + (dir / example) + " " +
                                FirstLine(flags.result.out);
    INFO(command);
    RequireOk(RunWithEnv({}, {"/bin/sh", "-c", command}, kBuild));
  }
  RunExamples(dir, prefix, dir.path());
}

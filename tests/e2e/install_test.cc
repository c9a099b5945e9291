// `cmake --install` gives a library other programs can link: through the CMake
// package and through pkg-config, each building the embedding example.
#include <catch2/catch.hpp>

#include "../support/test_support.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using mojoup::test::Run;
using mojoup::test::RunWithEnv;
using mojoup::test::TempDir;

namespace {

void RequireOk(const Run& run) {
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.Succeeded());
}

// The example prints the verdict on its first line, whatever the verdict is.
void RequireVerdict(const Run& run) {
  INFO(run.result.out << run.result.err);
  REQUIRE((run.result.exit_code == 0 || run.result.exit_code == 1));
  std::string first = run.result.out.substr(0, run.result.out.find('\n'));
  REQUIRE((first == "Agents run in a sandbox." ||
           first.rfind("This machine cannot sandbox agents: ", 0) == 0));
}

}  // namespace

TEST_CASE("the installed package builds the embedding example", "[install]") {
  TempDir dir;
  const std::string prefix = dir / "prefix";
  const auto minutes = std::chrono::minutes(5);
  RequireOk(RunWithEnv({}, {"cmake", "--install", MOJOUP_BINARY_DIR, "--prefix", prefix}, minutes));
  for (const char* file : {"/include/mojoup/probe/probe.h", "/lib/libmojoup_sandbox.a",
                           "/bin/mojoup-node", "/lib/pkgconfig/mojoup_sandbox.pc",
                           "/lib/cmake/mojoup_sandbox/mojoup_sandboxConfig.cmake"}) {
    INFO(file);
    REQUIRE(access((prefix + file).c_str(), F_OK) == 0);
  }

  SECTION("find_package(mojoup_sandbox CONFIG)") {
    dir.Write("consumer/CMakeLists.txt",
              "cmake_minimum_required(VERSION 3.25)\n"
              "project(consumer CXX)\n"
              "set(CMAKE_CXX_STANDARD 20)\n"
              "find_package(mojoup_sandbox CONFIG REQUIRED)\n"
              "add_executable(embed " MOJOUP_SOURCE_DIR
              "/examples/doctor_embed.cc)\n"
              "target_link_libraries(embed PRIVATE mojoup::mojoup_sandbox)\n");
    RequireOk(RunWithEnv({},
                         {"cmake", "-S", dir / "consumer", "-B", dir / "consumer/build", "-G",
                          "Ninja", "-DCMAKE_PREFIX_PATH=" + prefix},
                         minutes));
    RequireOk(RunWithEnv({}, {"cmake", "--build", dir / "consumer/build"}, minutes));
    RequireVerdict(RunWithEnv({}, {dir / "consumer/build/embed"}));
  }

  SECTION("pkg-config mojoup_sandbox") {
    Run flags = RunWithEnv({"PKG_CONFIG_PATH=" + prefix + "/lib/pkgconfig"},
                           {"pkg-config", "--cflags", "--libs", "mojoup_sandbox"});
    RequireOk(flags);
    REQUIRE_THAT(flags.result.out, Contains("-lmojoup_sandbox"));
    std::string command = "c++ " MOJOUP_SOURCE_DIR "/examples/doctor_embed.cc -o " +
                          (dir / "embed-pc") + " " +
                          flags.result.out.substr(0, flags.result.out.find('\n'));
    RequireOk(RunWithEnv({}, {"/bin/sh", "-c", command}, minutes));
    RequireVerdict(RunWithEnv({}, {dir / "embed-pc"}));
  }
}

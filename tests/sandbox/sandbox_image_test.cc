// BuildLocalSandboxImage, the installed helper that assembles the image a
// harness's real sessions run on, against the real dockerd.
#include "mojoup/sandbox/testing/sandbox_image.h"

#include <unistd.h>

#include <catch2/catch.hpp>

#include "../support/test_support.h"

using Catch::Matchers::Contains;
using mojoup::test::RunWithEnv;

TEST_CASE("BuildLocalSandboxImage builds a runnable image from this host's files", "[image]") {
  const std::string image = "mojoup-test-local-image:" + std::to_string(::getpid());
  absl::Status built = mojoup::sandbox::testing::BuildLocalSandboxImage(image);
  if (absl::IsFailedPrecondition(built)) MOJOUP_SKIP(built.message());
  INFO(built.message());
  REQUIRE(built.ok());

  auto run = RunWithEnv({},
                        {"docker", "run", "--rm", "--network", "none", image, "/bin/sh", "-c",
                         "curl --version | head -n 1; git --version; id -un; "
                         "test -s /etc/ssl/certs/ca-certificates.crt && echo ca"},
                        std::chrono::seconds(60));
  INFO(run.result.out << run.result.err);
  CHECK(run.result.Succeeded());
  CHECK_THAT(run.result.out,
             Contains("curl ") && Contains("git version") && Contains("root") && Contains("ca"));

  // The image is there now: a second call leaves it as it is.
  CHECK(mojoup::sandbox::testing::BuildLocalSandboxImage(image).ok());
  RunWithEnv({}, {"docker", "image", "rm", "-f", image}, std::chrono::seconds(60));
}

#include "mojoup/internal/docker_api_version.h"

#include <catch2/catch.hpp>
#include <string>

#include "mojoup/probe/minimums.h"

using mojoup::internal::kDockerApiPrefix;

TEST_CASE("every request names the oldest Engine API the probe accepts", "[docker_api_version]") {
  const mojoup::probe::SemVer minimum = mojoup::probe::kMinDockerApi;
  REQUIRE(std::string(kDockerApiPrefix) ==
          "/v" + std::to_string(minimum.major) + "." + std::to_string(minimum.minor));
}

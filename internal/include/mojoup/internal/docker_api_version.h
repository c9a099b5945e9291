// The Docker Engine API version every request names: the oldest the probe
// accepts (probe::kMinDockerApi, Docker 19.03), which has every field we send.
// A versioned path makes newer daemons answer as that version did.
//
//   api.Send(endpoint, "GET", std::string(mojoup::internal::kDockerApiPrefix) + "/info", ...);
#pragma once

#include <string_view>

namespace mojoup::internal {

inline constexpr int kDockerApiMajor = 1;
inline constexpr int kDockerApiMinor = 40;
// "/v1.40": the prefix of every versioned Engine API path.
inline constexpr std::string_view kDockerApiPrefix = "/v1.40";

namespace docker_api_detail {
constexpr int Number(std::string_view digits) {
  int value = 0;
  for (char c : digits) value = value * 10 + (c - '0');
  return value;
}
}  // namespace docker_api_detail
static_assert(kDockerApiPrefix.substr(0, 2) == "/v" &&
                  docker_api_detail::Number(kDockerApiPrefix.substr(2, kDockerApiPrefix.find('.') -
                                                                           2)) == kDockerApiMajor &&
                  docker_api_detail::Number(kDockerApiPrefix.substr(kDockerApiPrefix.find('.') +
                                                                    1)) == kDockerApiMinor,
              "the prefix and the numbers name one version");

}  // namespace mojoup::internal

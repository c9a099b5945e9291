// The Docker Engine API's `filters` query value for labels
// (`GET /containers/json`, `GET /networks`): a JSON object written by the
// codec and percent-encoded, so a label with a quote or a backslash is one
// label still.
//
//   "/containers/json?all=1&filters=" + DockerLabelFilters({"a=b"})
#pragma once

#include <string>
#include <vector>

namespace mojoup::internal {

// {"label":["a=b",…]}, percent-encoded: what has every one of `labels`
// ("name" or "name=value").
std::string DockerLabelFilters(const std::vector<std::string>& labels);

}  // namespace mojoup::internal

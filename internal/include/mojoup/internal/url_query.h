// A request target's query of whole numbers, as the node's small HTTP
// endpoints take them (the control socket's and the service's
// `?after=3&wait=2000`, the audit's `?since=5`):
//
//   auto numbers = mojoup::internal::ParseNumberQuery(query, {"after", "wait"});
//   if (!numbers.ok()) return Refuse400(numbers.status().message());
//   if (auto after = numbers->find("after"); after != numbers->end()) ...
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace mojoup::internal {

using NumberQuery = std::map<std::string, std::uint64_t, std::less<>>;

// The parameters of `names` present, each at most once with a decimal
// value below 10^18; other names are ignored. A repeated name, or a value
// that is not such a number, is InvalidArgument in one sentence naming it.
absl::StatusOr<NumberQuery> ParseNumberQuery(std::string_view query,
                                             std::initializer_list<std::string_view> names);

}  // namespace mojoup::internal

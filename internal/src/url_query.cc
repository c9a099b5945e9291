#include "mojoup/internal/url_query.h"

#include <algorithm>

#include "fmt/format.h"

namespace mojoup::internal {

absl::StatusOr<NumberQuery> ParseNumberQuery(std::string_view query,
                                             std::initializer_list<std::string_view> names) {
  constexpr std::size_t kMaxDigits = 18;
  NumberQuery numbers;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    const std::string_view name = pair.substr(0, eq);
    const std::string_view value =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    // Another name is not ours to judge (a console's cache-buster, say).
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    if (value.empty() || value.size() > kMaxDigits ||
        value.find_first_not_of("0123456789") != std::string_view::npos) {
      return absl::InvalidArgumentError(
          fmt::format("query parameter {} must be a whole number", name));
    }
    std::uint64_t number = 0;
    for (char digit : value) number = number * 10 + static_cast<std::uint64_t>(digit - '0');
    if (!numbers.emplace(std::string(name), number).second) {
      return absl::InvalidArgumentError(fmt::format("query parameter {} is given twice", name));
    }
  }
  return numbers;
}

}  // namespace mojoup::internal

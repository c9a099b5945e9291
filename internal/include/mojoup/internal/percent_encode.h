// Percent-encoding for a URL's query values and path segments (RFC 3986):
// Docker's `filters=` JSON, container and network names.
//
//   "/containers/json?filters=" + mojoup::internal::PercentEncode(filters_json)
#pragma once

#include <string>
#include <string_view>

namespace mojoup::internal {

// Every byte but the unreserved ones (ALPHA DIGIT - . _ ~) as %XX, uppercase.
std::string PercentEncode(std::string_view text);

}  // namespace mojoup::internal

#include "mojoup/internal/percent_encode.h"

#include <cctype>

#include "fmt/format.h"

namespace mojoup::internal {

std::string PercentEncode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace mojoup::internal

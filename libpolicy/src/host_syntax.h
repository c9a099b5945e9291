// Host-name syntax shared by the policy parser and the matcher.
#pragma once

#include <string_view>

namespace mojoup::policy::internal {

// A label the IPv4 number parser (inet_aton(3), which getaddrinfo uses for
// names) reads as a number: decimal or octal digits, or 0x and hex digits.
inline bool IsNumericLabel(std::string_view label) {
  auto digits = [](std::string_view text, bool hex) {
    for (char c : text) {
      const bool ok =
          (c >= '0' && c <= '9') || (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
      if (!ok) return false;
    }
    return true;
  };
  if (label.empty()) return false;
  if (label.size() >= 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X')) {
    return digits(label.substr(2), true);
  }
  return digits(label, false);
}

// True when every dot-separated label of `name` is numeric: "0.0.1",
// "127.1", "0x7f.1". No top-level domain is numeric (RFC 3696 section 2), so
// such a name is an IPv4 address in one of inet_aton's spellings, or nothing.
inline bool AllLabelsNumeric(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t start = 0; start <= name.size();) {
    std::size_t end = name.find('.', start);
    if (end == std::string_view::npos) end = name.size();
    if (!IsNumericLabel(name.substr(start, end - start))) return false;
    start = end + 1;
  }
  return true;
}

}  // namespace mojoup::policy::internal

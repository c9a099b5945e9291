#include "mojoup/internal/host_port.h"

#include <utility>

namespace mojoup::internal {

std::optional<HostPort> SplitHostPort(std::string_view text, std::uint16_t default_port,
                                      bool allow_zero) {
  std::string host;
  std::string_view rest;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = std::string(text.substr(0, close + 1));
    rest = text.substr(close + 1);
  } else {
    auto colon = text.find(':');
    host = std::string(text.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : text.substr(colon);
  }
  std::uint16_t port = default_port;
  if (!rest.empty()) {
    if (rest.front() != ':' || rest.size() < 2 || rest.size() > 6) return std::nullopt;
    unsigned long value = 0;
    for (char c : rest.substr(1)) {
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + static_cast<unsigned long>(c - '0');
    }
    if ((value == 0 && !allow_zero) || value > 65535) return std::nullopt;
    port = static_cast<std::uint16_t>(value);
  }
  return HostPort{std::move(host), port};
}

}  // namespace mojoup::internal

// HOST:PORT, parsed in one place for every library and the CLI. Internal:
// not installed, linked privately into the libraries that use it.
//
//   auto parsed = SplitHostPort("[fd00::7]:8080", 443);
//   // parsed->host == "[fd00::7]", parsed->port == 8080
//
// Syntax only: the host comes back as written (brackets kept, case and
// trailing dot untouched); whether it is a valid host name is the caller's
// question (policy::CanonicalHost).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mojoup::internal {

struct HostPort {
  std::string host;
  std::uint16_t port = 0;
};

// "host", "host:port", "[v6]" or "[v6]:port". A missing port is
// `default_port`; a present one is 1 to 5 digits, at most 65535, and not 0
// unless `allow_zero`. An IPv6 address needs its brackets: the first colon
// outside them ends the host. Nothing (malformed) for anything else; the
// host may be empty.
std::optional<HostPort> SplitHostPort(std::string_view text, std::uint16_t default_port,
                                      bool allow_zero = false);

}  // namespace mojoup::internal

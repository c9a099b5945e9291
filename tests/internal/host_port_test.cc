#include "mojoup/internal/host_port.h"

#include <catch2/catch.hpp>

using mojoup::internal::HostPort;
using mojoup::internal::SplitHostPort;

namespace {

bool Is(const std::optional<HostPort>& parsed, const std::string& host, std::uint16_t port) {
  return parsed && parsed->host == host && parsed->port == port;
}

}  // namespace

TEST_CASE("SplitHostPort: a name, with and without a port", "[host_port]") {
  REQUIRE(Is(SplitHostPort("api.github.com", 443), "api.github.com", 443));
  REQUIRE(Is(SplitHostPort("api.github.com:8443", 443), "api.github.com", 8443));
  REQUIRE(Is(SplitHostPort("API.GitHub.com.:80", 0), "API.GitHub.com.", 80));  // as written
  REQUIRE(Is(SplitHostPort("10.0.0.7:65535", 0), "10.0.0.7", 65535));
  REQUIRE(Is(SplitHostPort("", 443), "", 443));  // an empty host is the caller's to refuse
  REQUIRE(Is(SplitHostPort(":8080", 443), "", 8080));
}

TEST_CASE("SplitHostPort: IPv6 needs brackets, which stay", "[host_port]") {
  REQUIRE(Is(SplitHostPort("[fd00::7]:8080", 443), "[fd00::7]", 8080));
  REQUIRE(Is(SplitHostPort("[::1]", 443), "[::1]", 443));
  REQUIRE_FALSE(SplitHostPort("[::1", 443));     // unclosed
  REQUIRE_FALSE(SplitHostPort("[::1]x", 443));   // junk after the bracket
  REQUIRE_FALSE(SplitHostPort("[::1]80", 443));  // no colon before the port
  REQUIRE_FALSE(SplitHostPort("fd00::7", 443));  // the first colon ends the host
  REQUIRE_FALSE(SplitHostPort("a:b:443", 443));
}

TEST_CASE("SplitHostPort: the port is 1 to 5 digits up to 65535", "[host_port]") {
  REQUIRE_FALSE(SplitHostPort("a.com:", 443));
  REQUIRE_FALSE(SplitHostPort("a.com:65536", 443));
  REQUIRE_FALSE(SplitHostPort("a.com:99999", 443));
  REQUIRE_FALSE(SplitHostPort("a.com:008080", 443));  // six digits
  REQUIRE_FALSE(SplitHostPort("a.com:+443", 443));
  REQUIRE_FALSE(SplitHostPort("a.com: 443", 443));
  REQUIRE_FALSE(SplitHostPort("a.com:-1", 443));
  REQUIRE_FALSE(SplitHostPort("a.com:44x", 443));
  REQUIRE(Is(SplitHostPort("a.com:00443", 0), "a.com", 443));
}

TEST_CASE("SplitHostPort: port 0 only when allowed", "[host_port]") {
  REQUIRE_FALSE(SplitHostPort("127.0.0.1:0", 443));
  REQUIRE(Is(SplitHostPort("127.0.0.1:0", 443, /*allow_zero=*/true), "127.0.0.1", 0));
  REQUIRE(Is(SplitHostPort("[::1]:0", 0, /*allow_zero=*/true), "[::1]", 0));
  // A default of 0 is how a caller asks for a port that must be present.
  REQUIRE(Is(SplitHostPort("api.test", 0), "api.test", 0));
}

// What the proxy reads from a request's head, apart from any I/O: the target's
// host and port, the text a stand-in could hide in, and the substitution of
// stand-ins. Kept apart so that it can be fuzzed on its own.
#pragma once

#include <boost/beast/http.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "mojoup/sandbox/credproxy/vault.h"

namespace mojoup::sandbox::credproxy {

// Beast 1.74 speaks boost::string_view.
inline std::string Str(boost::beast::string_view text) {
  return std::string(text.data(), text.size());
}

// "host:port" or "[v6]:port" -> (host in policy::CanonicalHost's spelling,
// port); nullopt when malformed. A missing port is `default_port`; port 0 is accepted only where
// it means "any free port" (`allow_zero`).
std::optional<std::pair<std::string, std::uint16_t>> SplitHostPort(std::string_view text,
                                                                   std::uint16_t default_port,
                                                                   bool allow_zero = false);

// "[fd00::7]" -> "fd00::7"; anything else unchanged.
std::string Bare(const std::string& host);
bool IsIpLiteral(const std::string& host);

// The absolute-form target "http://host[:port]/path" split into host, port
// and origin-form path; nullopt when malformed (userinfo is refused).
struct AbsoluteTarget {
  std::string host;
  std::uint16_t port = 80;
  std::string origin;  // "/path?query"
};
std::optional<AbsoluteTarget> ParseAbsoluteTarget(std::string_view target);

// Base-URL mode: the origin-form target "/host[:port]/path" stands for
// https://host[:port]/path (port 443 when not given).
std::optional<AbsoluteTarget> ParseBaseUrlTarget(std::string_view target);

// The text a stand-in could hide in: the target and every header value, with
// Basic credentials decoded.
std::string Visible(const boost::beast::http::request_header<>& header);

// Swaps the stand-ins bound to `host` in the target and every header value
// (inside Basic credentials too), keeping the fields' order and repeats.
void Substitute(boost::beast::http::request_header<>& header, const Vault& vault,
                const std::string& host);

void DropProxyHeaders(boost::beast::http::request_header<>& header);

}  // namespace mojoup::sandbox::credproxy

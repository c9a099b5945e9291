// What the proxy reads from a request's head, apart from any I/O: the target's
// host and port, the authority a request names, where stand-ins are and the
// swap of those in their place. Kept apart so that it can be fuzzed on its
// own.
#pragma once

#include <boost/beast/http.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mojoup/credproxy/vault.h"
#include "scrubber.h"

namespace mojoup::credproxy {

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

// "[fd00::7]" -> "fd00::7" (the address, as a resolver or SNI wants it);
// anything else unchanged.
std::string WithoutBrackets(const std::string& host);
bool IsIpLiteral(const std::string& host);

// The absolute-form target "http://host[:port]/path" split into host, port
// and origin-form path; nullopt when malformed (userinfo is refused). Inside
// an intercepted tunnel the scheme is https:// (default port 443).
struct AbsoluteTarget {
  std::string host;
  std::uint16_t port = 80;
  std::string origin;  // "/path?query"
};
std::optional<AbsoluteTarget> ParseAbsoluteTarget(std::string_view target,
                                                  std::string_view scheme = "http://",
                                                  std::uint16_t default_port = 80);

// Base-URL mode: the origin-form target "/host[:port]/path" stands for
// https://host[:port]/path (port 443 when not given).
std::optional<AbsoluteTarget> ParseBaseUrlTarget(std::string_view target);

// TRACE and TRACK (in any case, or asked for through an X-HTTP-Method-Override
// style header): methods whose answer is the request itself.
bool IsReflectingMethod(const boost::beast::http::request_header<>& header);

// Whether `authority` ("host[:port]") names host:port: names compare without
// case and without a trailing dot; a port left out is `default_port`.
bool SameAuthority(std::string_view authority, const std::string& host, std::uint16_t port,
                   std::uint16_t default_port);

// A request inside a tunnel to host:port, checked against it: an absolute-form
// target's authority and the Host header must both name host:port.
struct AuthorityCheck {
  std::string origin;      // the target in origin-form, as the upstream gets it
  std::string named;       // when they do not: what the request named instead
  bool malformed = false;  // no target a server could take (a 400)
};
AuthorityCheck CheckAuthority(const boost::beast::http::request_header<>& header,
                              const std::string& host, std::uint16_t port);

// A stand-in in a request head that the proxy will not swap.
struct Misplaced {
  const Credential* credential = nullptr;
  std::string where;        // "the request target", "header X-Token", ...
  bool bound_here = false;  // the credential is bound to the request's host
};

// Where a stand-in belongs in a request to `host`, when `swap` (TLS to a host
// a credential is bound to): exactly the whole value of one of
// `credential_headers` (lowercase names), or in Authorization exactly the
// token of "Bearer TOKEN" / "token TOKEN", or exactly the user or the
// password of "Basic base64(user:password)". Returns the first stand-in found
// anywhere else: in the target (also percent-decoded), in a header's name, in
// any other header (Basic credentials decoded), or bound to another host.
// Without `swap` every stand-in is misplaced.
std::optional<Misplaced> FindMisplacedStandIn(const boost::beast::http::request_header<>& header,
                                              const Vault& vault, const std::string& host,
                                              const std::vector<std::string>& credential_headers,
                                              bool swap);

// Swaps the stand-ins bound to `host` where they belong (see above) for
// their real values, keeping the fields' order and repeats. Returns, for
// each Basic credential swapped, its encoding as sent upstream paired with
// the encoding of what the client wrote: a response that echoes the
// header is scrubbed with these. The names of the credentials swapped go
// into `swapped`, when given, each once.
std::vector<Scrubber::Pair> SwapStandIns(boost::beast::http::request_header<>& header,
                                         const Vault& vault, const std::string& host,
                                         const std::vector<std::string>& credential_headers,
                                         std::vector<std::string>* swapped = nullptr);

// `text` with ASCII letters in lowercase.
std::string Lower(std::string_view text);

// `text` with each %XX decoded; a '%' not followed by two hex digits stays.
std::string PercentDecoded(std::string_view text);

void DropProxyHeaders(boost::beast::http::request_header<>& header);

}  // namespace mojoup::credproxy

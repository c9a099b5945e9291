// Framing: how long a message is, decided by the proxy and by nobody else.
//
// Request smuggling lives where two parsers of the same bytes disagree on
// where a message ends. So the proxy reads every head strictly (RFC 9112:
// §5 for fields, §6 for the body's length), refuses any head whose length
// two careful parsers could read two ways, and writes each message it sends
// with framing fields of its own: the sandbox's or the upstream's framing
// and hop-by-hop fields never go through.
//
//   std::size_t n = HeadLength(bytes);           // 0: not whole yet
//   Framing framing = RequestFraming(bytes.substr(0, n));
//   if (!framing.ok()) refuse 400 with framing.error;
//   ... parse the head with Beast, check Agrees(parser, framing) ...
//   Reframe(request, framing, keep_alive);       // the proxy's own fields
//
// Kept apart from any I/O so that it can be fuzzed on its own.
#pragma once

#include <boost/beast/http.hpp>
#include <cstdint>
#include <string>
#include <string_view>

namespace mojoup::credproxy {

struct Framing {
  enum class Kind {
    kNone,        // no body
    kLength,      // `length` bytes
    kChunked,     // chunked transfer coding
    kUntilClose,  // a response whose body ends when the connection does
  };
  Kind kind = Kind::kNone;
  std::uint64_t length = 0;
  // A response to HEAD or a 304 may name the length its body would have;
  // it goes on as the proxy's own Content-Length, with no body.
  bool informational_length = false;
  std::string error;  // why the head was refused; empty when it was not
  bool ok() const { return error.empty(); }

  // A body of `bytes` bytes, as the proxy writes one it holds whole.
  static Framing OfLength(std::uint64_t bytes) {
    Framing framing;
    framing.kind = Kind::kLength;
    framing.length = bytes;
    return framing;
  }
};

// Where the head at the start of `bytes` ends (after its empty line), or 0
// when the empty line has not come yet; the search starts at `from` (what
// was searched before, as more bytes arrive). A head ended by bare line
// feeds counts as ended, so that it is refused rather than waited on.
std::size_t HeadLength(std::string_view bytes, std::size_t from = 0);

// The request head `head` (request line, fields, empty line) checked
// strictly and its body's framing decided; error says why it was refused.
Framing RequestFraming(std::string_view head);

// The same for a response head, to a request whose method was HEAD when
// `head_request`.
Framing ResponseFraming(std::string_view head, bool head_request);

// Whether Beast's parser, after reading the same head, frames the body as
// the proxy decided (a second opinion: both must agree).
template <bool isRequest, class Body>
bool Agrees(const boost::beast::http::parser<isRequest, Body>& parser, const Framing& framing) {
  switch (framing.kind) {
    case Framing::Kind::kNone:
      return parser.is_done();
    case Framing::Kind::kLength:
      return !parser.chunked() && parser.content_length() == framing.length &&
             (framing.length > 0 || parser.is_done());
    case Framing::Kind::kChunked:
      return parser.chunked() && !parser.is_done();
    case Framing::Kind::kUntilClose:
      return !parser.chunked() && !parser.content_length() && !parser.is_done();
  }
  return false;
}

// Drops every framing and hop-by-hop field of `header` (Content-Length,
// Transfer-Encoding, Connection and the fields it names, Keep-Alive,
// Proxy-Connection, TE, Trailer; Upgrade unless the message is a WebSocket
// upgrade or its answer) and writes the proxy's own for a body framed as
// `framing` and `keep_alive`. `peer_version` is the HTTP version of whoever
// reads the result: a body whose length is not known is chunked for 1.1,
// and ended by closing the connection for 1.0 (keep_alive must then be
// false). Returns whether the message's body is sent chunked.
bool Reframe(boost::beast::http::request_header<>& header, const Framing& framing, bool keep_alive);
void Reframe(boost::beast::http::response_header<>& header, const Framing& framing, bool keep_alive,
             unsigned peer_version);

// Whether a response framed as `framing` can be sent to a client of
// `client_version` on a connection that stays open: a body of unknown
// length cannot, to an HTTP/1.0 client.
bool KeepsOpen(const Framing& framing, unsigned client_version);

}  // namespace mojoup::credproxy

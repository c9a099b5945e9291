// Reading messages the way framing.h decides them: a head read whole and
// checked before Beast parses it, and a body the proxy holds read with a
// limit it counts itself.
#pragma once

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <string>

#include "framing.h"

namespace mojoup::credproxy {

// Reads one head into `buffer` (at most `limit` bytes), checks it strictly
// and has `parser` parse it; the body, if any, is left to be read through
// `parser`. An I/O failure, or a head over `limit` (http::error::header_limit),
// sets `ec`; a head refused says why in the result's error. `head_request`:
// a response to HEAD.
template <class Stream, bool isRequest>
boost::asio::awaitable<Framing> ReadHead(
    Stream& stream, boost::beast::flat_buffer& buffer,
    boost::beast::http::parser<isRequest, boost::beast::http::buffer_body>& parser,
    std::size_t limit, bool head_request, boost::beast::error_code& ec) {
  namespace asio = boost::asio;
  namespace http = boost::beast::http;
  std::size_t searched = 0;
  std::size_t length = 0;
  for (;;) {
    std::string_view have(static_cast<const char*>(buffer.data().data()), buffer.size());
    if constexpr (isRequest) {
      // Empty lines before a request line are skipped (RFC 9112 §2.2).
      std::size_t blank = 0;
      while (have.substr(blank, 2) == "\r\n") blank += 2;
      if (blank > 0) {
        buffer.consume(blank);
        have.remove_prefix(blank);
        searched = 0;
      }
    }
    length = HeadLength(have, searched);
    if (length > 0) break;
    searched = have.size() < 2 ? 0 : have.size() - 2;
    if (have.size() >= limit) {
      ec = http::error::header_limit;
      co_return Framing{};
    }
    const std::size_t room = std::min<std::size_t>(limit - have.size(), 16 * 1024);
    const std::size_t got = co_await stream.async_read_some(
        buffer.prepare(room), asio::redirect_error(asio::use_awaitable, ec));
    buffer.commit(got);
    if (ec) co_return Framing{};
  }
  if (length > limit) {
    ec = http::error::header_limit;
    co_return Framing{};
  }
  const std::string_view head(static_cast<const char*>(buffer.data().data()), length);
  Framing framing = isRequest ? RequestFraming(head) : ResponseFraming(head, head_request);
  if (!framing.ok()) co_return framing;
  if constexpr (!isRequest) parser.skip(head_request);
  parser.header_limit(static_cast<std::uint32_t>(limit));
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  boost::beast::error_code parsed;
  const std::size_t used = parser.put(asio::buffer(buffer.data().data(), length), parsed);
  buffer.consume(used);
  if (!parsed && !parser.is_header_done()) parsed = http::error::partial_message;
  if (parsed) {
    framing = Framing{};
    framing.error = "the head is malformed: " + parsed.message();
  } else if (!Agrees(parser, framing)) {
    framing = Framing{};
    framing.error = "the head's framing is read two ways by the proxy's own parsers";
  }
  co_return framing;
}

// Reads the rest of the body `parser` frames into `body`, stopping with
// http::error::body_limit as soon as it passes `limit` bytes.
template <class Stream, bool isRequest>
boost::asio::awaitable<void> ReadCapped(
    Stream& stream, boost::beast::flat_buffer& buffer,
    boost::beast::http::parser<isRequest, boost::beast::http::buffer_body>& parser,
    std::uint64_t limit, std::string& body, boost::beast::error_code& ec) {
  namespace asio = boost::asio;
  namespace http = boost::beast::http;
  std::string piece(16 * 1024, '\0');
  while (!parser.is_done()) {
    parser.get().body().data = piece.data();
    parser.get().body().size = piece.size();
    co_await http::async_read_some(stream, buffer, parser,
                                   asio::redirect_error(asio::use_awaitable, ec));
    if (ec == http::error::need_buffer) ec = {};
    if (ec) co_return;
    body.append(piece.data(), piece.size() - parser.get().body().size);
    if (body.size() > limit) {
      ec = http::error::body_limit;
      co_return;
    }
  }
}

// Whether `ec` is the message's fault (its framing or syntax), not the
// connection's.
inline bool IsMessageError(const boost::beast::error_code& ec) {
  return ec.category() ==
             boost::beast::http::make_error_code(boost::beast::http::error::bad_chunk).category() &&
         ec != boost::beast::http::error::end_of_stream;
}

}  // namespace mojoup::credproxy

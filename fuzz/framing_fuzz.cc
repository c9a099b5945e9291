// libFuzzer target: the proxy's promise of one framing per request, without
// the sockets. The bytes are what a client sends. The proxy's steps run as
// they do on a connection: the head checked strictly (framing.h), Beast's
// parse of it agreeing, the body read through Beast, and the message written
// anew with the proxy's own framing fields. Invariant: whatever the proxy
// lets through, two careless upstreams (the first of repeated fields
// honoured, and the last; tests/support/lenient_parser.h) each read exactly
// one request from it, the same one, with the body Beast read, and nothing
// left over for a second request.
#include <algorithm>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "../tests/support/lenient_parser.h"
#include "framing.h"

namespace {

namespace http = boost::beast::http;
using mojoup::test::LenientParse;
using mojoup::test::ParseLeniently;
using mojoup::test::Repeated;

void Require(bool holds) {
  if (!holds) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t head_length = mojoup::credproxy::HeadLength(input);
  if (head_length == 0) return 0;
  const mojoup::credproxy::Framing framing =
      mojoup::credproxy::RequestFraming(input.substr(0, head_length));
  if (!framing.ok()) return 0;  // refused with 400
  http::request_parser<http::string_body> parser;
  parser.body_limit(1 << 20);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(input.data(), head_length), ec);
  if (ec || !parser.is_header_done()) return 0;               // refused: the head is malformed
  if (!mojoup::credproxy::Agrees(parser, framing)) return 0;  // refused: read two ways
  std::string_view body = input.substr(head_length);
  while (!parser.is_done() && !body.empty()) {
    const std::size_t used = parser.put(boost::asio::buffer(body.data(), body.size()), ec);
    if (ec == http::error::need_more) break;
    if (ec) return 0;  // refused: the body is malformed
    body.remove_prefix(used);
  }
  if (!parser.is_done()) return 0;  // still waiting for the rest
  http::request<http::string_body> request = parser.release();
  mojoup::credproxy::Reframe(request.base(), framing, request.keep_alive());
  // Written as the proxy's relay writes it: the head, then the body in the
  // pieces its reads gave (of the first byte's size, 1 to 256), then a null
  // piece that ends it.
  const std::string body_read = std::move(request.body());
  http::request<http::buffer_body> out{std::move(request.base())};
  http::serializer<true, http::buffer_body> serializer{out};
  const std::size_t piece = 1 + static_cast<unsigned char>(input[0]);
  std::string sent;
  std::size_t at = 0;
  auto collect = [&](boost::beast::error_code&, const auto& buffers) {
    for (auto buffer : boost::beast::buffers_range_ref(buffers)) {
      sent.append(static_cast<const char*>(buffer.data()), buffer.size());
    }
    serializer.consume(boost::beast::buffer_bytes(buffers));
  };
  while (!serializer.is_done()) {
    const std::size_t size = std::min(piece, body_read.size() - at);
    out.body().data = size > 0 ? const_cast<char*>(body_read.data() + at) : nullptr;
    out.body().size = size;
    out.body().more = at + size < body_read.size();
    at += size;
    do {
      serializer.next(ec, collect);
    } while (!ec && !serializer.is_done());
    if (ec == http::error::need_buffer) ec = {};
    Require(!ec);
  }
  std::string method;
  std::string target;
  for (Repeated repeated : {Repeated::kFirst, Repeated::kLast}) {
    const LenientParse read = ParseLeniently(sent, repeated);
    Require(!read.error);
    Require(read.requests.size() == 1);
    Require(read.used == sent.size());
    Require(read.requests[0].body == body_read);
    if (method.empty()) {
      method = read.requests[0].method;
      target = read.requests[0].target;
    }
    Require(read.requests[0].method == method);
    Require(read.requests[0].target == target);
  }
  return 0;
}

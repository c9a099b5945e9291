// The relays of forward.h, compiled once over AnyStream: bodies through a
// fixed buffer (Beast's relay pattern), optionally through a BodyFilter,
// and both directions of an upgraded connection.
#include "forward.h"

namespace mojoup::credproxy {
namespace {

// Copies bytes one way until either side ends (after a WebSocket upgrade).
awaitable<std::uint64_t> Copy(AnyStream& from, beast::flat_buffer& pending, AnyStream& to) {
  beast::error_code ec;
  std::uint64_t total = pending.size();
  if (pending.size() > 0) {
    co_await asio::async_write(to, pending.data(), asio::redirect_error(use_awaitable, ec));
    pending.consume(pending.size());
  }
  std::vector<char> chunk(kRelayChunk);
  while (!ec) {
    std::size_t got =
        co_await from.async_read_some(asio::buffer(chunk), asio::redirect_error(use_awaitable, ec));
    if (got == 0) break;
    co_await asio::async_write(to, asio::buffer(chunk.data(), got),
                               asio::redirect_error(use_awaitable, ec));
    total += got;
  }
  co_return total;
}

// Copy, scrubbed: the upstream's side of an upgraded connection. WebSocket
// frames from a server are not masked, so a reflected key is there as it is.
awaitable<std::uint64_t> CopyScrubbed(AnyStream& from, beast::flat_buffer& pending, AnyStream& to,
                                      Scrubber scrubber) {
  beast::error_code ec;
  std::uint64_t total = pending.size();
  std::string out;
  if (pending.size() > 0) {
    out = scrubber.Feed(beast::buffers_to_string(pending.data()));
    pending.consume(pending.size());
    if (!out.empty()) {
      co_await asio::async_write(to, asio::buffer(out), asio::redirect_error(use_awaitable, ec));
    }
  }
  std::vector<char> chunk(kRelayChunk);
  while (!ec) {
    std::size_t got =
        co_await from.async_read_some(asio::buffer(chunk), asio::redirect_error(use_awaitable, ec));
    if (got == 0) break;
    total += got;
    out = scrubber.Feed(std::string_view(chunk.data(), got));
    if (out.empty()) continue;
    co_await asio::async_write(to, asio::buffer(out), asio::redirect_error(use_awaitable, ec));
  }
  out = scrubber.Finish();
  if (!out.empty()) {
    beast::error_code ignored;
    co_await asio::async_write(to, asio::buffer(out), asio::redirect_error(use_awaitable, ignored));
  }
  co_return total;
}

// Writes `bytes` as the next piece of the serializer's body (the head first,
// if it has not gone yet); `more` false ends the message.
template <bool isRequest>
awaitable<void> WritePiece(AnyStream& out, http::message<isRequest, http::buffer_body>& message,
                           http::serializer<isRequest, http::buffer_body>& serializer,
                           std::string& bytes, bool more, beast::error_code& ec) {
  auto& body = message.body();
  body.data = bytes.empty() ? nullptr : bytes.data();
  body.size = bytes.size();
  body.more = more;
  co_await http::async_write(out, serializer, asio::redirect_error(use_awaitable, ec));
  if (ec == http::error::need_buffer) ec = {};
}

// A body is read a piece at a time: what has arrived, not a full buffer, so
// that a slow or streamed body goes on as it comes. OfferChunk points the
// parser at `chunk` before a read; TakePiece says how many bytes the read
// put there (a full chunk, need_buffer, is no error). Plain functions on
// either side of the read, not a coroutine around it: a coroutine frame
// per piece cost plain http 4-6% of its throughput (bench_proxy), these
// nothing measurable.
template <bool isRequest>
void OfferChunk(http::parser<isRequest, http::buffer_body>& parser, std::vector<char>& chunk,
                IdleWatch& idle) {
  parser.get().body().data = chunk.data();
  parser.get().body().size = chunk.size();
  idle.Touch();
}
template <bool isRequest>
std::size_t TakePiece(http::parser<isRequest, http::buffer_body>& parser,
                      const std::vector<char>& chunk, beast::error_code& ec) {
  if (ec == http::error::need_buffer) ec = {};
  return chunk.size() - parser.get().body().size;
}

}  // namespace

awaitable<std::uint64_t> RelayUpgraded(asio::io_context& io, AnyStream& client,
                                       beast::flat_buffer& client_buffer, AnyStream& up,
                                       beast::flat_buffer& up_buffer,
                                       const std::vector<Scrubber::Pair>& reflections) {
  auto down = std::make_shared<OtherDirection>(io);
  asio::co_spawn(io, CopyScrubbed(up, up_buffer, client, Scrubber(reflections)),
                 [down](std::exception_ptr, std::uint64_t moved) { down->Finished(moved); });
  const std::uint64_t sent = co_await Copy(client, client_buffer, up);
  up.Close();
  co_await down->Wait();
  co_return sent;
}

template <bool isRequest>
awaitable<std::uint64_t> Relay(AnyStream& in, beast::flat_buffer& buffer,
                               http::parser<isRequest, http::buffer_body>& parser, AnyStream& out,
                               IdleWatch& idle, beast::error_code& ec) {
  http::serializer<isRequest, http::buffer_body> serializer{parser.get()};
  if (parser.is_done()) {
    // No body (HEAD, 1xx, 204, 304, no length): the head alone, not even the
    // last chunk of a head that says chunked.
    idle.Touch();
    co_await http::async_write_header(out, serializer, asio::redirect_error(use_awaitable, ec));
    co_return 0;
  }
  BodyRoom room(buffer, in.read_most());
  BodyBatch batch(in, out);
  std::vector<char> chunk(in.read_most());
  std::uint64_t total = 0;
  do {
    if (!parser.is_done()) {
      OfferChunk(parser, chunk, idle);
      co_await http::async_read_some(in, buffer, parser, asio::redirect_error(use_awaitable, ec));
      const std::size_t got = TakePiece(parser, chunk, ec);
      if (ec) co_return total;
      parser.get().body().size = got;
      // To a chunked serializer an empty piece is a last chunk of its own:
      // a read that gave no body bytes (a chunk's header alone) writes
      // nothing, and the end of a body is a null piece (the last chunk once).
      parser.get().body().data = parser.get().body().size > 0 ? chunk.data() : nullptr;
      parser.get().body().more = !parser.is_done();
      total += parser.get().body().size;
      if (parser.get().body().size == 0 && !parser.is_done()) continue;
    } else {
      parser.get().body().data = nullptr;
      parser.get().body().size = 0;
      parser.get().body().more = false;
    }
    idle.Touch();
    co_await http::async_write(out, serializer, asio::redirect_error(use_awaitable, ec));
    if (ec == http::error::need_buffer) ec = {};
    if (!ec) co_await batch.Settle(ec);
    if (ec) co_return total;
  } while (!parser.is_done() && !serializer.is_done());
  co_await batch.Flush(ec);
  co_return total;
}

template <bool isRequest>
awaitable<std::uint64_t> FilteredRelay(AnyStream& in, beast::flat_buffer& buffer,
                                       http::parser<isRequest, http::buffer_body>& parser,
                                       AnyStream& out, BodyFilter& filter, bool stop_on_match,
                                       IdleWatch& idle, beast::error_code& ec) {
  http::serializer<isRequest, http::buffer_body> serializer{parser.get()};
  std::vector<char> chunk(in.read_most());
  std::uint64_t total = 0;
  std::string bytes;
  idle.Touch();
  if (parser.is_done()) {
    // No body (HEAD, 1xx, 204, 304): the head alone.
    co_await http::async_write_header(out, serializer, asio::redirect_error(use_awaitable, ec));
    co_return total;
  }
  // The head goes first, alone: a client sees it while a slow body streams.
  co_await WritePiece(out, parser.get(), serializer, bytes, true, ec);
  if (ec) co_return total;
  BodyRoom room(buffer, in.read_most());
  BodyBatch batch(in, out);
  for (;;) {
    OfferChunk(parser, chunk, idle);
    co_await http::async_read_some(in, buffer, parser, asio::redirect_error(use_awaitable, ec));
    const std::size_t got = TakePiece(parser, chunk, ec);
    if (ec) co_return total;
    total += got;
    filter.Input(std::string_view(chunk.data(), got));
    for (;;) {
      const BodyFilter::Step step = filter.Next(bytes);
      if (step == BodyFilter::Step::kNeedInput) break;
      if (step == BodyFilter::Step::kCorrupt) {
        ec = boost::system::errc::make_error_code(boost::system::errc::bad_message);
        co_return total;
      }
      if (stop_on_match && filter.scrubber().matched()) {
        ec = asio::error::operation_aborted;
        co_return total;
      }
      if (bytes.empty()) continue;
      idle.Touch();
      co_await WritePiece(out, parser.get(), serializer, bytes, true, ec);
      if (ec) co_return total;
    }
    if (parser.is_done()) {
      if (!filter.Finish(bytes)) {
        ec = boost::system::errc::make_error_code(boost::system::errc::bad_message);
        co_return total;
      }
      idle.Touch();
      co_await WritePiece(out, parser.get(), serializer, bytes, false, ec);
      if (!ec) co_await batch.Flush(ec);
      co_return total;
    }
    co_await batch.Settle(ec);
    if (ec) co_return total;
  }
}

template awaitable<std::uint64_t> Relay<true>(AnyStream&, beast::flat_buffer&,
                                              http::parser<true, http::buffer_body>&, AnyStream&,
                                              IdleWatch&, beast::error_code&);
template awaitable<std::uint64_t> Relay<false>(AnyStream&, beast::flat_buffer&,
                                               http::parser<false, http::buffer_body>&, AnyStream&,
                                               IdleWatch&, beast::error_code&);
template awaitable<std::uint64_t> FilteredRelay<true>(AnyStream&, beast::flat_buffer&,
                                                      http::parser<true, http::buffer_body>&,
                                                      AnyStream&, BodyFilter&, bool, IdleWatch&,
                                                      beast::error_code&);
template awaitable<std::uint64_t> FilteredRelay<false>(AnyStream&, beast::flat_buffer&,
                                                       http::parser<false, http::buffer_body>&,
                                                       AnyStream&, BodyFilter&, bool, IdleWatch&,
                                                       beast::error_code&);

template awaitable<Framing> ReadHead<AnyStream, true>(AnyStream&, beast::flat_buffer&,
                                                      http::parser<true, http::buffer_body>&,
                                                      std::size_t, bool, beast::error_code&);
template awaitable<Framing> ReadHead<AnyStream, false>(AnyStream&, beast::flat_buffer&,
                                                       http::parser<false, http::buffer_body>&,
                                                       std::size_t, bool, beast::error_code&);
template awaitable<void> ReadCapped<AnyStream, true>(AnyStream&, beast::flat_buffer&,
                                                     http::parser<true, http::buffer_body>&,
                                                     std::uint64_t, std::string&,
                                                     beast::error_code&);
template awaitable<void> ReadCapped<AnyStream, false>(AnyStream&, beast::flat_buffer&,
                                                      http::parser<false, http::buffer_body>&,
                                                      std::uint64_t, std::string&,
                                                      beast::error_code&);

}  // namespace mojoup::credproxy

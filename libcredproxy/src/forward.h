// Streaming HTTP messages between a client and an upstream: bodies relayed
// through a fixed buffer (Beast's relay pattern), optionally through a
// BodyFilter, and the upstream's response relayed and scrubbed. Shared by
// interception and forwarding.
#pragma once

#include <boost/beast/websocket/rfc6455.hpp>
#include <functional>
#include <limits>
#include <utility>

#include "batched_stream.h"
#include "body_filter.h"
#include "fmt/format.h"
#include "framed_io.h"
#include "request_head.h"
#include "response_head.h"
#include "server.h"

namespace mojoup::credproxy {

inline constexpr std::size_t kRelayChunk = 64 * 1024;

// What one read from a stream gives at most: a TLS stream hands over one
// record's plaintext (16 KiB at most) a read, a socket what it has.
template <class Stream>
struct ReadMost : std::integral_constant<std::size_t, kRelayChunk> {};
template <class Next>
struct ReadMost<asio::ssl::stream<Next>> : std::integral_constant<std::size_t, 16 * 1024> {};

// An exchange's idle deadline while its bodies stream. basic_stream's own
// deadlines arm and cancel a timer for every read and write, two
// timerfd_settime calls a piece; this is one timer that looks, every
// quarter of the timeout, whether anything has moved (Touch). Once nothing
// has for the whole timeout it closes the upstream, so that a client
// waiting for a response hears why (a 502, where no head has gone yet);
// a quarter later, if that did not end the exchange, the client too. The
// streams' own deadlines are off meanwhile. Stop() ends the watch early
// (an upgraded connection may idle as long as it likes).
class IdleWatch {
 public:
  template <class Client, class Up>
  IdleWatch(asio::io_context& io, std::chrono::milliseconds timeout, Client& client, Up& up)
      : state_(std::make_shared<State>(io, timeout)) {
    beast::get_lowest_layer(client).expires_never();
    beast::get_lowest_layer(up).expires_never();
    state_->close_up = [&up] { beast::get_lowest_layer(up).close(); };
    state_->close = [&client] { beast::get_lowest_layer(client).close(); };
    Touch();
    Arm(state_);
  }
  ~IdleWatch() { Stop(); }
  IdleWatch(const IdleWatch&) = delete;
  IdleWatch& operator=(const IdleWatch&) = delete;

  void Touch() { state_->last = Clock::now(); }
  void Stop() {
    state_->close = nullptr;
    state_->close_up = nullptr;
    state_->timer.cancel();
  }

 private:
  struct State {
    State(asio::io_context& io, std::chrono::milliseconds idle) : timer(io), timeout(idle) {}
    asio::steady_timer timer;
    std::chrono::milliseconds timeout;
    Clock::time_point last;
    bool expired = false;
    std::function<void()> close_up;  // null once stopped or done
    std::function<void()> close;     // the client's; null once stopped or done
  };
  static void Arm(const std::shared_ptr<State>& state) {
    state->timer.expires_after(std::max(state->timeout / 4, std::chrono::milliseconds(1)));
    state->timer.async_wait([state](beast::error_code ec) {
      if (ec || !state->close) return;
      if (!state->expired && Clock::now() - state->last < state->timeout) return Arm(state);
      if (!state->expired) {
        state->expired = true;
        std::exchange(state->close_up, nullptr)();
        return Arm(state);
      }
      std::exchange(state->close, nullptr)();
    });
  }
  std::shared_ptr<State> state_;
};

// Beast reads at most max(512, capacity - size) bytes at a time into a
// dynamic buffer, so a buffer that only ever held heads would carry a body
// 512 bytes (and one TLS record, one syscall) at a time. A body streams
// with room for a read; the room goes once the body has gone, so an idle
// kept-alive connection holds none.
class BodyRoom {
 public:
  BodyRoom(beast::flat_buffer& buffer, std::size_t room) : buffer_(buffer) {
    if (buffer_.capacity() < room) buffer_.reserve(room);
  }
  ~BodyRoom() {
    if (buffer_.size() == 0) buffer_.shrink_to_fit();
  }
  BodyRoom(const BodyRoom&) = delete;
  BodyRoom& operator=(const BodyRoom&) = delete;

 private:
  beast::flat_buffer& buffer_;
};

// A stream without a Batched layer batches nothing: its relays write as
// they go.
struct NoBatch {
  void Batch(bool) {}
  std::size_t ahead() const { return 0; }
  std::size_t held() const { return 0; }
  awaitable<void> Flush(beast::error_code&) { co_return; }
};

// The Batched layer under a TLS stream, or a NoBatch for a stream without one.
template <class Stream>
struct BatchedLayer {
  static NoBatch* Of(Stream&) {
    static NoBatch none;
    return &none;
  }
};
template <class Next>
struct BatchedLayer<asio::ssl::stream<Batched<Next>>> {
  static Batched<Next>* Of(asio::ssl::stream<Batched<Next>>& stream) {
    return &stream.next_layer();
  }
};

// One body's relay from `in` to `out`, batched where the streams are: what
// is written to `out` is held while `in` has read ahead more to give, and
// goes (Settle) once it has not, so a body moves several TLS records a
// syscall yet nothing that has arrived waits for more. Ends both batches;
// a relay that ends early leaves what is held to go ahead of the next write.
template <class In, class Out>
class BodyBatch {
 public:
  BodyBatch(In& in, Out& out) : in_(BatchedLayer<In>::Of(in)), out_(BatchedLayer<Out>::Of(out)) {
    in_->Batch(true);
    out_->Batch(true);
  }
  ~BodyBatch() {
    in_->Batch(false);
    out_->Batch(false);
  }
  BodyBatch(const BodyBatch&) = delete;
  BodyBatch& operator=(const BodyBatch&) = delete;

  // Sends what is held unless `in` has read ahead more than it has handed
  // out. Bytes left in the parser's own buffer do not count: they may be
  // all it has (the CRLF that ends a chunk, kept for the next chunk's
  // header) while the next read waits on the socket.
  awaitable<void> Settle(beast::error_code& ec) {
    if (in_->ahead() == 0) co_await Flush(ec);
  }
  awaitable<void> Flush(beast::error_code& ec) {
    if (out_->held() > 0) co_await out_->Flush(ec);
  }

 private:
  decltype(BatchedLayer<In>::Of(std::declval<In&>())) in_;
  decltype(BatchedLayer<Out>::Of(std::declval<Out&>())) out_;
};

// A request on a connection whose response is scrubbed: ask for a body the
// scrubber can read whole. Ranges would let a client put a reflected key
// together from pieces none of which holds all of it; WebSocket compression
// would hide it in frames; other upgrades (h2c) speak what the proxy cannot
// read.
void PrepareForScrubbing(http::request_header<>& request, bool allow_websocket);

bool IsPlainWebSocketAnswer(const http::response_header<>& response);

// Copies bytes one way until either side ends (after a WebSocket upgrade).
template <class From, class To>
awaitable<std::uint64_t> Copy(From& from, beast::flat_buffer& pending, To& to) {
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
template <class From, class To>
awaitable<std::uint64_t> CopyScrubbed(From& from, beast::flat_buffer& pending, To& to,
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

// Both directions of an upgraded (WebSocket) connection at once, until
// either side ends: the client's bytes as they are, the upstream's scrubbed
// of `reflections`. Closes the upstream; returns the bytes sent up.
template <class Client, class Up>
awaitable<std::uint64_t> RelayUpgraded(asio::io_context& io, Client& client,
                                       beast::flat_buffer& client_buffer, Up& up,
                                       beast::flat_buffer& up_buffer,
                                       const std::vector<Scrubber::Pair>& reflections) {
  struct Shared {
    explicit Shared(asio::io_context& context) : done(context) {
      done.expires_at(Clock::time_point::max());
    }
    asio::steady_timer done;
    bool finished = false;
  };
  auto shared = std::make_shared<Shared>(io);
  asio::co_spawn(io, CopyScrubbed(up, up_buffer, client, Scrubber(reflections)),
                 [shared](std::exception_ptr, std::uint64_t) {
                   shared->finished = true;
                   shared->done.cancel();
                 });
  const std::uint64_t sent = co_await Copy(client, client_buffer, up);
  beast::get_lowest_layer(up).close();
  if (!shared->finished) {
    beast::error_code ec;
    co_await shared->done.async_wait(asio::redirect_error(use_awaitable, ec));
  }
  co_return sent;
}

// Streams one message's body from `in` to `out` through a fixed buffer
// (Beast's relay pattern). `touch` renews the deadlines as data flows.
template <bool isRequest, class In, class Out, class Touch>
awaitable<std::uint64_t> Relay(In& in, beast::flat_buffer& buffer,
                               http::parser<isRequest, http::buffer_body>& parser, Out& out,
                               Touch touch, beast::error_code& ec) {
  http::serializer<isRequest, http::buffer_body> serializer{parser.get()};
  if (parser.is_done()) {
    // No body (HEAD, 1xx, 204, 304, no length): the head alone, not even the
    // last chunk of a head that says chunked.
    touch();
    co_await http::async_write_header(out, serializer, asio::redirect_error(use_awaitable, ec));
    co_return 0;
  }
  BodyRoom room(buffer, ReadMost<In>::value);
  BodyBatch batch(in, out);
  std::vector<char> chunk(ReadMost<In>::value);
  std::uint64_t total = 0;
  do {
    if (!parser.is_done()) {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      touch();
      // What has arrived, not a full buffer: a slow or streamed body goes
      // on as it comes.
      co_await http::async_read_some(in, buffer, parser, asio::redirect_error(use_awaitable, ec));
      if (ec == http::error::need_buffer) ec = {};
      if (ec) co_return total;
      parser.get().body().size = chunk.size() - parser.get().body().size;
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
    touch();
    co_await http::async_write(out, serializer, asio::redirect_error(use_awaitable, ec));
    if (ec == http::error::need_buffer) ec = {};
    if (!ec) co_await batch.Settle(ec);
    if (ec) co_return total;
  } while (!parser.is_done() && !serializer.is_done());
  co_await batch.Flush(ec);
  co_return total;
}

// Writes `bytes` as the next piece of the serializer's body (the head first,
// if it has not gone yet); `more` false ends the message.
template <bool isRequest, class Out>
awaitable<void> WritePiece(Out& out, http::message<isRequest, http::buffer_body>& message,
                           http::serializer<isRequest, http::buffer_body>& serializer,
                           std::string& bytes, bool more, beast::error_code& ec) {
  auto& body = message.body();
  body.data = bytes.empty() ? nullptr : bytes.data();
  body.size = bytes.size();
  body.more = more;
  co_await http::async_write(out, serializer, asio::redirect_error(use_awaitable, ec));
  if (ec == http::error::need_buffer) ec = {};
}

// Relay, with the body's bytes passed through `filter` on their way. With
// `stop_on_match`, stops before sending anything once the filter's scrubber
// has found a text (a watched stand-in), with ec = operation_aborted.
template <bool isRequest, class In, class Out, class Touch>
awaitable<std::uint64_t> FilteredRelay(In& in, beast::flat_buffer& buffer,
                                       http::parser<isRequest, http::buffer_body>& parser, Out& out,
                                       BodyFilter& filter, bool stop_on_match, Touch touch,
                                       beast::error_code& ec) {
  http::serializer<isRequest, http::buffer_body> serializer{parser.get()};
  std::vector<char> chunk(ReadMost<In>::value);
  std::uint64_t total = 0;
  std::string bytes;
  touch();
  if (parser.is_done()) {
    // No body (HEAD, 1xx, 204, 304): the head alone.
    co_await http::async_write_header(out, serializer, asio::redirect_error(use_awaitable, ec));
    co_return total;
  }
  // The head goes first, alone: a client sees it while a slow body streams.
  co_await WritePiece(out, parser.get(), serializer, bytes, true, ec);
  if (ec) co_return total;
  BodyRoom room(buffer, ReadMost<In>::value);
  BodyBatch batch(in, out);
  for (;;) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    touch();
    // What has arrived, not a full buffer: a stream of events goes on as it comes.
    co_await http::async_read_some(in, buffer, parser, asio::redirect_error(use_awaitable, ec));
    if (ec == http::error::need_buffer) ec = {};
    if (ec) co_return total;
    const std::size_t got = chunk.size() - parser.get().body().size;
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
      touch();
      co_await WritePiece(out, parser.get(), serializer, bytes, true, ec);
      if (ec) co_return total;
    }
    if (parser.is_done()) {
      if (!filter.Finish(bytes)) {
        ec = boost::system::errc::make_error_code(boost::system::errc::bad_message);
        co_return total;
      }
      touch();
      co_await WritePiece(out, parser.get(), serializer, bytes, false, ec);
      if (!ec) co_await batch.Flush(ec);
      co_return total;
    }
    co_await batch.Settle(ec);
    if (ec) co_return total;
  }
}

template <class Up, class Client, class Touch>
awaitable<Proxy::Impl::Relayed> Proxy::Impl::RelayResponse(
    Up& up, beast::flat_buffer& up_buffer, Client& client,
    const http::request<http::buffer_body>& request, const std::vector<Scrubber::Pair>* scrub,
    AuditRecord& record, const std::string& host, std::uint16_t port, Touch touch) {
  Relayed relayed;
  const bool head = request.method() == http::verb::head;
  const std::optional<Scrubber> head_scrubber =
      scrub ? std::optional<Scrubber>(Scrubber(*scrub)) : std::nullopt;
  for (;;) {
    http::response_parser<http::buffer_body> response;
    touch();
    beast::error_code ec;
    const Framing framing =
        co_await ReadHead(up, up_buffer, response, options.header_limit, head, ec);
    auto fail = [&](std::string why) -> awaitable<void> {
      record.Finish("error", record.rule, why);
      co_await RespondError(client, http::status::bad_gateway, why, request.version());
    };
    if (ec) {
      // Aborted: the exchange's idle watch closed the upstream. (The text
      // is made before the co_await: g++ 12 destroys the temporaries of a
      // conditional expression inside one twice.)
      std::string why = fmt::format("{}:{} sent no valid response: {}", host, port, ec.message());
      if (ec == asio::error::operation_aborted) {
        why = fmt::format("{}:{} sent no response within {:g} s", host, port,
                          static_cast<double>(options.idle_timeout.count()) / 1000);
      }
      co_await fail(std::move(why));
      co_return relayed;
    }
    if (!framing.ok()) {
      co_await fail(
          fmt::format("{}:{} sent a response whose length could be read two ways or not at all: {}",
                      host, port, framing.error));
      co_return relayed;
    }
    auto& message = response.get();
    const unsigned status = message.result_int();
    const bool upgraded = status == 101;
    const bool interim = status / 100 == 1 && !upgraded;
    record.status = static_cast<int>(status);
    // The parser's word, not the Connection field's: a body that ends with
    // the connection leaves nothing to keep.
    const bool keep_alive = interim || (request.keep_alive() && response.keep_alive() &&
                                        KeepsOpen(framing, request.version()));
    Reframe(message, framing, keep_alive, request.version());
    std::optional<BodyFilter> filter;
    if (head_scrubber) {
      if (upgraded && !(beast::websocket::is_upgrade(request) && IsPlainWebSocketAnswer(message))) {
        co_await fail(fmt::format(
            "{}:{} switched protocols to something other than an uncompressed WebSocket, which "
            "the proxy cannot read to keep keys out of it",
            host, port));
        co_return relayed;
      }
      ScrubHead(message, *head_scrubber);
      std::unique_ptr<Inflater> inflater;
      if (!response.is_done()) {
        std::string codings;
        const BodyCoding coding = CodingOf(message, codings);
        switch (coding) {
          case BodyCoding::kIdentity:
            break;
          case BodyCoding::kGzip:
          case BodyCoding::kDeflate:
            inflater = std::make_unique<Inflater>(
                coding == BodyCoding::kGzip ? Inflater::Coding::kGzip : Inflater::Coding::kDeflate);
            MarkDecoded(message, request.version());
            break;
          case BodyCoding::kUnreadable:
            co_await fail(fmt::format(
                "{}:{} sent a body coded as \"{}\", which the proxy cannot read to keep keys out "
                "of it",
                host, port, codings));
            co_return relayed;
        }
      }
      filter.emplace(Scrubber(*scrub), std::move(inflater));
    }
    // Not a conditional expression: g++ 12 evaluates both co_awaits of one.
    if (filter) {
      record.bytes_down +=
          co_await FilteredRelay(up, up_buffer, response, client, *filter, false, touch, ec);
    } else {
      record.bytes_down += co_await Relay(up, up_buffer, response, client, touch, ec);
    }
    if (ec) {
      record.Finish("error", record.rule, fmt::format("relaying the response: {}", ec.message()));
      co_return relayed;
    }
    if (interim) continue;
    relayed.ok = true;
    relayed.upgraded = upgraded;
    relayed.keep_alive = message.keep_alive() && keep_alive;
    co_return relayed;
  }
}
}  // namespace mojoup::credproxy

// Streaming HTTP messages between a client and an upstream: bodies relayed
// through a fixed buffer (Beast's relay pattern), optionally through a
// BodyFilter, and the upstream's response relayed and scrubbed. Shared by
// interception and forwarding.
#pragma once

#include <boost/beast/websocket/rfc6455.hpp>
#include <functional>
#include <limits>
#include <utility>

#include "any_stream.h"
#include "body_filter.h"
#include "fmt/format.h"
#include "framed_io.h"
#include "request_head.h"
#include "response_head.h"
#include "server.h"

namespace mojoup::credproxy {

// An exchange's idle deadline while its bodies stream. basic_stream's own
// deadlines arm and cancel a timer for every read and write, two
// timerfd_settime calls a piece; this is one timer that looks, every
// quarter of the timeout, whether anything has moved (Touch). Once nothing
// has for the whole timeout it closes the upstream, so that a client
// waiting for a response hears why (a 502, where no head has gone yet);
// a quarter later, if that did not end the exchange, the client too. The
// streams' own deadlines are off meanwhile. Stop() ends the watch early
// (an upgraded connection may idle as long as it likes). Both streams
// must outlive the watch.
class IdleWatch {
 public:
  IdleWatch(asio::io_context& io, std::chrono::milliseconds timeout, AnyStream& client,
            AnyStream& up)
      : state_(std::make_shared<State>(io, timeout)) {
    client.ExpiresNever();
    up.ExpiresNever();
    state_->close_up = [&up] { up.Close(); };
    state_->close = [&client] { client.Close(); };
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

// One body's relay from `in` to `out`, batched where the streams are: what
// is written to `out` is held while `in` has read ahead more to give, and
// goes (Settle) once it has not, so a body moves several TLS records a
// syscall yet nothing that has arrived waits for more. Ends both batches;
// a relay that ends early leaves what is held to go ahead of the next write.
class BodyBatch {
 public:
  BodyBatch(AnyStream& in, AnyStream& out) : in_(in), out_(out) {
    in_.Batch(true);
    out_.Batch(true);
  }
  ~BodyBatch() {
    in_.Batch(false);
    out_.Batch(false);
  }
  BodyBatch(const BodyBatch&) = delete;
  BodyBatch& operator=(const BodyBatch&) = delete;

  // Sends what is held unless `in` has read ahead more than it has handed
  // out. Bytes left in the parser's own buffer do not count: they may be
  // all it has (the CRLF that ends a chunk, kept for the next chunk's
  // header) while the next read waits on the socket.
  awaitable<void> Settle(beast::error_code& ec) {
    if (in_.ahead() == 0) co_await Flush(ec);
  }
  awaitable<void> Flush(beast::error_code& ec) {
    if (out_.held() > 0) co_await out_.Flush(ec);
  }

 private:
  AnyStream& in_;
  AnyStream& out_;
};

// A request on a connection whose response is scrubbed: ask for a body the
// scrubber can read whole. Ranges would let a client put a reflected key
// together from pieces none of which holds all of it; WebSocket compression
// would hide it in frames; other upgrades (h2c) speak what the proxy cannot
// read.
void PrepareForScrubbing(http::request_header<>& request, bool allow_websocket);

bool IsPlainWebSocketAnswer(const http::response_header<>& response);

// Both directions of an upgraded (WebSocket) connection at once, until
// either side ends: the client's bytes as they are, the upstream's scrubbed
// of `reflections`. Closes the upstream; returns the bytes sent up.
awaitable<std::uint64_t> RelayUpgraded(asio::io_context& io, AnyStream& client,
                                       beast::flat_buffer& client_buffer, AnyStream& up,
                                       beast::flat_buffer& up_buffer,
                                       const std::vector<Scrubber::Pair>& reflections);

// Streams one message's body from `in` to `out` through a fixed buffer
// (Beast's relay pattern). `idle` is touched as data flows.
template <bool isRequest>
awaitable<std::uint64_t> Relay(AnyStream& in, beast::flat_buffer& buffer,
                               http::parser<isRequest, http::buffer_body>& parser, AnyStream& out,
                               IdleWatch& idle, beast::error_code& ec);

// Relay, with the body's bytes passed through `filter` on their way. With
// `stop_on_match`, stops before sending anything once the filter's scrubber
// has found a text (a watched stand-in), with ec = operation_aborted.
template <bool isRequest>
awaitable<std::uint64_t> FilteredRelay(AnyStream& in, beast::flat_buffer& buffer,
                                       http::parser<isRequest, http::buffer_body>& parser,
                                       AnyStream& out, BodyFilter& filter, bool stop_on_match,
                                       IdleWatch& idle, beast::error_code& ec);

// A whole message at once (a token request, a token answer).
awaitable<void> WriteMessage(AnyStream& out, http::request<http::string_body>& message,
                             beast::error_code& ec);
awaitable<void> WriteMessage(AnyStream& out, http::response<http::string_body>& message,
                             beast::error_code& ec);

// Compiled once, in relay.cc.
extern template awaitable<Framing> ReadHead<AnyStream, true>(AnyStream&, beast::flat_buffer&,
                                                             http::parser<true, http::buffer_body>&,
                                                             std::size_t, bool, beast::error_code&);
extern template awaitable<Framing> ReadHead<AnyStream, false>(
    AnyStream&, beast::flat_buffer&, http::parser<false, http::buffer_body>&, std::size_t, bool,
    beast::error_code&);
extern template awaitable<void> ReadCapped<AnyStream, true>(AnyStream&, beast::flat_buffer&,
                                                            http::parser<true, http::buffer_body>&,
                                                            std::uint64_t, std::string&,
                                                            beast::error_code&);
extern template awaitable<void> ReadCapped<AnyStream, false>(
    AnyStream&, beast::flat_buffer&, http::parser<false, http::buffer_body>&, std::uint64_t,
    std::string&, beast::error_code&);

}  // namespace mojoup::credproxy

// What goes back to a client: an upstream's response relayed, interim
// responses first, scrubbed and decoded on a connection that could have
// carried a real value; or the proxy's own answer, a refusal or an error.
// And messages written whole (a token request, its answer). All over the
// erased stream, compiled once for every stream they go on.

// g++ 12 takes an Asio coroutine frame's sized operator delete for a
// mismatch with its operator new when a coroutine has several suspension
// points inside conditionals (GCC bug 109224, fixed in 13).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include "forward.h"

namespace mojoup::credproxy {

awaitable<Proxy::Impl::Relayed> Proxy::Impl::RelayResponse(
    AnyStream& up, beast::flat_buffer& up_buffer, AnyStream& client,
    const http::request<http::buffer_body>& request, const std::vector<Scrubber::Pair>* scrub,
    AuditRecord& record, const std::string& host, std::uint16_t port, IdleWatch& idle) {
  Relayed relayed;
  const bool head = request.method() == http::verb::head;
  const std::optional<Scrubber> head_scrubber =
      scrub ? std::optional<Scrubber>(Scrubber(*scrub)) : std::nullopt;
  for (;;) {
    http::response_parser<http::buffer_body> response;
    idle.Touch();
    beast::error_code ec;
    const Framing framing =
        co_await ReadHead(up, up_buffer, response, options.header_limit, head, ec);
    if (ec) {
      // Aborted: the exchange's idle watch closed the upstream. (The text
      // is made before the co_await: g++ 12 destroys the temporaries of a
      // conditional expression inside one twice.)
      std::string why = fmt::format("{}:{} sent no valid response: {}", host, port, ec.message());
      if (ec == asio::error::operation_aborted) {
        why = fmt::format("{}:{} sent no response within {:g} s", host, port,
                          static_cast<double>(options.idle_timeout.count()) / 1000);
      }
      co_await FailUpstream(client, record, std::move(why), request.version());
      co_return relayed;
    }
    if (!framing.ok()) {
      co_await FailUpstream(
          client, record,
          fmt::format("{}:{} sent a response whose length could be read two ways or not at all: {}",
                      host, port, framing.error),
          request.version());
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
        co_await FailUpstream(
            client, record,
            fmt::format(
                "{}:{} switched protocols to something other than an uncompressed WebSocket, which "
                "the proxy cannot read to keep keys out of it",
                host, port),
            request.version());
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
            co_await FailUpstream(client, record,
                                  fmt::format("{}:{} sent a body coded as \"{}\", which the proxy "
                                              "cannot read to keep keys out of it",
                                              host, port, codings),
                                  request.version());
            co_return relayed;
        }
      }
      filter.emplace(Scrubber(*scrub), std::move(inflater));
    }
    // Not a conditional expression: g++ 12 evaluates both co_awaits of one.
    if (filter) {
      record.bytes_down +=
          co_await FilteredRelay(up, up_buffer, response, client, *filter, false, idle, ec);
    } else {
      record.bytes_down += co_await Relay(up, up_buffer, response, client, idle, ec);
    }
    if (ec) {
      record.Finish("error", "", fmt::format("relaying the response: {}", ec.message()));
      co_return relayed;
    }
    if (interim) continue;
    relayed.ok = true;
    relayed.upgraded = upgraded;
    relayed.keep_alive = message.keep_alive() && keep_alive;
    co_return relayed;
  }
}

awaitable<void> Proxy::Impl::Respond(AnyStream& stream, const Refusal& refusal, unsigned version) {
  http::response<http::string_body> response{http::status::forbidden, version};
  response.set(http::field::server, "mojoup-proxy");
  response.set(http::field::content_type, "application/json");
  response.set("X-Mojoup-Proxy-Error", refusal.code);
  response.keep_alive(false);
  response.body() = refusal.Json();
  response.prepare_payload();
  beast::error_code ec;
  co_await WriteMessage(stream, response, ec);
}

awaitable<void> Proxy::Impl::RespondError(AnyStream& stream, http::status status,
                                          std::string message, unsigned version) {
  http::response<http::string_body> response{status, version};
  response.set(http::field::server, "mojoup-proxy");
  response.set(http::field::content_type, "application/json");
  response.keep_alive(false);
  response.body() = ErrorJson(static_cast<int>(status), message);
  response.prepare_payload();
  beast::error_code ec;
  co_await WriteMessage(stream, response, ec);
}

awaitable<void> WriteMessage(AnyStream& out, http::request<http::string_body>& message,
                             beast::error_code& ec) {
  co_await http::async_write(out, message, asio::redirect_error(use_awaitable, ec));
}

awaitable<void> WriteMessage(AnyStream& out, http::response<http::string_body>& message,
                             beast::error_code& ec) {
  co_await http::async_write(out, message, asio::redirect_error(use_awaitable, ec));
}

}  // namespace mojoup::credproxy

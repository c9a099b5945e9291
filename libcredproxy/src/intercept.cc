// Interception: TLS terminated with a session-CA leaf for a host with bound
// credentials, so that stand-ins can be swapped for real values in requests
// and real values scrubbed out of responses.

// g++ 12 takes an Asio coroutine frame's sized operator delete for a
// mismatch with its operator new when a coroutine has several suspension
// points inside conditionals (GCC bug 109224, fixed in 13).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include "forward.h"
#include "server_tls.h"
#include "upstream.h"

namespace mojoup::credproxy {

awaitable<void> Proxy::Impl::Intercept(ClientStream& client, beast::flat_buffer& buffer,
                                       const std::string& host, std::uint16_t port,
                                       AuditRecord connect_record) {
  auto context = ca->ServerContext(host);
  if (!context.ok()) {
    connect_record.Finish("error", "", std::string(context.status().message()));
    co_await RespondError(client, http::status::internal_server_error,
                          std::string(context.status().message()), 11);
    co_return;
  }
  ClientTls tls(client, (*context)->context());
  if (!co_await TerminateTls(tls, buffer, connect_record)) co_return;
  Intercepted connection{
      tls,          Erase(tls), buffer, host, port, connect_record.rule, connect_record.source,
      std::nullopt, {}};
  for (bool first = true;; first = false) {
    http::request_parser<http::buffer_body> parser;
    if (!co_await ReadInterceptedHead(connection, parser, first)) co_return;
    if (!co_await InterceptRequest(connection, parser)) co_return;
  }
}

awaitable<bool> Proxy::Impl::TerminateTls(ClientTls& tls, beast::flat_buffer& buffer,
                                          AuditRecord& connect_record) {
  beast::error_code ec;
  static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
  co_await asio::async_write(beast::get_lowest_layer(tls),
                             asio::buffer(kEstablished.data(), kEstablished.size()),
                             asio::redirect_error(use_awaitable, ec));
  if (ec) co_return false;
  beast::get_lowest_layer(tls).expires_after(options.header_timeout);
  std::size_t used = co_await tls.async_handshake(asio::ssl::stream_base::server, buffer.data(),
                                                  asio::redirect_error(use_awaitable, ec));
  buffer.consume(used);
  if (ec) {
    connect_record.Finish("error", "",
                          fmt::format("TLS handshake with the client failed: {}", ec.message()));
    co_return false;
  }
  // Each request inside is decided, and audited, on its own.
  connect_record.Finish("allow", "", "intercepted");
  co_return true;
}

awaitable<bool> Proxy::Impl::ReadInterceptedHead(Intercepted& connection,
                                                 http::request_parser<http::buffer_body>& parser,
                                                 bool first) {
  beast::get_lowest_layer(connection.tls)
      .expires_after(first ? options.header_timeout : options.idle_timeout);
  AnyStream& tls = connection.client;
  beast::error_code ec;
  const Framing framing =
      co_await ReadHead(tls, connection.buffer, parser, options.header_limit, false, ec);
  if (ec == http::error::header_limit) {
    co_await RespondError(tls, http::status::request_header_fields_too_large,
                          fmt::format("the request headers exceed {} bytes", options.header_limit),
                          11);
    co_return false;
  }
  if (ec) co_return false;
  if (!framing.ok()) {
    co_await RefuseFraming(tls, framing, connection.host, connection.port);
    co_return false;
  }
  auto& request = parser.get();
  Reframe(request, framing, request.keep_alive());
  co_return true;
}

awaitable<bool> Proxy::Impl::InterceptRequest(Intercepted& connection,
                                              http::request_parser<http::buffer_body>& parser) {
  auto& request = parser.get();
  AuditRecord record = BeginAudit(Str(request.method_string()));
  record.host = connection.host;
  record.port = connection.port;
  record.rule = connection.rule;
  record.source = connection.source;
  std::optional<std::vector<Scrubber::Pair>> scrub =
      co_await AdmitIntercepted(connection, request, record);
  if (!scrub) co_return false;
  if (IsTokenRequest(request, connection.host)) {
    co_return co_await ExchangeToken(connection, parser, record);
  }
  if (!co_await SendIntercepted(connection, parser, record)) co_return false;
  co_return co_await ReturnIntercepted(connection, request, *scrub, record);
}

awaitable<std::optional<std::vector<Scrubber::Pair>>> Proxy::Impl::AdmitIntercepted(
    Intercepted& connection, http::request<http::buffer_body>& request, AuditRecord& record) {
  const std::string& host = connection.host;
  const std::uint16_t port = connection.port;
  if (IsReflectingMethod(request)) {
    co_await RefuseIntercepted(connection,
                               Refusal::ReflectingMethod(host, port, Str(request.method_string())),
                               record, request.version());
    co_return std::nullopt;
  }
  AuthorityCheck authority = CheckAuthority(request, host, port);
  if (authority.malformed || request.method() == http::verb::connect) {
    record.Finish("error", "", "malformed request target");
    co_await RespondError(connection.client, http::status::bad_request,
                          fmt::format("inside a tunnel to {}:{} send origin-form requests (/path) "
                                      "or absolute-form ones for https://{}:{}/",
                                      host, port, host, port),
                          request.version());
    co_return std::nullopt;
  }
  record.path = AuditPath(authority.origin);
  if (!authority.named.empty()) {
    co_await RefuseIntercepted(connection, Refusal::HostMismatch(host, port, authority.named),
                               record, request.version());
    co_return std::nullopt;
  }
  if (auto refusal = CheckSignIns(request, host, port)) {
    co_await RefuseIntercepted(connection, *refusal, record, request.version());
    co_return std::nullopt;
  }
  if (auto refusal = CheckHead(request, host, port, /*swap=*/true, /*over_tls=*/true)) {
    co_await RefuseIntercepted(connection, *refusal, record, request.version());
    co_return std::nullopt;
  }
  request.target(authority.origin);
  if (request.find(http::field::host) == request.end()) {
    request.set(http::field::host, port == 443 ? host : fmt::format("{}:{}", host, port));
  }
  std::vector<Scrubber::Pair> scrub = ResponsePairs(
      host,
      SwapStandIns(request, options.vault, host, options.credential_headers, &record.credentials));
  DropProxyHeaders(request);
  PrepareForScrubbing(request, /*allow_websocket=*/true);
  co_return scrub;
}

awaitable<bool> Proxy::Impl::DialIntercepted(Intercepted& connection, AuditRecord& record,
                                             unsigned version) {
  if (connection.up) co_return true;
  auto tcp = co_await Dial(connection.client, record, connection.host, connection.port, version);
  if (!tcp) co_return false;
  auto secured = co_await Secure(connection.client, record, std::move(*tcp), connection.host,
                                 connection.port, version);
  if (!secured) co_return false;
  connection.up.emplace(std::move(*secured));
  co_return true;
}

awaitable<bool> Proxy::Impl::SendIntercepted(Intercepted& connection,
                                             http::request_parser<http::buffer_body>& parser,
                                             AuditRecord& record) {
  AnyStream& tls = connection.client;
  const unsigned version = parser.get().version();
  if (!co_await DialIntercepted(connection, record, version)) co_return false;
  beast::error_code ec;
  AnyStream up = Erase(*connection.up);
  IdleWatch idle(io, options.idle_timeout, tls, up);
  if (std::optional<Scrubber> watch = BodyWatch(connection.host, /*swap=*/true)) {
    BodyFilter filter(std::move(*watch));
    record.bytes_up +=
        co_await FilteredRelay(tls, connection.buffer, parser, up, filter, true, idle, ec);
    if (filter.scrubber().matched()) {
      // The upstream has part of a request it will never get the rest of.
      beast::get_lowest_layer(*connection.up).close();
      co_await RefuseIntercepted(
          connection, BodyRefusal(filter.scrubber(), connection.host, connection.port, true),
          record, version);
      co_return false;
    }
  } else {
    record.bytes_up += co_await Relay(tls, connection.buffer, parser, up, idle, ec);
  }
  if (ec) {
    // The upstream has part of a request: it goes, unfinished, with the
    // connection (Intercept's caller drops both).
    co_await RefuseBody(tls, record, ec, version);
    co_return false;
  }
  co_return true;
}

awaitable<bool> Proxy::Impl::ReturnIntercepted(Intercepted& connection,
                                               const http::request<http::buffer_body>& request,
                                               const std::vector<Scrubber::Pair>& scrub,
                                               AuditRecord& record) {
  AnyStream& tls = connection.client;
  AnyStream up = Erase(*connection.up);
  IdleWatch idle(io, options.idle_timeout, tls, up);
  Relayed relayed = co_await RelayResponse(up, connection.up_buffer, tls, request, &scrub, record,
                                           connection.host, connection.port, idle);
  if (!relayed.ok) co_return false;
  if (relayed.upgraded) {
    idle.Stop();
    record.bytes_up += co_await RelayUpgraded(io, tls, connection.buffer, up, connection.up_buffer,
                                              ReflectionsAt(connection.host));
    record.Finish("allow", "", "");
    co_return false;
  }
  record.Finish("allow", "", "");
  KeepOrDropUpstream(connection, relayed.keep_alive);
  co_return relayed.keep_alive;
}

void Proxy::Impl::KeepOrDropUpstream(Intercepted& connection, bool keep_alive) {
  // Only a connection whose answer was read to its end, with nothing after
  // it, carries the next request: bytes an upstream sent unasked would be
  // read as the answer to it.
  if (keep_alive && connection.up_buffer.size() == 0) return;
  connection.up.reset();
  connection.up_buffer.clear();
}

awaitable<void> Proxy::Impl::RefuseIntercepted(Intercepted& connection, const Refusal& refusal,
                                               AuditRecord& record, unsigned version) {
  co_await Deny(connection.client, record, refusal, version);
}

void Proxy::Impl::TouchIntercepted(Intercepted& connection) const {
  beast::get_lowest_layer(connection.tls).expires_after(options.idle_timeout);
  if (connection.up) beast::get_lowest_layer(*connection.up).expires_after(options.idle_timeout);
}

}  // namespace mojoup::credproxy

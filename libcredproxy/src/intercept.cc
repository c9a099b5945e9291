// Interception: TLS terminated with a session-CA leaf for a host with bound
// credentials, so that stand-ins can be swapped for real values in requests
// and real values scrubbed out of responses.

#include "forward.h"
#include "server_tls.h"
#include "upstream.h"

namespace mojoup::credproxy {
awaitable<void> Proxy::Impl::Intercept(ClientStream& client, beast::flat_buffer& buffer,
                                       const std::string& host, std::uint16_t port,
                                       AuditRecord connect_record) {
  beast::error_code ec;
  auto context = ca->ServerContext(host);
  if (!context.ok()) {
    connect_record.Finish("error", connect_record.rule, std::string(context.status().message()));
    co_await RespondError(client, http::status::internal_server_error,
                          std::string(context.status().message()), 11);
    co_return;
  }
  static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
  co_await asio::async_write(client, asio::buffer(kEstablished.data(), kEstablished.size()),
                             asio::redirect_error(use_awaitable, ec));
  if (ec) co_return;
  asio::ssl::stream<ClientStream&> tls(client, (*context)->context());
  client.expires_after(options.header_timeout);
  std::size_t used = co_await tls.async_handshake(asio::ssl::stream_base::server, buffer.data(),
                                                  asio::redirect_error(use_awaitable, ec));
  buffer.consume(used);
  if (ec) {
    connect_record.Finish("error", connect_record.rule,
                          fmt::format("TLS handshake with the client failed: {}", ec.message()));
    co_return;
  }
  connect_record.Finish("intercept", connect_record.rule, "");

  std::optional<asio::ssl::stream<beast::tcp_stream>> up;
  beast::flat_buffer up_buffer;
  auto touch = [&] {
    client.expires_after(options.idle_timeout);
    if (up) beast::get_lowest_layer(*up).expires_after(options.idle_timeout);
  };
  for (bool first = true;; first = false) {
    http::request_parser<http::buffer_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(options.header_limit));
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    client.expires_after(first ? options.header_timeout : options.idle_timeout);
    co_await http::async_read_header(tls, buffer, parser, asio::redirect_error(use_awaitable, ec));
    if (ec == http::error::header_limit) {
      co_await RespondError(
          tls, http::status::request_header_fields_too_large,
          fmt::format("the request headers exceed {} bytes", options.header_limit), 11);
      co_return;
    }
    if (ec && ec != http::error::end_of_stream && ec != beast::error::timeout &&
        ec != asio::error::eof && ec != asio::ssl::error::stream_truncated) {
      co_await RespondError(tls, http::status::bad_request,
                            fmt::format("malformed request: {}", ec.message()), 11);
      co_return;
    }
    if (ec) co_return;
    auto& request = parser.get();
    AuditRecord record = audit->Begin(options.session, Str(request.method_string()));
    record.host = host;
    record.port = port;
    record.rule = connect_record.rule;
    auto refuse = [&](const Refusal& refusal) -> awaitable<void> {
      record.Finish("deny", refusal.rule, refusal.code);
      co_await Respond(tls, refusal, request.version());
    };
    if (IsReflectingMethod(request)) {
      co_await refuse(Refusal::ReflectingMethod(host, port, Str(request.method_string())));
      co_return;
    }
    AuthorityCheck authority = CheckAuthority(request, host, port);
    if (authority.malformed || request.method() == http::verb::connect) {
      record.Finish("error", record.rule, "malformed request target");
      co_await RespondError(
          tls, http::status::bad_request,
          fmt::format("inside a tunnel to {}:{} send origin-form requests (/path) or "
                      "absolute-form ones for https://{}:{}/",
                      host, port, host, port),
          request.version());
      co_return;
    }
    if (!authority.named.empty()) {
      co_await refuse(Refusal::HostMismatch(host, port, authority.named));
      co_return;
    }
    if (auto refusal = CheckHead(request, host, port, /*swap=*/true, /*over_tls=*/true)) {
      co_await refuse(*refusal);
      co_return;
    }
    request.target(authority.origin);
    if (request.find(http::field::host) == request.end()) {
      request.set(http::field::host, port == 443 ? host : fmt::format("{}:{}", host, port));
    }
    std::vector<Scrubber::Pair> scrub =
        ResponsePairs(SwapStandIns(request, options.vault, host, options.credential_headers));
    DropProxyHeaders(request);
    PrepareForScrubbing(request, /*allow_websocket=*/true);

    if (!up) {
      auto tcp = co_await Dial(tls, record, host, port, request.version());
      if (!tcp) co_return;
      auto secured = co_await Secure(tls, record, std::move(*tcp), host, port, request.version());
      if (!secured) co_return;
      up.emplace(std::move(*secured));
    }
    if (std::optional<Scrubber> watch = BodyWatch(host, /*swap=*/true)) {
      BodyFilter filter(std::move(*watch));
      record.bytes_up += co_await FilteredRelay(tls, buffer, parser, *up, filter, true, touch, ec);
      if (filter.scrubber().matched()) {
        // The upstream has part of a request it will never get the rest of.
        beast::get_lowest_layer(*up).close();
        co_await refuse(BodyRefusal(filter.scrubber(), host, port, true));
        co_return;
      }
    } else {
      record.bytes_up += co_await Relay(tls, buffer, parser, *up, touch, ec);
    }
    if (ec) {
      record.Finish("error", record.rule, fmt::format("forwarding the request: {}", ec.message()));
      co_return;
    }
    Relayed relayed =
        co_await RelayResponse(*up, up_buffer, tls, request, &scrub, record, host, port, touch);
    if (!relayed.ok) co_return;
    if (relayed.upgraded) {
      client.expires_never();
      beast::get_lowest_layer(*up).expires_never();
      record.bytes_up += co_await RelayUpgraded(io, tls, buffer, *up, up_buffer, reflections);
      record.Finish("allow", record.rule, "");
      co_return;
    }
    record.Finish("allow", record.rule, "");
    if (!relayed.keep_alive) co_return;
  }
}
}  // namespace mojoup::credproxy

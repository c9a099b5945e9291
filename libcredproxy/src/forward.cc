// Absolute-form plain HTTP requests and base-URL mode (origin-form
// /host/path, forwarded over verified TLS): one request at a time, a plain
// upstream kept for the client's next request to the same host and port.

// g++ 12 takes an Asio coroutine frame's sized operator delete for a
// mismatch with its operator new when a coroutine has several suspension
// points inside conditionals (GCC bug 109224, fixed in 13).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include "forward.h"

#include <sys/socket.h>

#include <cerrno>

#include "upstream.h"

namespace mojoup::credproxy {

void PrepareForScrubbing(http::request_header<>& request, bool allow_websocket) {
  request.set(http::field::accept_encoding, "identity");
  request.erase(http::field::range);
  request.erase(http::field::if_range);
  if (allow_websocket && beast::websocket::is_upgrade(request)) {
    request.erase(http::field::sec_websocket_extensions);
  } else {
    request.erase(http::field::upgrade);
  }
}

bool IsPlainWebSocketAnswer(const http::response_header<>& response) {
  std::string upgrade = Str(response[http::field::upgrade]);
  for (char& c : upgrade) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return upgrade == "websocket" &&
         response.find(http::field::sec_websocket_extensions) == response.end();
}

namespace {

// A kept upstream connection is used again only while it is quiet: a
// server that closed it, or sent something unasked, gets a fresh one.
bool StillQuiet(beast::tcp_stream& stream) {
  char byte;
  const ssize_t got = recv(stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace

awaitable<bool> Proxy::Impl::Forward(ClientStream& client, beast::flat_buffer& buffer,
                                     http::request_parser<http::buffer_body>& parser,
                                     std::optional<KeptUpstream>& kept) {
  auto& request = parser.get();
  AuditRecord record = BeginAudit(Str(request.method_string()));
  const std::string raw_target = Str(request.target());
  const bool base_url = raw_target.front() == '/';
  auto parsed = base_url ? ParseBaseUrlTarget(raw_target) : ParseAbsoluteTarget(raw_target);
  if (!parsed) {
    record.Finish("error", "", "malformed request target");
    co_await RespondError(client, http::status::bad_request,
                          base_url ? "malformed base-URL request; expected /host[:port]/path"
                                   : "malformed request target; expected http://host[:port]/path",
                          request.version());
    co_return false;
  }
  const std::string host = parsed->host;
  const std::uint16_t port = parsed->port;
  record.path = AuditPath(parsed->origin);
  if (IsReflectingMethod(request)) {
    record.host = host;
    record.port = port;
    co_await Deny(client, record,
                  Refusal::ReflectingMethod(host, port, Str(request.method_string())),
                  request.version());
    co_return false;
  }
  if (!co_await Admit(client, record, host, port, request.version())) co_return false;
  // Stand-ins are swapped only over TLS to their bound hosts: base-URL mode
  // is TLS upstream; plain http never carries one.
  const bool swap = base_url && IsBound(host);
  if (auto refusal = CheckHead(request, host, port, swap, base_url)) {
    co_await Deny(client, record, *refusal, request.version());
    co_return false;
  }
  std::optional<beast::tcp_stream> dialed;
  if (!base_url && kept && kept->host == host && kept->port == port && StillQuiet(kept->stream)) {
    dialed.emplace(std::move(kept->stream));
  }
  kept.reset();
  if (!dialed) {
    auto fresh = co_await Dial(client, record, host, port, request.version());
    if (!fresh) co_return false;
    dialed.emplace(std::move(*fresh));
  }
  request.target(parsed->origin);
  DropProxyHeaders(request);
  const std::uint16_t default_port = base_url ? 443 : 80;
  request.set(http::field::host, port == default_port ? host : fmt::format("{}:{}", host, port));
  bool up_open = false;
  AnyStream erased_client = Erase(client);
  if (!base_url) {
    AnyStream erased_up = Erase(*dialed);
    const bool again = co_await Exchange(erased_client, buffer, parser, erased_up, record, host,
                                         port, BodyWatch(host, false), nullptr, up_open);
    if (again && up_open) kept.emplace(KeptUpstream{host, port, std::move(*dialed)});
    co_return again;
  }
  std::vector<Scrubber::Pair> scrub =
      ResponsePairs(host, swap ? SwapStandIns(request, options.vault, host,
                                              options.credential_headers, &record.credentials)
                               : std::vector<Scrubber::Pair>());
  // A WebSocket only to a host a credential is bound to, as interception
  // allows one (Codex opens its Responses API this way): after the upgrade
  // the proxy no longer reads what goes up, so a stand-in on its way to
  // any other host could no longer be stopped.
  PrepareForScrubbing(request, /*allow_websocket=*/swap);
  auto up = co_await Secure(client, record, std::move(*dialed), host, port, request.version());
  if (!up) co_return false;
  AnyStream erased_up = Erase(*up);
  co_return co_await Exchange(erased_client, buffer, parser, erased_up, record, host, port,
                              BodyWatch(host, swap), &scrub, up_open);
}

awaitable<bool> Proxy::Impl::Exchange(AnyStream& client, beast::flat_buffer& buffer,
                                      http::request_parser<http::buffer_body>& parser,
                                      AnyStream& up, AuditRecord& record, const std::string& host,
                                      std::uint16_t port, std::optional<Scrubber> watch,
                                      const std::vector<Scrubber::Pair>* scrub, bool& up_open) {
  auto& request = parser.get();
  IdleWatch idle(io, options.idle_timeout, client, up);
  beast::error_code ec;
  if (watch) {
    BodyFilter filter(std::move(*watch));
    record.bytes_up += co_await FilteredRelay(client, buffer, parser, up, filter, true, idle, ec);
    if (filter.scrubber().matched()) {
      // Returning closes the upstream, which has an unfinished request.
      co_await Deny(client, record, BodyRefusal(filter.scrubber(), host, port, scrub != nullptr),
                    request.version());
      co_return false;
    }
  } else {
    record.bytes_up += co_await Relay(client, buffer, parser, up, idle, ec);
  }
  if (ec) {
    // The upstream has part of a request: it is closed with the exchange.
    co_await RefuseBody(client, record, ec, request.version());
    co_return false;
  }
  beast::flat_buffer up_buffer;
  Relayed relayed =
      co_await RelayResponse(up, up_buffer, client, request, scrub, record, host, port, idle);
  if (!relayed.ok) co_return false;
  if (relayed.upgraded && scrub != nullptr) {
    // Only a plain WebSocket gets here (RelayResponse refuses any other
    // switch); its frames from the upstream are scrubbed like a body.
    idle.Stop();
    record.bytes_up += co_await RelayUpgraded(io, client, buffer, up, up_buffer, *scrub);
    record.Finish("allow", "", "");
    co_return false;
  }
  record.Finish("allow", "", "");
  // Nothing the upstream sent may be left over for the next exchange.
  up_open = relayed.keep_alive && !relayed.upgraded && up_buffer.size() == 0;
  co_return relayed.keep_alive && !relayed.upgraded;
}
}  // namespace mojoup::credproxy

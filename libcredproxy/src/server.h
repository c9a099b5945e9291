// The credential proxy's private core: Proxy::Impl, the state one proxy's
// serving thread works on, and the pieces each concept's file shares. One
// io_context on one thread, a coroutine per client connection. Beast parses
// and serialises every HTTP message; bodies stream through a fixed buffer
// (forward.h); plain tunnels move bytes with splice(2) (tunnel.cc).
//
//   server.cc     accepting, one client connection, starting and stopping
//   upstream.cc   resolving, pins, blocked addresses, connecting, TLS upstream
//   tunnel.cc     CONNECT to hosts without bound credentials: spliced bytes
//   intercept.cc  CONNECT to hosts with bound credentials: TLS terminated here
//   forward.cc    absolute-form plain HTTP and base-URL mode
//   relay.cc      relaying bodies and upgraded connections (forward.h)
//   respond.cc    relaying an upstream's response, scrubbed; the proxy's own answers
//   any_stream.cc the one stream type the relays are compiled for
#pragma once

#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "any_stream.h"
#include "audit.h"
#include "batched_stream.h"
#include "fmt/format.h"
#include "framed_io.h"
#include "mojoup/credproxy/proxy.h"
#include "mojoup/credproxy/session_ca.h"
#include "refusal.h"
#include "scrubber.h"

namespace mojoup::credproxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::awaitable;
using asio::use_awaitable;
using Generic = asio::generic::stream_protocol;
using ClientStream = beast::basic_stream<Generic>;
using Clock = std::chrono::steady_clock;

class IdleWatch;

// The direction of a two-way copy that runs beside the coroutine copying
// the other one, which then waits for it: whether it has ended, and how
// many bytes it moved.
struct OtherDirection {
  explicit OtherDirection(asio::io_context& io) : done(io) {
    done.expires_at(Clock::time_point::max());
  }
  // From its completion handler.
  void Finished(std::uint64_t bytes) {
    moved = bytes;
    finished = true;
    done.cancel();
  }
  awaitable<void> Wait() {
    if (finished) co_return;
    beast::error_code ec;  // the cancel that Finished sends
    co_await done.async_wait(asio::redirect_error(use_awaitable, ec));
  }
  asio::steady_timer done;
  bool finished = false;
  std::uint64_t moved = 0;
};

struct Proxy::Impl {
  ProxyOptions options;
  asio::io_context io{1};
  std::optional<asio::basic_socket_acceptor<Generic>> tcp_acceptor;
  std::optional<asio::basic_socket_acceptor<Generic>> unix_acceptor;
  std::unique_ptr<SessionCa> ca;
  asio::ssl::context upstream_tls{asio::ssl::context::tls_client};
  std::shared_ptr<AuditLog> audit;  // ProxyOptions::audit, or one of its own
  // A record of a request or tunnel with `method`, for the audit.
  AuditRecord BeginAudit(const std::string& method) const {
    AuditRecord record;
    record.log = audit.get();
    record.method = method;
    return record;
  }
  // Ask (ask.cc, control.cc): the operator's socket, and the gate through
  // which another thread's decision wakes a coroutine here, closed (io
  // null) before the serving thread stops.
  struct WakeGate {
    std::mutex mu;
    asio::io_context* io = nullptr;
  };
  std::shared_ptr<WakeGate> wake_gate = std::make_shared<WakeGate>();
  std::optional<asio::basic_socket_acceptor<Generic>> control_acceptor;
  std::size_t control_active = 0;
  std::string tcp_address;
  std::string ca_path;
  std::string extra_path;  // ca_path, or the session CA and the upstream CAs
  std::string bundle_path;
  bool own_ca_dir = false;
  std::size_t active = 0;
  std::thread thread;
  // Per host: the real values it can know as it could send them back,
  // against what the sandbox sees instead (Vault::Reflections(host)),
  // computed once per host until the vault changes.
  std::map<std::string, std::vector<Scrubber::Pair>, std::less<>> reflections;
  const std::vector<Scrubber::Pair>& ReflectionsAt(const std::string& host);

  awaitable<void> Accept(asio::basic_socket_acceptor<Generic>& acceptor);
  awaitable<void> Serve(ClientStream stream);

  // One request or tunnel; returns whether the client connection may carry another.
  // Written over AnyStream (respond.cc); the templates erase their stream.
  awaitable<void> Respond(AnyStream& stream, const Refusal& refusal, unsigned version);
  awaitable<void> RespondError(AnyStream& stream, http::status status, std::string message,
                               unsigned version);
  template <class Stream>
  awaitable<void> Respond(Stream& stream, const Refusal& refusal, unsigned version);
  template <class Stream>
  awaitable<void> RespondError(Stream& stream, http::status status, std::string message,
                               unsigned version);
  // Audits `refusal` as a deny and answers the client with it.
  template <class Stream>
  awaitable<void> Deny(Stream& client, AuditRecord& record, const Refusal& refusal,
                       unsigned version);
  // Audits an upstream that failed as an error and answers the client 502,
  // both saying `why`.
  template <class Stream>
  awaitable<void> FailUpstream(Stream& client, AuditRecord& record, std::string why,
                               unsigned version);
  // A request body that failed on its way: 400 when the body itself was
  // malformed (a bad chunk), audited either way.
  template <class Stream>
  awaitable<void> RefuseBody(Stream& stream, AuditRecord& record, const beast::error_code& ec,
                             unsigned version);
  // A request whose framing is ambiguous or malformed: 400, audited, and the
  // connection closed (by the caller). `host` is empty outside a tunnel.
  template <class Stream>
  awaitable<void> RefuseFraming(Stream& stream, const Framing& framing, const std::string& host,
                                std::uint16_t port);

  struct Upstream {
    std::optional<beast::tcp_stream> stream;
    std::optional<Refusal> refusal;  // when refused
    std::string error;               // when it could not connect
  };
  awaitable<Upstream> ConnectUpstream(const std::string& host, std::uint16_t port);
  // Where host:port may be reached: the addresses the session may connect
  // to (a pin; else the literal or DNS's answers less the blocked ones that
  // no rule names), or the refusal when none is left, or why it failed.
  struct Resolved {
    std::vector<asio::ip::tcp::endpoint> candidates;
    std::optional<Refusal> refusal;
    std::string error;
  };
  awaitable<Resolved> Resolve(const std::string& host, std::uint16_t port);

  // Ask (ask.cc): a destination no rule decided, held for the operator's
  // answer up to Hold(). Granted, or the refusal (denied, still pending,
  // too many pending, a blocked address), or why it could not be resolved.
  struct AskAnswer {
    std::optional<Approval> granted;
    std::optional<Refusal> refusal;
    std::string approval;  // the approval that refused it
    std::string error;
  };
  awaitable<AskAnswer> AskOperator(const std::string& method, const std::string& host,
                                   std::uint16_t port);
  // Admit's branch for such a destination: true once granted; otherwise
  // answers the client, audits it and returns false.
  template <class Stream>
  awaitable<bool> AdmitAsked(Stream& client, AuditRecord& record, const std::string& host,
                             std::uint16_t port, unsigned version);
  std::chrono::milliseconds Hold() const;
  static std::string GrantRule(const Approval& approval);
  // Waits until the approvals' version passes `seen`, or `until`.
  awaitable<void> AwaitApprovals(std::uint64_t seen, Clock::time_point until);
  // What another thread calls to end such a wait on `timer`.
  std::function<void()> Waker(const std::shared_ptr<asio::steady_timer>& timer);
  // The control socket (control.cc).
  struct ControlAnswer {
    http::status status = http::status::ok;
    std::string body;
  };
  awaitable<void> AcceptControl();
  awaitable<void> ServeControl(ClientStream stream);
  awaitable<ControlAnswer> ControlRequest(const http::request<http::string_body>& request,
                                          uid_t peer);

  // Checks host:port against the rules; on a refusal answers the client,
  // audits it and returns false.
  template <class Stream>
  awaitable<bool> Admit(Stream& client, AuditRecord& record, const std::string& host,
                        std::uint16_t port, unsigned version);
  // Connects upstream; on a refusal (403) or a failure (502) answers the
  // client, audits it and returns nothing.
  template <class Stream>
  awaitable<std::optional<beast::tcp_stream>> Dial(Stream& client, AuditRecord& record,
                                                   const std::string& host, std::uint16_t port,
                                                   unsigned version);

  awaitable<void> Connect(ClientStream& client, beast::flat_buffer& buffer,
                          const std::string& target, unsigned version);
  awaitable<void> Tunnel(ClientStream& client, beast::flat_buffer& buffer, beast::tcp_stream up,
                         AuditRecord record);
  awaitable<void> Intercept(ClientStream& client, beast::flat_buffer& buffer,
                            const std::string& host, std::uint16_t port, AuditRecord record);
  // Intercept's steps (intercept.cc). One intercepted client connection: TLS
  // terminated here, and its upstream once dialled, kept for keep-alive.
  using ClientTls = asio::ssl::stream<Batched<ClientStream&>>;
  using UpstreamTls = asio::ssl::stream<Batched<beast::tcp_stream>>;
  struct Intercepted {
    ClientTls& tls;
    AnyStream client;  // tls, erased
    beast::flat_buffer& buffer;
    const std::string& host;
    std::uint16_t port;
    std::string rule;  // the CONNECT's
    std::string source;
    std::optional<UpstreamTls> up;
    beast::flat_buffer up_buffer;
  };
  // Answers the CONNECT and takes the client's TLS handshake; false when the
  // client is gone or the handshake failed (audited).
  awaitable<bool> TerminateTls(ClientTls& tls, beast::flat_buffer& buffer,
                               AuditRecord& connect_record);
  // The next request's head; false at the connection's end, or after
  // answering a head too large or malformed.
  awaitable<bool> ReadInterceptedHead(Intercepted& connection,
                                      http::request_parser<http::buffer_body>& parser, bool first);
  // One request: admitted, sent with its body, its response returned.
  // Returns whether the connection may carry another.
  awaitable<bool> InterceptRequest(Intercepted& connection,
                                   http::request_parser<http::buffer_body>& parser);
  // Checks the request and swaps its stand-ins; returns what its response is
  // scrubbed with, or nothing after refusing it.
  awaitable<std::optional<std::vector<Scrubber::Pair>>> AdmitIntercepted(
      Intercepted& connection, http::request<http::buffer_body>& request, AuditRecord& record);
  // Verified TLS to the connection's host, unless it has it already; false
  // after answering the client with the refusal or failure.
  awaitable<bool> DialIntercepted(Intercepted& connection, AuditRecord& record, unsigned version);
  // Dials the upstream if not yet and relays the body, watched for
  // stand-ins; false after a refusal or a failure.
  awaitable<bool> SendIntercepted(Intercepted& connection,
                                  http::request_parser<http::buffer_body>& parser,
                                  AuditRecord& record);
  // Relays the response, scrubbed, or the upgraded connection; returns
  // whether the connection may carry another request.
  awaitable<bool> ReturnIntercepted(Intercepted& connection,
                                    const http::request<http::buffer_body>& request,
                                    const std::vector<Scrubber::Pair>& scrub, AuditRecord& record);
  awaitable<void> RefuseIntercepted(Intercepted& connection, const Refusal& refusal,
                                    AuditRecord& record, unsigned version);
  // After an exchange: the upstream stays for the next request only when
  // both sides keep the connection and nothing follows the answer.
  void KeepOrDropUpstream(Intercepted& connection, bool keep_alive);
  void TouchIntercepted(Intercepted& connection) const;
  // A plain-http upstream connection kept open after a kept-alive exchange,
  // for the same client's next request to the same host and port.
  struct KeptUpstream {
    std::string host;
    std::uint16_t port = 0;
    beast::tcp_stream stream;
  };
  // Absolute-form http:// requests, and base-URL mode (origin-form
  // /host/path, forwarded over verified TLS): one request, over `kept` when
  // it goes to the same plain-http host, else over a fresh upstream, which
  // `kept` then holds when both sides keep the connection alive.
  awaitable<bool> Forward(ClientStream& client, beast::flat_buffer& buffer,
                          http::request_parser<http::buffer_body>& parser,
                          std::optional<KeptUpstream>& kept);
  // Sends the request's body (watched for stand-ins when `watch`), then
  // relays the response (scrubbed with `scrub` when given). `up_open` says
  // whether the upstream connection may carry another request.
  awaitable<bool> Exchange(AnyStream& client, beast::flat_buffer& buffer,
                           http::request_parser<http::buffer_body>& parser, AnyStream& up,
                           AuditRecord& record, const std::string& host, std::uint16_t port,
                           std::optional<Scrubber> watch, const std::vector<Scrubber::Pair>* scrub,
                           bool& up_open);
  // Verified TLS to host over a dialled stream (SNI, ALPN http/1.1); on a
  // failure answers the client with 502 and returns nothing.
  template <class Stream>
  awaitable<std::optional<UpstreamTls>> Secure(
      Stream& client, AuditRecord& record, beast::tcp_stream tcp, const std::string& host,
      std::uint16_t port, unsigned version);

  // Reads the upstream's response to `request` and relays it, interim (1xx)
  // responses first. With `scrub` (a connection that could have carried a
  // real value upstream) the head and the body are scrubbed, the body
  // decoded first when the upstream compressed it, and a 101 must be the
  // WebSocket upgrade the request asked for. On a failure answers 502 where
  // it still can and audits it. `idle` is touched as data flows.
  struct Relayed {
    bool ok = false;
    bool keep_alive = false;
    bool upgraded = false;
  };
  awaitable<Relayed> RelayResponse(AnyStream& up, beast::flat_buffer& up_buffer, AnyStream& client,
                                   const http::request<http::buffer_body>& request,
                                   const std::vector<Scrubber::Pair>* scrub, AuditRecord& record,
                                   const std::string& host, std::uint16_t port, IdleWatch& idle);

  // Sign-ins (token_exchange.cc). The reflections again, after the vault
  // took new tokens.
  void VaultChanged();
  // Asks the sign-ins whose tokens may go to `host` whether they changed
  // (ProxyOptions::check_sign_in), and takes the host's tokens when they
  // did; the refusal when the request's head carries a stand-in of a sign-in
  // that went stale.
  std::optional<Refusal> CheckSignIns(const http::request_header<>& header, const std::string& host,
                                      std::uint16_t port);
  // A POST to one of a live refresh token's endpoints.
  bool IsTokenRequest(const http::request_header<>& header, const std::string& host) const;
  // A token request, whole: its body read (bounded), the refresh token's
  // stand-in swapped in its field, the answer read whole and its new tokens
  // taken into the vault, with stand-ins for them on the way to the sandbox.
  // Returns whether the connection may carry another request.
  awaitable<bool> ExchangeToken(Intercepted& connection,
                                http::request_parser<http::buffer_body>& head, AuditRecord& record);
  // The provider's answer to a token request, read whole within its limit
  // (ec http::error::body_limit past it); nothing when it could not be read
  // or its framing was refused.
  awaitable<std::optional<http::response<http::string_body>>> ReadTokenAnswer(
      Intercepted& connection, beast::error_code& ec);
  // The provider's answer to a refresh of `refresh`'s sign-in, its tokens
  // renewed in the vault and stand-ins put in their place in `body`; an
  // error for people when it cannot be done.
  awaitable<bool> ReturnTokenAnswer(Intercepted& connection, bool client_keep_alive,
                                    http::response<http::string_body>& response, bool refreshed,
                                    AuditRecord& record);
  std::optional<std::string> CaptureRefresh(const Credential& refresh, std::string& body);
  std::map<std::string, std::string> stale_sign_ins;  // sign-in -> why

  bool IsBound(const std::string& host) const;
  // The refusal for a stand-in in the head that will not be swapped: `swap`
  // when this request goes over TLS to a host credentials may be bound to.
  std::optional<Refusal> CheckHead(const http::request_header<>& header, const std::string& host,
                                   std::uint16_t port, bool swap, bool over_tls) const;
  // Watches a request body to `host` for stand-ins that may not go there (all
  // of them without `swap`); nullopt when there are none to watch for.
  std::optional<Scrubber> BodyWatch(const std::string& host, bool swap) const;
  // The refusal for a stand-in a body watch found.
  Refusal BodyRefusal(const Scrubber& watch, const std::string& host, std::uint16_t port,
                      bool over_tls) const;
  // What a response from `host` on a scrubbed connection is scrubbed with:
  // its reflections and those of `extra` (what the request carried).
  std::vector<Scrubber::Pair> ResponsePairs(const std::string& host,
                                            std::vector<Scrubber::Pair> extra);
};

// Binds ProxyOptions::control_socket, when set (control.cc).
absl::Status ListenControl(Proxy::Impl& impl);

// --- refusals and errors -------------------------------------------------

template <class Stream>
awaitable<void> Proxy::Impl::Respond(Stream& stream, const Refusal& refusal, unsigned version) {
  AnyStream erased = Erase(stream);
  co_await Respond(erased, refusal, version);
}

template <class Stream>
awaitable<void> Proxy::Impl::RespondError(Stream& stream, http::status status, std::string message,
                                          unsigned version) {
  AnyStream erased = Erase(stream);
  co_await RespondError(erased, status, std::move(message), version);
}

template <class Stream>
awaitable<void> Proxy::Impl::Deny(Stream& client, AuditRecord& record, const Refusal& refusal,
                                  unsigned version) {
  record.rule = refusal.rule;
  record.source = refusal.source;
  record.Finish("deny", refusal.code, "");
  co_await Respond(client, refusal, version);
}

template <class Stream>
awaitable<void> Proxy::Impl::FailUpstream(Stream& client, AuditRecord& record, std::string why,
                                          unsigned version) {
  record.Finish("error", "", why);
  co_await RespondError(client, http::status::bad_gateway, std::move(why), version);
}

template <class Stream>
awaitable<void> Proxy::Impl::RefuseBody(Stream& stream, AuditRecord& record,
                                        const beast::error_code& ec, unsigned version) {
  if (!IsMessageError(ec)) {
    record.Finish("error", "", fmt::format("forwarding the request: {}", ec.message()));
    co_return;
  }
  const std::string why = fmt::format(
      "refused a request whose body is malformed ({}); the upstream got none of it as a whole "
      "request",
      ec.message());
  record.Finish("deny", "", why);
  co_await RespondError(stream, http::status::bad_request, why, version);
}

template <class Stream>
awaitable<void> Proxy::Impl::RefuseFraming(Stream& stream, const Framing& framing,
                                           const std::string& host, std::uint16_t port) {
  const std::string why = fmt::format(
      "refused a request whose length could be read two ways or not at all: {}", framing.error);
  AuditRecord record = BeginAudit("");
  record.host = host;
  record.port = port;
  record.Finish("deny", "", why);
  co_await RespondError(stream, http::status::bad_request, why, 11);
}
}  // namespace mojoup::credproxy

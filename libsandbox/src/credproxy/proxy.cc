// The credential proxy's server: one io_context on one thread, a coroutine
// per client connection. Beast parses and serialises every HTTP message;
// bodies stream through a fixed buffer; plain tunnels move bytes with
// splice(2) so they never pass through user space.
#include "mojoup/sandbox/credproxy/proxy.h"

#include <fcntl.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "audit.h"
#include "body_filter.h"
#include "fmt/format.h"
#include "mojoup/policy/tool_profiles.h"
#include "mojoup/sandbox/credproxy/session_ca.h"
#include "refusal.h"
#include "request_head.h"
#include "response_head.h"
#include "scrubber.h"
#include "server_tls.h"

namespace mojoup::sandbox::credproxy {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::awaitable;
using asio::use_awaitable;
using Generic = asio::generic::stream_protocol;
using ClientStream = beast::basic_stream<Generic>;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kRelayChunk = 64 * 1024;

constexpr int kPipeSize = 1 << 20;

}  // namespace

struct Proxy::Impl {
  ProxyOptions options;
  asio::io_context io{1};
  std::optional<asio::basic_socket_acceptor<Generic>> tcp_acceptor;
  std::optional<asio::basic_socket_acceptor<Generic>> unix_acceptor;
  std::unique_ptr<SessionCa> ca;
  asio::ssl::context upstream_tls{asio::ssl::context::tls_client};
  std::unique_ptr<Audit> audit;
  std::string tcp_address;
  std::string ca_path;
  std::string bundle_path;
  bool own_ca_dir = false;
  std::size_t active = 0;
  std::thread thread;
  // Every real value as an upstream could send it back, against what the
  // sandbox sees instead (Vault::Reflections), computed once.
  std::vector<Scrubber::Pair> reflections;

  awaitable<void> Accept(asio::basic_socket_acceptor<Generic>& acceptor);
  awaitable<void> Serve(ClientStream stream);

  // One request or tunnel; returns whether the client connection may carry another.
  template <class Stream>
  awaitable<void> Respond(Stream& stream, const Refusal& refusal, unsigned version);
  template <class Stream>
  awaitable<void> Fail(Stream& stream, http::status status, std::string message, unsigned version);

  struct Upstream {
    std::optional<beast::tcp_stream> stream;
    std::optional<Refusal> refusal;  // when refused
    std::string error;               // when it could not connect
  };
  awaitable<Upstream> ConnectUpstream(const std::string& host, std::uint16_t port);

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
  // Absolute-form http:// requests, and base-URL mode (origin-form
  // /host/path, forwarded over verified TLS): one request, a fresh upstream.
  awaitable<bool> Forward(ClientStream& client, beast::flat_buffer& buffer,
                          http::request_parser<http::buffer_body>& parser);
  // Sends the request's body (watched for stand-ins when `watch`), then
  // relays the response (scrubbed with `scrub` when given).
  template <class Up>
  awaitable<bool> Exchange(ClientStream& client, beast::flat_buffer& buffer,
                           http::request_parser<http::buffer_body>& parser, Up& up,
                           AuditRecord& record, const std::string& host, std::uint16_t port,
                           std::optional<Scrubber> watch, const std::vector<Scrubber::Pair>* scrub);
  // Verified TLS to host over a dialled stream (SNI, ALPN http/1.1); on a
  // failure answers the client with 502 and returns nothing.
  template <class Stream>
  awaitable<std::optional<asio::ssl::stream<beast::tcp_stream>>> Secure(
      Stream& client, AuditRecord& record, beast::tcp_stream tcp, const std::string& host,
      std::uint16_t port, unsigned version);

  // Reads the upstream's response to `request` and relays it, interim (1xx)
  // responses first. With `scrub` (a connection that could have carried a
  // real value upstream) the head and the body are scrubbed, the body
  // decoded first when the upstream compressed it, and a 101 must be the
  // WebSocket upgrade the request asked for. On a failure answers 502 where
  // it still can and audits it.
  struct Relayed {
    bool ok = false;
    bool keep_alive = false;
    bool upgraded = false;
  };
  template <class Up, class Client, class Touch>
  awaitable<Relayed> RelayResponse(Up& up, beast::flat_buffer& up_buffer, Client& client,
                                   const http::request<http::buffer_body>& request,
                                   const std::vector<Scrubber::Pair>* scrub, AuditRecord& record,
                                   const std::string& host, std::uint16_t port, Touch touch);

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
  // What a response on a scrubbed connection is scrubbed with.
  std::vector<Scrubber::Pair> ResponsePairs(std::vector<Scrubber::Pair> extra) const;
};

// --- refusals and errors -------------------------------------------------

template <class Stream>
awaitable<void> Proxy::Impl::Respond(Stream& stream, const Refusal& refusal, unsigned version) {
  http::response<http::string_body> response{http::status::forbidden, version};
  response.set(http::field::server, "mojoup-proxy");
  response.set(http::field::content_type, "application/json");
  response.set("X-Mojoup-Proxy-Error", refusal.code);
  response.keep_alive(false);
  response.body() = refusal.Json();
  response.prepare_payload();
  beast::error_code ec;
  co_await http::async_write(stream, response, asio::redirect_error(use_awaitable, ec));
}

template <class Stream>
awaitable<void> Proxy::Impl::Fail(Stream& stream, http::status status, std::string message,
                                  unsigned version) {
  http::response<http::string_body> response{status, version};
  response.set(http::field::server, "mojoup-proxy");
  response.set(http::field::content_type, "application/json");
  response.keep_alive(false);
  response.body() = ErrorJson(static_cast<int>(status), message);
  response.prepare_payload();
  beast::error_code ec;
  co_await http::async_write(stream, response, asio::redirect_error(use_awaitable, ec));
}

bool Proxy::Impl::IsBound(const std::string& host) const {
  for (const Credential& credential : options.vault.credentials()) {
    if (std::find(credential.hosts.begin(), credential.hosts.end(), host) !=
        credential.hosts.end()) {
      return true;
    }
  }
  return false;
}

std::optional<Refusal> Proxy::Impl::CheckHead(const http::request_header<>& header,
                                              const std::string& host, std::uint16_t port,
                                              bool swap, bool over_tls) const {
  auto misplaced =
      FindMisplacedStandIn(header, options.vault, host, options.credential_headers, swap);
  if (!misplaced) return std::nullopt;
  if (!over_tls || !misplaced->bound_here) {
    return Refusal::CredentialMismatch(host, port, *misplaced->credential, over_tls);
  }
  return Refusal::StandInMisplaced(host, port, *misplaced->credential, misplaced->where,
                                   options.credential_headers);
}

std::optional<Scrubber> Proxy::Impl::BodyWatch(const std::string& host, bool swap) const {
  std::vector<Scrubber::Pair> pairs;
  for (const Credential& credential : options.vault.credentials()) {
    const bool bound =
        std::find(credential.hosts.begin(), credential.hosts.end(), host) != credential.hosts.end();
    if (!(swap && bound)) pairs.push_back({credential.stand_in, credential.stand_in});
  }
  if (pairs.empty()) return std::nullopt;
  return Scrubber(std::move(pairs), Scrubber::Hold::kWholeTexts);
}

Refusal Proxy::Impl::BodyRefusal(const Scrubber& watch, const std::string& host, std::uint16_t port,
                                 bool over_tls) const {
  for (const Credential& credential : options.vault.credentials()) {
    if (credential.stand_in == watch.first_match()) {
      return Refusal::CredentialMismatch(host, port, credential, over_tls, "in the request body");
    }
  }
  return Refusal::CredentialMismatch(host, port, options.vault.credentials().front(), over_tls,
                                     "in the request body");
}

std::vector<Scrubber::Pair> Proxy::Impl::ResponsePairs(std::vector<Scrubber::Pair> extra) const {
  std::vector<Scrubber::Pair> pairs = reflections;
  for (const Scrubber::Pair& pair : extra) {
    for (Scrubber::Pair& form : ReflectedForms(pair.from, pair.to))
      pairs.push_back(std::move(form));
  }
  return pairs;
}

namespace {

// A request on a connection whose response is scrubbed: ask for a body the
// scrubber can read whole. Ranges would let a client put a reflected key
// together from pieces none of which holds all of it; WebSocket compression
// would hide it in frames; other upgrades (h2c) speak what the proxy cannot
// read.
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

}  // namespace

// --- accepting -----------------------------------------------------------

awaitable<void> Proxy::Impl::Accept(asio::basic_socket_acceptor<Generic>& acceptor) {
  for (;;) {
    beast::error_code ec;
    Generic::socket socket =
        co_await acceptor.async_accept(asio::redirect_error(use_awaitable, ec));
    if (ec == asio::error::operation_aborted) co_return;
    if (ec) {
      // EMFILE and friends: back off briefly rather than spin.
      asio::steady_timer pause(io, std::chrono::milliseconds(50));
      co_await pause.async_wait(asio::redirect_error(use_awaitable, ec));
      continue;
    }
    ClientStream stream(std::move(socket));
    if (active >= options.max_connections) {
      asio::co_spawn(
          io,
          [this, s = std::move(stream)]() mutable -> awaitable<void> {
            co_await Fail(s, http::status::service_unavailable,
                          "the proxy is at its connection limit; try again shortly", 11);
          },
          asio::detached);
      continue;
    }
    ++active;
    asio::co_spawn(io, Serve(std::move(stream)), [this](std::exception_ptr) { --active; });
  }
}

// --- one client connection -------------------------------------------------

awaitable<void> Proxy::Impl::Serve(ClientStream stream) {
  beast::flat_buffer buffer;
  for (bool first = true;; first = false) {
    http::request_parser<http::buffer_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(options.header_limit));
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    stream.expires_after(first ? options.header_timeout : options.idle_timeout);
    beast::error_code ec;
    co_await http::async_read_header(stream, buffer, parser,
                                     asio::redirect_error(use_awaitable, ec));
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset) {
      co_return;
    }
    // On a timeout Beast has closed the socket already: a slow or silent
    // client is simply disconnected.
    if (ec == beast::error::timeout) co_return;
    if (ec == http::error::header_limit) {
      co_await Fail(stream, http::status::request_header_fields_too_large,
                    fmt::format("the request headers exceed {} bytes", options.header_limit), 11);
      co_return;
    }
    if (ec) {
      co_await Fail(stream, http::status::bad_request,
                    fmt::format("malformed request: {}", ec.message()), 11);
      co_return;
    }
    stream.expires_never();
    auto& request = parser.get();
    const std::string target = Str(request.target());
    if (request.method() == http::verb::connect) {
      co_await Connect(stream, buffer, target, request.version());
      co_return;
    }
    if (target.rfind("http://", 0) == 0 || target.rfind("/", 0) == 0) {
      if (!co_await Forward(stream, buffer, parser)) co_return;
      continue;
    }
    co_await Fail(stream, http::status::bad_request,
                  target.rfind("https://", 0) == 0
                      ? "send https requests through CONNECT, not as absolute-form"
                      : "send CONNECT host:port, an absolute-form http:// request, or a base-URL "
                        "request /host/path",
                  request.version());
    co_return;
  }
}

// --- upstream connections --------------------------------------------------

awaitable<Proxy::Impl::Upstream> Proxy::Impl::ConnectUpstream(const std::string& host,
                                                              std::uint16_t port) {
  Upstream upstream;
  std::vector<asio::ip::tcp::endpoint> candidates;
  std::vector<std::string> blocked;
  const std::string pin_key = fmt::format("{}:{}", host, port);
  beast::error_code ec;
  if (auto pin = options.pins.find(pin_key); pin != options.pins.end()) {
    candidates.emplace_back(asio::ip::make_address(pin->second), port);
  } else if (IsIpLiteral(host)) {
    // The rules allowed this literal address: a rule names it.
    candidates.emplace_back(asio::ip::make_address(WithoutBrackets(host)), port);
  } else {
    auto resolver = std::make_shared<asio::ip::tcp::resolver>(io);
    asio::steady_timer deadline(io, options.connect_timeout);
    deadline.async_wait([resolver](beast::error_code timer) {
      if (!timer) resolver->cancel();
    });
    auto results = co_await resolver->async_resolve(host, std::to_string(port),
                                                    asio::redirect_error(use_awaitable, ec));
    deadline.cancel();
    if (ec) {
      upstream.error = ec == asio::error::operation_aborted
                           ? fmt::format("resolving {} took longer than {} s", host,
                                         options.connect_timeout.count() / 1000)
                           : fmt::format("cannot resolve {}: {}", host, ec.message());
      co_return upstream;
    }
    for (const auto& entry : results) {
      asio::ip::address address = entry.endpoint().address();
      if (address.is_v6() && address.to_v6().is_v4_mapped()) {
        address = asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6());
      }
      const std::string text = address.to_string();
      const std::string literal = address.is_v6() ? "[" + text + "]" : text;
      if (IsBlockedAddress(text) && !options.rules.Rule(literal, port).NamesAddress()) {
        blocked.push_back(text);
        continue;
      }
      candidates.emplace_back(address, port);
    }
    if (candidates.empty()) {
      upstream.refusal = Refusal::BlockedAddress(host, port, blocked.empty() ? "" : blocked[0]);
      co_return upstream;
    }
  }
  beast::tcp_stream stream(io);
  stream.expires_after(options.connect_timeout);
  co_await stream.async_connect(candidates, asio::redirect_error(use_awaitable, ec));
  if (ec) {
    upstream.error = ec == beast::error::timeout
                         ? fmt::format("{}:{} did not accept a connection within {} s", host, port,
                                       options.connect_timeout.count() / 1000)
                         : fmt::format("cannot connect to {}:{}: {}", host, port, ec.message());
    co_return upstream;
  }
  stream.expires_never();
  stream.socket().set_option(asio::ip::tcp::no_delay(true));
  upstream.stream.emplace(std::move(stream));
  co_return upstream;
}

template <class Stream>
awaitable<bool> Proxy::Impl::Admit(Stream& client, AuditRecord& record, const std::string& host,
                                   std::uint16_t port, unsigned version) {
  record.host = host;
  record.port = port;
  policy::NetworkRules::Ruling ruling = options.rules.Rule(host, port);
  if (!ruling.allowed) {
    Refusal refusal = Refusal::BlockedByPolicy(host, port, ruling.Describe());
    record.Finish("deny", refusal.rule, refusal.code);
    co_await Respond(client, refusal, version);
    co_return false;
  }
  record.rule = ruling.Describe();
  co_return true;
}

template <class Stream>
awaitable<std::optional<beast::tcp_stream>> Proxy::Impl::Dial(Stream& client, AuditRecord& record,
                                                              const std::string& host,
                                                              std::uint16_t port,
                                                              unsigned version) {
  Upstream upstream = co_await ConnectUpstream(host, port);
  if (upstream.refusal) {
    record.Finish("deny", upstream.refusal->rule, upstream.refusal->code);
    co_await Respond(client, *upstream.refusal, version);
  } else if (!upstream.stream) {
    record.Finish("error", record.rule, upstream.error);
    co_await Fail(client, http::status::bad_gateway, upstream.error, version);
  }
  co_return std::move(upstream.stream);
}

// --- CONNECT ---------------------------------------------------------------

awaitable<void> Proxy::Impl::Connect(ClientStream& client, beast::flat_buffer& buffer,
                                     const std::string& target, unsigned version) {
  AuditRecord record = audit->Begin(options.session, "CONNECT");
  auto parsed = SplitHostPort(target, 0);
  if (!parsed || parsed->second == 0) {
    record.Finish("error", "", "malformed CONNECT target");
    co_await Fail(client, http::status::bad_request,
                  "CONNECT needs host:port, such as api.github.com:443", version);
    co_return;
  }
  const auto& [host, port] = *parsed;
  if (!co_await Admit(client, record, host, port, version)) co_return;
  if (IsBound(host)) {
    co_await Intercept(client, buffer, host, port, std::move(record));
    co_return;
  }
  auto up = co_await Dial(client, record, host, port, version);
  if (!up) co_return;
  co_await Tunnel(client, buffer, std::move(*up), std::move(record));
}

namespace {

// Moves bytes from `from` to `to` through a pipe with splice(2) until `from`
// ends, then half-closes `to`. Returns the bytes moved.
template <class From, class To>
awaitable<std::uint64_t> Splice(From& from, To& to) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) co_return 0;
  fcntl(pipe_fds[1], F_SETPIPE_SZ, kPipeSize);
  const int in = from.native_handle();
  const int out = to.native_handle();
  std::uint64_t total = 0;
  std::size_t queued = 0;  // bytes in the pipe
  bool ended = false;
  beast::error_code ec;
  // Keep both ends busy: read into the pipe while it has room, write out
  // what it holds, and wait only when neither side can move.
  for (;;) {
    bool moved = false;
    if (!ended && queued < static_cast<std::size_t>(kPipeSize)) {
      ssize_t got = splice(in, nullptr, pipe_fds[1], nullptr, kPipeSize - queued,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (got > 0) {
        queued += static_cast<std::size_t>(got);
        moved = true;
      } else if (got == 0 || errno != EAGAIN) {
        ended = true;
      }
    }
    if (queued > 0) {
      ssize_t put = splice(pipe_fds[0], nullptr, out, nullptr, queued,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE);
      if (put > 0) {
        queued -= static_cast<std::size_t>(put);
        total += static_cast<std::uint64_t>(put);
        moved = true;
      } else if (put == 0 || errno != EAGAIN) {
        break;  // the other side is gone
      }
    }
    if (ended && queued == 0) break;
    if (moved) continue;
    if (queued > 0) {
      co_await to.async_wait(To::wait_write, asio::redirect_error(use_awaitable, ec));
    } else {
      co_await from.async_wait(From::wait_read, asio::redirect_error(use_awaitable, ec));
    }
    if (ec) break;
  }
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  ::shutdown(out, SHUT_WR);
  co_return total;
}

}  // namespace

awaitable<void> Proxy::Impl::Tunnel(ClientStream& client, beast::flat_buffer& buffer,
                                    beast::tcp_stream up, AuditRecord record) {
  beast::error_code ec;
  static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
  co_await asio::async_write(client, asio::buffer(kEstablished.data(), kEstablished.size()),
                             asio::redirect_error(use_awaitable, ec));
  if (ec) co_return;
  // Bytes the client sent right behind its CONNECT (a pipelined ClientHello).
  if (buffer.size() > 0) {
    record.bytes_up += buffer.size();
    co_await asio::async_write(up, buffer.data(), asio::redirect_error(use_awaitable, ec));
    buffer.consume(buffer.size());
    if (ec) co_return;
  }
  auto& client_socket = client.socket();
  auto& up_socket = up.socket();
  client_socket.non_blocking(true);
  up_socket.non_blocking(true);

  // Upstream-to-client runs beside; this coroutine waits for both directions.
  struct Shared {
    explicit Shared(asio::io_context& io) : done(io) { done.expires_at(Clock::time_point::max()); }
    asio::steady_timer done;
    bool finished = false;
    std::uint64_t down = 0;
  };
  auto shared = std::make_shared<Shared>(io);
  asio::co_spawn(io, Splice(up_socket, client_socket),
                 [shared](std::exception_ptr, std::uint64_t moved) {
                   shared->down = moved;
                   shared->finished = true;
                   shared->done.cancel();
                 });
  record.bytes_up += co_await Splice(client_socket, up_socket);
  if (!shared->finished) {
    co_await shared->done.async_wait(asio::redirect_error(use_awaitable, ec));
  }
  record.bytes_down += shared->down;
  record.Finish("allow", record.rule, "");
}

// --- interception ------------------------------------------------------------

namespace {

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
  std::vector<char> chunk(kRelayChunk);
  std::uint64_t total = 0;
  do {
    if (!parser.is_done()) {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      touch();
      co_await http::async_read(in, buffer, parser, asio::redirect_error(use_awaitable, ec));
      if (ec == http::error::need_buffer) ec = {};
      if (ec) co_return total;
      parser.get().body().size = chunk.size() - parser.get().body().size;
      parser.get().body().data = chunk.data();
      parser.get().body().more = !parser.is_done();
      total += parser.get().body().size;
    } else {
      parser.get().body().data = nullptr;
      parser.get().body().size = 0;
      parser.get().body().more = false;
    }
    touch();
    co_await http::async_write(out, serializer, asio::redirect_error(use_awaitable, ec));
    if (ec == http::error::need_buffer) ec = {};
    if (ec) co_return total;
  } while (!parser.is_done() && !serializer.is_done());
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
  std::vector<char> chunk(kRelayChunk);
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
      co_return total;
    }
  }
}

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

}  // namespace

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
    response.body_limit(std::numeric_limits<std::uint64_t>::max());
    response.header_limit(static_cast<std::uint32_t>(options.header_limit));
    if (head) response.skip(true);
    touch();
    beast::error_code ec;
    co_await http::async_read_header(up, up_buffer, response,
                                     asio::redirect_error(use_awaitable, ec));
    auto fail = [&](std::string why) -> awaitable<void> {
      record.Finish("error", record.rule, why);
      co_await Fail(client, http::status::bad_gateway, why, request.version());
    };
    if (ec) {
      co_await fail(fmt::format("{}:{} sent no valid response: {}", host, port, ec.message()));
      co_return relayed;
    }
    auto& message = response.get();
    const unsigned status = message.result_int();
    const bool upgraded = status == 101;
    const bool interim = status / 100 == 1 && !upgraded;
    record.status = static_cast<int>(status);
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
    const bool server_keep_alive = message.keep_alive();
    if (!interim && !upgraded) message.keep_alive(request.keep_alive() && server_keep_alive);
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
    relayed.keep_alive = request.keep_alive() && server_keep_alive;
    co_return relayed;
  }
}

awaitable<void> Proxy::Impl::Intercept(ClientStream& client, beast::flat_buffer& buffer,
                                       const std::string& host, std::uint16_t port,
                                       AuditRecord connect_record) {
  beast::error_code ec;
  auto context = ca->ServerContext(host);
  if (!context.ok()) {
    connect_record.Finish("error", connect_record.rule, std::string(context.status().message()));
    co_await Fail(client, http::status::internal_server_error,
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
      co_await Fail(tls, http::status::request_header_fields_too_large,
                    fmt::format("the request headers exceed {} bytes", options.header_limit), 11);
      co_return;
    }
    if (ec && ec != http::error::end_of_stream && ec != beast::error::timeout &&
        ec != asio::error::eof && ec != asio::ssl::error::stream_truncated) {
      co_await Fail(tls, http::status::bad_request,
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
      co_await Fail(tls, http::status::bad_request,
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
      // Both directions at once: the upstream-to-client copy runs beside.
      struct Shared {
        explicit Shared(asio::io_context& io) : done(io) {
          done.expires_at(Clock::time_point::max());
        }
        asio::steady_timer done;
        bool finished = false;
      };
      auto shared = std::make_shared<Shared>(io);
      asio::co_spawn(io, CopyScrubbed(*up, up_buffer, tls, Scrubber(reflections)),
                     [shared](std::exception_ptr, std::uint64_t) {
                       shared->finished = true;
                       shared->done.cancel();
                     });
      record.bytes_up += co_await Copy(tls, buffer, *up);
      beast::get_lowest_layer(*up).close();
      if (!shared->finished) {
        co_await shared->done.async_wait(asio::redirect_error(use_awaitable, ec));
      }
      record.Finish("allow", record.rule, "");
      co_return;
    }
    record.Finish("allow", record.rule, "");
    if (!relayed.keep_alive) co_return;
  }
}

// --- absolute-form plain HTTP and base-URL mode ------------------------------

template <class Stream>
awaitable<std::optional<asio::ssl::stream<beast::tcp_stream>>> Proxy::Impl::Secure(
    Stream& client, AuditRecord& record, beast::tcp_stream tcp, const std::string& host,
    std::uint16_t port, unsigned version) {
  asio::ssl::stream<beast::tcp_stream> up(std::move(tcp), upstream_tls);
  SSL* ssl = up.native_handle();
  static const unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_set_alpn_protos(ssl, kAlpn, sizeof kAlpn);
  const std::string name = WithoutBrackets(host);
  if (!IsIpLiteral(host)) SSL_set_tlsext_host_name(ssl, name.c_str());
  up.set_verify_mode(asio::ssl::verify_peer);
  up.set_verify_callback(asio::ssl::host_name_verification(name));
  beast::get_lowest_layer(up).expires_after(options.connect_timeout);
  beast::error_code ec;
  co_await up.async_handshake(asio::ssl::stream_base::client,
                              asio::redirect_error(use_awaitable, ec));
  if (ec) {
    std::string why = fmt::format("TLS to {}:{} failed: {}", host, port, ec.message());
    record.Finish("error", record.rule, why);
    co_await Fail(client, http::status::bad_gateway, why, version);
    co_return std::nullopt;
  }
  co_return std::move(up);
}

awaitable<bool> Proxy::Impl::Forward(ClientStream& client, beast::flat_buffer& buffer,
                                     http::request_parser<http::buffer_body>& parser) {
  auto& request = parser.get();
  AuditRecord record = audit->Begin(options.session, Str(request.method_string()));
  const std::string raw_target = Str(request.target());
  const bool base_url = raw_target.front() == '/';
  auto parsed = base_url ? ParseBaseUrlTarget(raw_target) : ParseAbsoluteTarget(raw_target);
  if (!parsed) {
    record.Finish("error", "", "malformed request target");
    co_await Fail(client, http::status::bad_request,
                  base_url ? "malformed base-URL request; expected /host[:port]/path"
                           : "malformed request target; expected http://host[:port]/path",
                  request.version());
    co_return false;
  }
  const std::string host = parsed->host;
  const std::uint16_t port = parsed->port;
  auto refuse = [&](const Refusal& refusal) -> awaitable<void> {
    record.Finish("deny", refusal.rule, refusal.code);
    co_await Respond(client, refusal, request.version());
  };
  if (IsReflectingMethod(request)) {
    record.host = host;
    record.port = port;
    co_await refuse(Refusal::ReflectingMethod(host, port, Str(request.method_string())));
    co_return false;
  }
  if (!co_await Admit(client, record, host, port, request.version())) co_return false;
  // Stand-ins are swapped only over TLS to their bound hosts: base-URL mode
  // is TLS upstream; plain http never carries one.
  const bool swap = base_url && IsBound(host);
  if (auto refusal = CheckHead(request, host, port, swap, base_url)) {
    co_await refuse(*refusal);
    co_return false;
  }
  auto dialed = co_await Dial(client, record, host, port, request.version());
  if (!dialed) co_return false;
  request.target(parsed->origin);
  DropProxyHeaders(request);
  const std::uint16_t default_port = base_url ? 443 : 80;
  request.set(http::field::host, port == default_port ? host : fmt::format("{}:{}", host, port));
  if (!base_url) {
    co_return co_await Exchange(client, buffer, parser, *dialed, record, host, port,
                                BodyWatch(host, false), nullptr);
  }
  std::vector<Scrubber::Pair> scrub =
      ResponsePairs(swap ? SwapStandIns(request, options.vault, host, options.credential_headers)
                         : std::vector<Scrubber::Pair>());
  PrepareForScrubbing(request, /*allow_websocket=*/false);
  auto up = co_await Secure(client, record, std::move(*dialed), host, port, request.version());
  if (!up) co_return false;
  co_return co_await Exchange(client, buffer, parser, *up, record, host, port,
                              BodyWatch(host, swap), &scrub);
}

template <class Up>
awaitable<bool> Proxy::Impl::Exchange(ClientStream& client, beast::flat_buffer& buffer,
                                      http::request_parser<http::buffer_body>& parser, Up& up,
                                      AuditRecord& record, const std::string& host,
                                      std::uint16_t port, std::optional<Scrubber> watch,
                                      const std::vector<Scrubber::Pair>* scrub) {
  auto& request = parser.get();
  auto touch = [&] {
    client.expires_after(options.idle_timeout);
    beast::get_lowest_layer(up).expires_after(options.idle_timeout);
  };
  beast::error_code ec;
  if (watch) {
    BodyFilter filter(std::move(*watch));
    record.bytes_up += co_await FilteredRelay(client, buffer, parser, up, filter, true, touch, ec);
    if (filter.scrubber().matched()) {
      // Returning closes the upstream, which has an unfinished request.
      Refusal refusal = BodyRefusal(filter.scrubber(), host, port, scrub != nullptr);
      record.Finish("deny", refusal.rule, refusal.code);
      co_await Respond(client, refusal, request.version());
      co_return false;
    }
  } else {
    record.bytes_up += co_await Relay(client, buffer, parser, up, touch, ec);
  }
  if (ec) {
    record.Finish("error", record.rule, ec.message());
    co_return false;
  }
  beast::flat_buffer up_buffer;
  Relayed relayed =
      co_await RelayResponse(up, up_buffer, client, request, scrub, record, host, port, touch);
  client.expires_never();
  if (!relayed.ok) co_return false;
  record.Finish("allow", record.rule, "");
  // The upstream connection ends with this exchange; the client's may go on.
  co_return relayed.keep_alive && !relayed.upgraded;
}

// --- starting and stopping -------------------------------------------------

namespace {

absl::Status WriteFile(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) return absl::InternalError(fmt::format("{}: cannot write", path));
  chmod(path.c_str(), mode);
  return absl::OkStatus();
}

std::string ReadSystemBundle() {
  for (const char* path :
       {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"}) {
    std::ifstream in(path, std::ios::binary);
    if (in)
      return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return {};
}

}  // namespace

absl::StatusOr<std::unique_ptr<Proxy>> Proxy::Start(ProxyOptions options) {
  if (options.listen.empty() && options.socket.empty()) {
    return absl::InvalidArgumentError(
        "the proxy needs a TCP address to listen on, a socket, or both");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  ProxyOptions& opts = impl->options;
  for (std::string& name : opts.credential_headers) {
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (Vault::Reflection& reflection : opts.vault.Reflections()) {
    impl->reflections.push_back({std::move(reflection.real), std::move(reflection.shown)});
  }

  auto ca = SessionCa::Create(opts.session);
  if (!ca.ok()) return ca.status();
  impl->ca = *std::move(ca);
  if (opts.ca_dir.empty()) {
    std::string dir = (std::filesystem::temp_directory_path() / "mojoup-proxy-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) return absl::InternalError("cannot create a CA directory");
    opts.ca_dir = dir;
    impl->own_ca_dir = true;
  } else {
    std::error_code fs_ec;
    std::filesystem::create_directories(opts.ca_dir, fs_ec);
  }
  impl->ca_path = opts.ca_dir + "/ca.pem";
  impl->bundle_path = opts.ca_dir + "/ca-bundle.pem";
  if (auto s = WriteFile(impl->ca_path, impl->ca->certificate_pem(), 0644); !s.ok()) return s;
  if (auto s = WriteFile(impl->bundle_path, ReadSystemBundle() + impl->ca->certificate_pem(), 0644);
      !s.ok()) {
    return s;
  }

  boost::system::error_code ec;
  if (!opts.upstream_ca.empty()) {
    impl->upstream_tls.load_verify_file(opts.upstream_ca, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          fmt::format("{}: cannot load upstream CAs: {}", opts.upstream_ca, ec.message()));
    }
  }
  SSL_CTX_set_min_proto_version(impl->upstream_tls.native_handle(), TLS1_2_VERSION);

  auto audit = Audit::Open(opts.audit_file);
  if (!audit.ok()) return audit.status();
  impl->audit = *std::move(audit);

  if (!opts.listen.empty()) {
    auto parsed = SplitHostPort(opts.listen, 0, /*allow_zero=*/true);
    boost::system::error_code address_ec;
    asio::ip::address address =
        parsed ? asio::ip::make_address(WithoutBrackets(parsed->first), address_ec) : asio::ip::address();
    if (!parsed || address_ec) {
      return absl::InvalidArgumentError(
          fmt::format("--listen {}: expected ADDRESS:PORT such as 127.0.0.1:0", opts.listen));
    }
    asio::ip::tcp::endpoint endpoint(address, parsed->second);
    auto& acceptor = impl->tcp_acceptor.emplace(impl->io);
    acceptor.open(Generic(endpoint.protocol().family(), IPPROTO_TCP), ec);
    if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(Generic::endpoint(endpoint), ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
      return absl::UnavailableError(
          fmt::format("cannot listen on {}: {}", opts.listen, ec.message()));
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    getsockname(acceptor.native_handle(), reinterpret_cast<sockaddr*>(&bound), &length);
    const std::uint16_t port =
        ntohs(bound.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                         : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
    impl->tcp_address = address.is_v6() ? fmt::format("[{}]:{}", address.to_string(), port)
                                        : fmt::format("{}:{}", address.to_string(), port);
  }
  if (!opts.socket.empty()) {
    ::unlink(opts.socket.c_str());
    asio::local::stream_protocol::endpoint endpoint(opts.socket);
    auto& acceptor = impl->unix_acceptor.emplace(impl->io);
    acceptor.open(Generic(AF_UNIX, 0), ec);
    if (!ec) acceptor.bind(Generic::endpoint(endpoint), ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return absl::UnavailableError(
          fmt::format("cannot listen on {}: {}", opts.socket, ec.message()));
    }
  }
  Impl* raw = impl.get();
  // Parsing the system's trust store takes ~20 ms: the serving thread does it
  // first, before any connection, while the caller goes on (starting the
  // sandbox, say).
  asio::post(raw->io, [raw] {
    boost::system::error_code ignored;
    raw->upstream_tls.set_default_verify_paths(ignored);
  });
  if (raw->tcp_acceptor) asio::co_spawn(raw->io, raw->Accept(*raw->tcp_acceptor), asio::detached);
  if (raw->unix_acceptor) asio::co_spawn(raw->io, raw->Accept(*raw->unix_acceptor), asio::detached);
  raw->thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<Proxy>(new Proxy(std::move(impl)));
}

Proxy::Proxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Proxy::~Proxy() {
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  if (!impl_->options.socket.empty()) ::unlink(impl_->options.socket.c_str());
  if (impl_->own_ca_dir) {
    std::error_code ec;
    std::filesystem::remove_all(impl_->options.ca_dir, ec);
  }
}

std::vector<std::string> CredentialHeaders(std::string_view tool) {
  std::vector<std::string> names(std::begin(policy::kCommonCredentialHeaders),
                                 std::end(policy::kCommonCredentialHeaders));
  if (const policy::ToolProfile* profile = policy::FindToolProfile(tool)) {
    for (std::string_view name : profile->credential_headers) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.emplace_back(name);
    }
  }
  return names;
}

std::string Proxy::tcp_address() const { return impl_->tcp_address; }
std::string Proxy::socket_path() const { return impl_->options.socket; }
std::string Proxy::ca_cert_path() const { return impl_->ca_path; }
std::string Proxy::ca_bundle_path() const { return impl_->bundle_path; }

std::map<std::string, std::string> Proxy::Environment() const {
  // Inside a sandbox the supervisor bridges 127.0.0.1:3128 to the socket.
  const std::string proxy =
      "http://" + (impl_->tcp_address.empty() ? std::string("127.0.0.1:3128") : impl_->tcp_address);
  std::map<std::string, std::string> env = {
      {"HTTPS_PROXY", proxy},
      {"HTTP_PROXY", proxy},
      {"https_proxy", proxy},
      {"http_proxy", proxy},
      {"NO_PROXY", "localhost,127.0.0.1,::1"},
      {"no_proxy", "localhost,127.0.0.1,::1"},
      {"NODE_USE_ENV_PROXY", "1"},
      {"SSL_CERT_FILE", impl_->bundle_path},
      {"REQUESTS_CA_BUNDLE", impl_->bundle_path},
      {"CURL_CA_BUNDLE", impl_->bundle_path},
      {"GIT_SSL_CAINFO", impl_->bundle_path},
      {"CODEX_CA_CERTIFICATE", impl_->bundle_path},
      {"NODE_EXTRA_CA_CERTS", impl_->ca_path},
  };
  for (const Credential& credential : impl_->options.vault.credentials()) {
    env[credential.name] = credential.stand_in;
  }
  return env;
}

}  // namespace mojoup::sandbox::credproxy

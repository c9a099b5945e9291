// Escape suite: request smuggling. Malformed and ambiguous messages from
// RFC 9112 and the public request-smuggling research (CL.TE, TE.CL, TE.TE
// with obfuscated codings, repeated fields in other letter cases, signed and
// zero-padded lengths, chunk-size overflow, bare LF, obs-fold), each sent
// the way an agent in a session would: as raw bytes to the proxy, on the
// plain-http path and inside an intercepted tunnel to a host the real key is
// bound to, and each followed on the same connection by a request that
// carries the key's stand-in and a token request that carries a refresh
// token's. The upstreams are a differential pair of careless parsers, one
// that honours the first of repeated fields and one the last
// (tests/support/lenient_parser.h). A message passes only if the proxy
// refused it (400, audited) and no upstream saw a request of it, or both
// upstreams saw one and the same series of requests, none smuggled, and
// never a real key or refresh token in a body it did not belong in.
#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <memory>

#include "../support/lenient_server.h"
#include "../support/proxy_inputs.h"
#include "../support/test_server.h"
#include "../support/test_support.h"
#include "fmt/format.h"
#include "mojoup/credproxy/proxy.h"
#include "mojoup/credproxy/session_ca.h"
#include "mojoup/policy/effective_policy.h"
#include "mojoup/policy/policy.h"
#include "server_tls.h"

using mojoup::test::kReal;
using mojoup::test::Rules;

namespace {

using mojoup::credproxy::Proxy;
using mojoup::credproxy::ProxyOptions;
using mojoup::credproxy::SessionCa;
using mojoup::test::LenientRequest;
using mojoup::test::LenientServer;
using mojoup::test::Repeated;
using mojoup::test::TempDir;

const std::string kRefresh = "rt-REAL-refresh-4f8a9c2e7b1d6053aa";
constexpr const char* kTokenPath = "/oauth/token";

// The start of a request left open: whatever follows it becomes its field,
// or its body, for a server that reads it as a request.
const std::string kSmuggled = "GET /smuggled HTTP/1.1\r\nHost: evil.test\r\nX-Ignore: ";

std::string Chunk(const std::string& data) {
  return fmt::format("{:x}\r\n{}\r\n", data.size(), data);
}

enum class Expect { kRefused, kAccepted };

struct DesyncCase {
  std::string name;
  // "{T}" is the target's start ("http://host:port" on the plain path,
  // nothing in a tunnel), "{H}" the upstream's host:port.
  std::string message;
  Expect expect;
  std::string body;  // accepted: the body the upstreams must both get
};

// POST {T}/desync with Host and `fields`, then `body`.
std::string Post(const std::string& fields, const std::string& body) {
  return "POST {T}/desync HTTP/1.1\r\nHost: {H}\r\n" + fields + "\r\n" + body;
}

// What the cases are built from: a smuggled request (s) and its length,
// the last chunk, a chunked body with s after it, and a TE field's name.
struct DesyncParts {
  std::string s = kSmuggled;
  std::string cl_s = std::to_string(s.size());
  std::string last = "0\r\n\r\n";
  std::string chunked_s = Chunk("x=1") + last + s;
  std::string te = "Transfer-Encoding: ";
};

DesyncCase RefusedCase(std::string name, std::string message) {
  return DesyncCase{std::move(name), std::move(message), Expect::kRefused, ""};
}

// Refused: Transfer-Encoding beside a length, in disguise, or unknown.
std::vector<DesyncCase> TransferEncodingCases(const DesyncParts& p) {
  const std::string& s = p.s;
  const std::string& last = p.last;
  const std::string& chunked_s = p.chunked_s;
  const std::string& te = p.te;
  const auto refused = RefusedCase;
  return {
      refused("CL.TE", Post("Content-Length: " + std::to_string(last.size() + s.size()) + "\r\n" +
                                te + "chunked\r\n",
                            last + s)),
      refused("TE.CL", Post("Content-Length: 4\r\n" + te + "chunked\r\n", Chunk(s) + last)),
      refused("TE.TE identity then chunked",
              Post(te + "identity\r\n" + te + "chunked\r\n", chunked_s)),
      refused("TE.TE chunked then identity",
              Post(te + "chunked\r\n" + te + "identity\r\n", chunked_s)),
      refused("TE list identity, chunked", Post(te + "identity, chunked\r\n", chunked_s)),
      refused("TE list chunked, identity", Post(te + "chunked, identity\r\n", chunked_s)),
      refused("TE gzip, chunked", Post(te + "gzip, chunked\r\n", chunked_s)),
      refused("TE xchunked with CL",
              Post("Content-Length: 3\r\n" + te + "xchunked\r\n", chunked_s)),
      refused("TE and CL in lowercase",
              Post("content-length: 3\r\ntransfer-encoding: chunked\r\n", chunked_s)),
      refused("TE after a vertical tab", Post(te + "\x0b" + "chunked\r\n", chunked_s)),
      refused("TE with space before the colon",
              Post("Transfer-Encoding : chunked\r\nContent-Length: 3\r\n", chunked_s)),
      refused("TE with a tab before the colon",
              Post("Transfer-Encoding\t: chunked\r\nContent-Length: 3\r\n", chunked_s)),
      refused("Transfer_Encoding", Post("Transfer_Encoding: chunked\r\n", chunked_s)),
      refused("TE folded onto the next line",
              Post("Transfer-Encoding:\r\n chunked\r\n", chunked_s)),
      refused("a fold that hides TE",
              Post("X-Fold: a\r\n Transfer-Encoding: chunked\r\nContent-Length: 3\r\n", chunked_s)),
      refused("TE chunked then cow, other case",
              Post(te + "chunked\r\ntransfer-encoding: cow\r\n", chunked_s)),
      refused("TE with a parameter", Post(te + "chunked;q=1\r\n", chunked_s)),
      refused("TE chunked twice in one field", Post(te + "chunked, chunked\r\n", chunked_s)),
      refused("TE empty then chunked", Post(te + "\r\n" + te + "chunked\r\n", chunked_s)),
  };
}

// Refused: lengths two parsers could read two ways, and malformed lines.
std::vector<DesyncCase> LengthAndLineCases(const DesyncParts& p) {
  const std::string& s = p.s;
  const std::string& cl_s = p.cl_s;
  const std::string& chunked_s = p.chunked_s;
  const std::string& te = p.te;
  const auto refused = RefusedCase;
  return {
      refused("CL twice, differing",
              Post("Content-Length: 3\r\nContent-Length: " + cl_s + "\r\n", s)),
      refused("CL twice, differing, other case",
              Post("Content-Length: " + cl_s + "\r\ncontent-LENGTH: 3\r\n", s)),
      refused("CL signed", Post("Content-Length: +" + cl_s + "\r\n", s)),
      refused("CL negative", Post("Content-Length: -1\r\n", s)),
      refused("CL as a list", Post("Content-Length: " + cl_s + ", " + cl_s + "\r\n", s)),
      refused("CL in hex", Post("Content-Length: 0x3\r\n", s)),
      refused("CL past 64 bits", Post("Content-Length: 18446744073709551619\r\n", s)),
      refused("CL with a space inside", Post("Content-Length: 1 2\r\n", s)),
      refused("Content_Length", Post("Content_Length: " + cl_s + "\r\n", s)),
      refused("bare LF throughout",
              "POST {T}/desync HTTP/1.1\nHost: {H}\nContent-Length: " + cl_s + "\n\n" + s),
      refused("a bare LF after one field",
              "POST {T}/desync HTTP/1.1\r\nHost: {H}\nContent-Length: 3\r\n\r\n" + s),
      refused("a bare CR in a value", Post("X-A: a\rContent-Length: 3\r\n", s)),
      refused("a NUL in a value", Post(std::string("X-A: a\0b\r\n", 10), "")),
      refused("obs-fold in any field", Post("X-A: a\r\n\tb\r\n", "")),
      refused("a second Host", Post("Host: evil.test\r\n", "")),
      refused("TE in HTTP/1.0",
              "POST {T}/desync HTTP/1.0\r\nHost: {H}\r\n" + te + "chunked\r\n\r\n" + chunked_s),
      refused("two spaces in the request line", "POST  {T}/desync HTTP/1.1\r\nHost: {H}\r\n\r\n"),
      refused("a tab in the request line", "POST\t{T}/desync HTTP/1.1\r\nHost: {H}\r\n\r\n"),
      refused("a lowercase version", "POST {T}/desync http/1.1\r\nHost: {H}\r\n\r\n"),
  };
}

// Refused: chunk sizes, chunk lines and trailers read two ways.
std::vector<DesyncCase> ChunkCases(const DesyncParts& p) {
  const std::string& s = p.s;
  const std::string& last = p.last;
  const std::string& te = p.te;
  const auto refused = RefusedCase;
  return {
      refused("chunk size past 64 bits",
              Post(te + "chunked\r\n", "fffffffffffffffff3\r\nabc\r\n" + last + s)),
      refused("chunk size 0x", Post(te + "chunked\r\n", "0x3\r\nabc\r\n" + last + s)),
      refused("chunk size signed", Post(te + "chunked\r\n", "+3\r\nabc\r\n" + last + s)),
      refused("chunk size and a space", Post(te + "chunked\r\n", "3 \r\nabc\r\n" + last + s)),
      refused("an empty chunk extension", Post(te + "chunked\r\n", "3;\r\nabc\r\n" + last + s)),
      refused("chunk lines ended by bare LF", Post(te + "chunked\r\n", "3\nabc\n0\n\n" + s)),
      refused("chunk data past its size", Post(te + "chunked\r\n", "3\r\nabcdef\r\n" + last + s)),
      refused("a malformed trailer", Post(te + "chunked\r\n", "3\r\nabc\r\n0\r\nX y\r\n\r\n" + s)),
  };
}

// Accepted (but one): unusual but unambiguous framing, whose body both
// upstreams must get whole.
std::vector<DesyncCase> AcceptedCases(const DesyncParts& p) {
  const std::string& s = p.s;
  const std::string& cl_s = p.cl_s;
  const std::string& last = p.last;
  const std::string& te = p.te;
  const auto refused = RefusedCase;
  return {
      {"TE in capitals",
       Post("TRANSFER-ENCODING: CHUNKED\r\n", Chunk("hello") + Chunk(" world") + last),
       Expect::kAccepted, "hello world"},
      {"TE in white space", Post(te + "\tchunked \r\n", Chunk("hello") + last), Expect::kAccepted,
       "hello"},
      {"CL with leading zeros", Post("Content-Length: 005\r\n", "hello"), Expect::kAccepted,
       "hello"},
      {"CL twice, alike", Post("Content-Length: 5\r\nContent-Length: 5\r\n", "hello"),
       Expect::kAccepted, "hello"},
      {"a chunk extension", Post(te + "chunked\r\n", "5;name=value\r\nhello\r\n" + last),
       Expect::kAccepted, "hello"},
      {"a folded trailer", Post(te + "chunked\r\n", "5\r\nhello\r\n0\r\nX-T: a\r\n b\r\n\r\n"),
       Expect::kAccepted, "hello"},
      refused("a trailer naming a length",
              Post(te + "chunked\r\n", "5\r\nhello\r\n0\r\nContent-Length: 50\r\n\r\n")),
      {"Connection naming Content-Length",
       Post("Connection: Content-Length\r\nContent-Length: 5\r\n", "hello"), Expect::kAccepted,
       "hello"},
      {"a request in a body, by length", Post("Content-Length: " + cl_s + "\r\n", s),
       Expect::kAccepted, s},
      {"a request in a body, chunked", Post(te + "chunked\r\n", Chunk(s) + last), Expect::kAccepted,
       s},
      {"a GET with a body",
       "GET {T}/desync HTTP/1.1\r\nHost: {H}\r\nContent-Length: 5\r\n\r\nhello", Expect::kAccepted,
       "hello"},
      {"a hundred one-byte chunks",
       Post(te + "chunked\r\n",
            [&] {
              std::string body;
              for (int i = 0; i < 100; ++i)
                body += Chunk(std::string(1, static_cast<char>('a' + i % 26)));
              return body + last;
            }()),
       Expect::kAccepted,
       [] {
         std::string body;
         for (int i = 0; i < 100; ++i) body += static_cast<char>('a' + i % 26);
         return body;
       }()},
      {"zero-padded chunk sizes", Post(te + "chunked\r\n", "0005\r\nhello\r\n0000\r\n\r\n"),
       Expect::kAccepted, "hello"},
      {"an empty chunked body", Post(te + "chunked\r\n", last), Expect::kAccepted, ""},
      {"an empty chunked body with an extension", Post(te + "chunked\r\n", "0;x=y\r\n\r\n"),
       Expect::kAccepted, ""},
  };
}

std::vector<DesyncCase> Cases() {
  const DesyncParts parts;
  std::vector<DesyncCase> cases;
  for (auto part : {TransferEncodingCases, LengthAndLineCases, ChunkCases, AcceptedCases}) {
    std::vector<DesyncCase> more = part(parts);
    cases.insert(cases.end(), more.begin(), more.end());
  }
  return cases;
}

std::string Fill(std::string text, const std::string& target, const std::string& host) {
  for (auto [mark, value] : {std::pair{std::string("{T}"), target}, {std::string("{H}"), host}}) {
    for (std::size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at)) {
      text.replace(at, mark.size(), value);
      at += value.size();
    }
  }
  return text;
}

// A connection to the proxy: plain, or TLS inside a CONNECT tunnel.
class Client {
 public:
  Client(const std::string& proxy_address, const std::string& tunnel) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    const std::size_t colon = proxy_address.rfind(':');
    address.sin_port =
        htons(static_cast<std::uint16_t>(std::stoi(proxy_address.substr(colon + 1))));
    inet_pton(AF_INET, proxy_address.substr(0, colon).c_str(), &address.sin_addr);
    REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    timeval limit{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    if (tunnel.empty()) return;
    const std::string connect_request =
        fmt::format("CONNECT {} HTTP/1.1\r\nHost: {}\r\n\r\n", tunnel, tunnel);
    REQUIRE(send(fd_, connect_request.data(), connect_request.size(), MSG_NOSIGNAL) > 0);
    std::string answer;
    char byte;
    while (answer.find("\r\n\r\n") == std::string::npos && recv(fd_, &byte, 1, 0) == 1) {
      answer += byte;
    }
    REQUIRE_THAT(answer, Catch::Matchers::StartsWith("HTTP/1.1 200"));
    context_.reset(SSL_CTX_new(TLS_client_method()));
    ssl_.reset(SSL_new(context_.get()));
    SSL_set_fd(ssl_.get(), fd_);
    const std::string host = tunnel.substr(0, tunnel.rfind(':'));
    SSL_set_tlsext_host_name(ssl_.get(), host.c_str());
    REQUIRE(SSL_connect(ssl_.get()) == 1);
  }
  ~Client() {
    ssl_.reset();
    context_.reset();
    close(fd_);
  }

  // Sends `bytes`, ends the sending side, and returns all the proxy sent.
  std::string Exchange(const std::string& bytes) {
    if (ssl_) {
      REQUIRE(SSL_write(ssl_.get(), bytes.data(), static_cast<int>(bytes.size())) ==
              static_cast<int>(bytes.size()));
      SSL_shutdown(ssl_.get());
    } else {
      REQUIRE(send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
              static_cast<ssize_t>(bytes.size()));
      shutdown(fd_, SHUT_WR);
    }
    std::string got;
    char buffer[4096];
    for (;;) {
      const int n = ssl_ ? SSL_read(ssl_.get(), buffer, sizeof buffer)
                         : static_cast<int>(recv(fd_, buffer, sizeof buffer, 0));
      if (n <= 0) break;
      got.append(buffer, static_cast<std::size_t>(n));
    }
    return got;
  }

 private:
  int fd_ = -1;
  struct FreeContext {
    void operator()(SSL_CTX* context) const { SSL_CTX_free(context); }
  };
  struct FreeSsl {
    void operator()(SSL* ssl) const { SSL_free(ssl); }
  };
  std::unique_ptr<SSL_CTX, FreeContext> context_;
  std::unique_ptr<SSL, FreeSsl> ssl_;
};

// The proxy in process with one credential and one refresh token bound to
// the intercepted upstreams; the plain upstreams are plain http.
struct DesyncWorld {
  TempDir dir;
  std::unique_ptr<SessionCa> upstream_ca = *SessionCa::Create("desync upstream CA");
  LenientServer plain_first{Repeated::kFirst};
  LenientServer plain_last{Repeated::kLast};
  LenientServer api_first{Repeated::kFirst, *upstream_ca->ServerContext("api-first.test")};
  LenientServer api_last{Repeated::kLast, *upstream_ca->ServerContext("api-last.test")};
  std::string audit;
  std::string stand_in;
  std::string refresh_stand_in;
  std::unique_ptr<Proxy> proxy;

  DesyncWorld() {
    ProxyOptions options;
    options.listen = "127.0.0.1:0";
    options.idle_timeout = std::chrono::seconds(5);
    options.upstream_ca = dir.Write("upstream-ca.pem", upstream_ca->certificate_pem());
    audit = dir / "audit.jsonl";
    options.audit_file = audit;
    std::string allow;
    for (auto [host, server] : Upstreams()) {
      options.pins[fmt::format("{}:{}", host, server->port())] = "127.0.0.1";
      allow += fmt::format(R"({}{{"host": "{}", "ports": [{}]}})", allow.empty() ? "" : ",", host,
                           server->port());
    }
    options.rules = Rules(R"({"agents": {"network": {"allow": [)" + allow + "]}}}");
    stand_in = *options.vault.Add("ACME_KEY", kReal, {"api-first.test", "api-last.test"});
    mojoup::credproxy::SignInToken refresh;
    refresh.name = "acme refresh";
    refresh.value = kRefresh;
    refresh.sign_in = "acme";
    refresh.role = mojoup::credproxy::TokenRole::kRefresh;
    for (const char* host : {"api-first.test", "api-last.test"}) {
      refresh.endpoints.push_back({host, kTokenPath, true, "refresh_token"});
    }
    refresh_stand_in = *options.vault.AddToken(refresh);
    auto started = Proxy::Start(std::move(options));
    REQUIRE(started.ok());
    proxy = std::move(*started);
  }

  std::vector<std::pair<std::string, LenientServer*>> Upstreams() {
    return {{"plain-first.test", &plain_first},
            {"plain-last.test", &plain_last},
            {"api-first.test", &api_first},
            {"api-last.test", &api_last}};
  }
};

// What one upstream of the pair saw of one message and what followed it.
struct Seen {
  std::string answer;  // what the client got
  std::vector<LenientRequest> requests;
  std::vector<std::string> leftovers;
};

Seen Send(DesyncWorld& world, LenientServer& upstream, const std::string& host, bool tunnel,
          const DesyncCase& desync) {
  upstream.Clear();
  const std::string authority = fmt::format("{}:{}", host, upstream.port());
  const std::string target = tunnel ? "" : "http://" + authority;
  std::string bytes = Fill(desync.message, target, authority);
  // What an agent sends next on the same connection: the key's stand-in in
  // its header, then a refresh (inside the tunnel, where both are swapped).
  if (tunnel) {
    bytes += Fill("GET {T}/next HTTP/1.1\r\nHost: {H}\r\nx-api-key: " + world.stand_in + "\r\n\r\n",
                  target, authority);
    const std::string form = "grant_type=refresh_token&refresh_token=" + world.refresh_stand_in;
    bytes += Fill(fmt::format("POST {{T}}{} HTTP/1.1\r\nHost: {{H}}\r\nContent-Type: "
                              "application/x-www-form-urlencoded\r\nContent-Length: {}\r\n"
                              "Connection: close\r\n\r\n{}",
                              kTokenPath, form.size(), form),
                  target, authority);
  } else {
    bytes +=
        Fill("GET {T}/next HTTP/1.1\r\nHost: {H}\r\nConnection: close\r\n\r\n", target, authority);
  }
  Client client(world.proxy->tcp_address(), tunnel ? authority : "");
  Seen seen;
  seen.answer = client.Exchange(bytes);
  REQUIRE(upstream.WaitIdle(std::chrono::seconds(10)));
  seen.requests = upstream.seen();
  seen.leftovers = upstream.leftovers();
  return seen;
}

std::string Describe(const Seen& seen) {
  std::string text = "answer: " + seen.answer.substr(0, 600) + "\nrequests:";
  for (const LenientRequest& request : seen.requests) {
    text += fmt::format("\n  {} {} host={} body={}", request.method, request.target, request.host,
                        request.body.substr(0, 200));
  }
  for (const std::string& leftover : seen.leftovers)
    text += "\nleftover: " + leftover.substr(0, 200);
  return text;
}

// Nothing smuggled, and no real secret in a body it does not belong in.
void RequireClean(const Seen& seen) {
  for (const LenientRequest& request : seen.requests) {
    REQUIRE(request.target.find("smuggled") == std::string::npos);
    REQUIRE(request.host.find("evil") == std::string::npos);
    REQUIRE(request.body.find(kReal) == std::string::npos);
    if (request.body.find(kRefresh) != std::string::npos) {
      REQUIRE(request.method == "POST");
      REQUIRE(request.target == kTokenPath);
      REQUIRE(request.body == "grant_type=refresh_token&refresh_token=" + kRefresh);
    }
  }
}

}  // namespace

TEST_CASE("escape: no message smuggles a request past the proxy on either path",
          "[escape][proxy][desync]") {
  DesyncWorld world;
  const std::vector<DesyncCase> cases = Cases();
  REQUIRE(cases.size() >= 40);
  std::size_t refusals_audited = 0;
  for (bool tunnel : {false, true}) {
    for (const DesyncCase& desync : cases) {
      INFO((tunnel ? "intercepted: " : "plain http: ") << desync.name);
      const std::string prefix = tunnel ? "api" : "plain";
      const Seen first = Send(world, tunnel ? world.api_first : world.plain_first,
                              prefix + "-first.test", tunnel, desync);
      const Seen last = Send(world, tunnel ? world.api_last : world.plain_last,
                             prefix + "-last.test", tunnel, desync);
      INFO("first-field upstream: " << Describe(first));
      INFO("last-field upstream: " << Describe(last));
      RequireClean(first);
      RequireClean(last);
      if (desync.expect == Expect::kRefused) {
        for (const Seen* seen : {&first, &last}) {
          REQUIRE_THAT(seen->answer, Catch::Matchers::StartsWith("HTTP/1.1 400"));
          REQUIRE(seen->requests.empty());
        }
        ++refusals_audited;
        continue;
      }
      // Both read one and the same series of requests, the message's body whole.
      REQUIRE(first.requests.size() == last.requests.size());
      REQUIRE(first.requests.size() >= 2);
      for (std::size_t i = 0; i < first.requests.size(); ++i) {
        REQUIRE(first.requests[i].method == last.requests[i].method);
        REQUIRE(first.requests[i].target == last.requests[i].target);
        REQUIRE(first.requests[i].body == last.requests[i].body);
      }
      REQUIRE(first.requests[0].body == desync.body);
      REQUIRE(first.requests[1].target == "/next");
      if (tunnel) REQUIRE(first.requests[1].Header("x-api-key") == kReal);
      REQUIRE(first.leftovers.empty());
      REQUIRE(last.leftovers.empty());
    }
  }
  // Every refusal is in the audit, saying why in a sentence.
  const std::string audit = mojoup::test::Slurp(world.audit);
  std::size_t lines = 0;
  for (std::size_t at = audit.find("refused a request whose"); at != std::string::npos;
       at = audit.find("refused a request whose", at + 1)) {
    ++lines;
  }
  REQUIRE(lines == 2 * refusals_audited);
}

namespace {

// An upstream that answers every request head it reads with the bytes
// `answer` gives for its connection's number (0 first), as a hostile or
// broken server would: plain, or TLS with `tls`.
class RawAnswers {
 public:
  RawAnswers(std::function<std::string(int)> answer,
             std::shared_ptr<mojoup::credproxy::ServerTls> tls = nullptr)
      : answer_(std::move(answer)), tls_(std::move(tls)) {
    server_ = std::make_unique<mojoup::test::ThreadServer>(
        "127.0.0.1", 0, [this](boost::asio::ip::tcp::socket& socket) {
          const int connection = next_++;
          if (!tls_) return Serve(socket, connection);
          boost::system::error_code ec;
          boost::asio::ssl::stream<boost::asio::ip::tcp::socket&> stream(socket, tls_->context());
          stream.handshake(boost::asio::ssl::stream_base::server, ec);
          if (!ec) Serve(stream, connection);
        });
  }
  unsigned short port() const { return server_->port(); }
  int connections() const { return server_->accepted(); }

 private:
  template <class Stream>
  void Serve(Stream& stream, int connection) {
    std::string bytes;
    char buffer[4096];
    boost::system::error_code ec;
    for (;;) {
      const std::size_t got = stream.read_some(boost::asio::buffer(buffer), ec);
      if (ec) return;
      bytes.append(buffer, got);
      for (std::size_t end = bytes.find("\r\n\r\n"); end != std::string::npos;
           end = bytes.find("\r\n\r\n")) {
        bytes.erase(0, end + 4);
        boost::asio::write(stream, boost::asio::buffer(answer_(connection)), ec);
      }
    }
  }
  std::function<std::string(int)> answer_;
  std::shared_ptr<mojoup::credproxy::ServerTls> tls_;
  std::atomic<int> next_{0};
  std::unique_ptr<mojoup::test::ThreadServer> server_;  // last: it stops first
};

// A proxy in process that allows `host`:`port` only, with the key bound to
// api.test (so that api.test is intercepted).
std::unique_ptr<Proxy> ProxyFor(const TempDir& dir, const SessionCa& upstream_ca,
                                const std::string& host, unsigned short port) {
  ProxyOptions options;
  options.listen = "127.0.0.1:0";
  options.upstream_ca = dir.Write("upstream-ca.pem", upstream_ca.certificate_pem());
  options.pins[fmt::format("{}:{}", host, port)] = "127.0.0.1";
  options.rules = Rules(
      fmt::format(R"({{"agents": {{"network": {{"allow": [{{"host": "{}", "ports": [{}]}}]}}}}}})",
                  host, port));
  REQUIRE(options.vault.Add("ACME_KEY", kReal, {"api.test"}).ok());
  auto proxy = Proxy::Start(std::move(options));
  REQUIRE(proxy.ok());
  return *std::move(proxy);
}

}  // namespace

TEST_CASE("escape: an upstream's ambiguous answer or unasked bytes never reach the sandbox",
          "[escape][proxy][desync]") {
  TempDir dir;
  std::unique_ptr<SessionCa> upstream_ca = *SessionCa::Create("desync upstream CA");
  auto tls = *upstream_ca->ServerContext("api.test");
  const std::vector<std::pair<std::string, std::string>> ambiguous = {
      {"TE and CL", "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"},
      {"TE twice", "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\nok"},
      {"CL twice, differing", "Content-Length: 2\r\nContent-Length: 20\r\n\r\nok"},
      {"obs-fold", "X-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok"},
      {"a bare LF", "Content-Length: 2\n\r\nok"},
  };
  for (bool intercepted : {false, true}) {
    const std::string host = intercepted ? "api.test" : "plain.test";
    for (const auto& [name, rest] : ambiguous) {
      INFO((intercepted ? "intercepted: " : "plain: ") << name);
      RawAnswers upstream([&rest = rest](int) { return "HTTP/1.1 200 OK\r\n" + rest; },
                          intercepted ? tls : nullptr);
      const std::string authority = fmt::format("{}:{}", host, upstream.port());
      auto proxy = ProxyFor(dir, *upstream_ca, host, upstream.port());
      Client client(proxy->tcp_address(), intercepted ? authority : "");
      const std::string answer =
          client.Exchange(Fill("GET {T}/x HTTP/1.1\r\nHost: {H}\r\n\r\n",
                               intercepted ? "" : "http://" + authority, authority));
      REQUIRE_THAT(answer, Catch::Matchers::StartsWith("HTTP/1.1 502"));
      REQUIRE_THAT(answer, Catch::Matchers::Contains("could be read two ways"));
    }
    // Response-queue poisoning: a second answer the client never asked for,
    // sent behind the first, is never taken for the next request's answer.
    INFO((intercepted ? "intercepted" : "plain") << ": an answer nobody asked for");
    RawAnswers upstream(
        [](int connection) {
          return fmt::format("HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nfresh-{}", connection) +
                 "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nPOISON";
        },
        intercepted ? tls : nullptr);
    const std::string authority = fmt::format("{}:{}", host, upstream.port());
    auto proxy = ProxyFor(dir, *upstream_ca, host, upstream.port());
    const std::string target = intercepted ? "" : "http://" + authority;
    Client client(proxy->tcp_address(), intercepted ? authority : "");
    const std::string answers =
        client.Exchange(Fill("GET {T}/1 HTTP/1.1\r\nHost: {H}\r\n\r\nGET {T}/2 HTTP/1.1\r\nHost: "
                             "{H}\r\nConnection: close\r\n\r\n",
                             target, authority));
    INFO(answers);
    REQUIRE(answers.find("POISON") == std::string::npos);
    REQUIRE_THAT(answers, Catch::Matchers::Contains("fresh-0"));
    REQUIRE_THAT(answers, Catch::Matchers::Contains("fresh-1"));
    REQUIRE(upstream.connections() == 2);
  }
}

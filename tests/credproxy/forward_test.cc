// Plain-http forwarding over kept upstream connections, large bodies on
// every path, and which real values a response from each host is scrubbed
// of.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "../support/connect_tunnel.h"
#include "../support/echo_server.h"
#include "../support/proxy_inputs.h"
#include "../support/test_server.h"
#include "../support/test_support.h"
#include "fmt/format.h"
#include "mojoup/credproxy/proxy.h"
#include "mojoup/credproxy/session_ca.h"
#include "mojoup/credproxy/vault.h"
#include "mojoup/policy/policy.h"

using namespace mojoup::credproxy;
using mojoup::test::TempDir;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

using mojoup::test::kReal;
using mojoup::test::Rules;

namespace {

// An upstream that answers each request with "ok" as keep-alive, then
// hangs up after `answers` of them anyway, as some servers do when idle.
class HangingUpServer {
 public:
  explicit HangingUpServer(int answers)
      : answers_(answers),
        server_("127.0.0.1", 0, [this](asio::ip::tcp::socket& socket) { Serve(socket); }) {}
  unsigned short port() const { return server_.port(); }
  // Waits until `count` connections have been closed by the server.
  bool WaitClosed(int count) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return closed_ >= count; });
  }
  int accepted() {
    std::lock_guard lock(mu_);
    return accepted_;
  }

 private:
  void Serve(asio::ip::tcp::socket& socket) {
    {
      std::lock_guard lock(mu_);
      ++accepted_;
    }
    beast::flat_buffer buffer;
    for (int i = 0; i < answers_; ++i) {
      http::request<http::string_body> request;
      beast::error_code ec;
      http::read(socket, buffer, request, ec);
      if (ec) break;
      asio::write(socket,
                  asio::buffer(std::string("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")), ec);
    }
    socket.close();
    std::lock_guard lock(mu_);
    ++closed_;
    changed_.notify_all();
  }

  int answers_;
  std::mutex mu_;
  std::condition_variable changed_;
  int accepted_ = 0;
  int closed_ = 0;
  mojoup::test::ThreadServer server_;
};

// An upstream that reads a request, then answers with only a head and part
// of its body (`part`), or nothing at all (no `part`), and then stays silent
// on the open connection until it is destroyed.
class StallingServer {
 public:
  explicit StallingServer(std::optional<std::string> part)
      : part_(std::move(part)),
        server_("127.0.0.1", 0, [this](asio::ip::tcp::socket& socket) { Serve(socket); }) {}
  ~StallingServer() {
    std::lock_guard lock(mu_);
    stopping_ = true;
    changed_.notify_all();
  }
  unsigned short port() const { return server_.port(); }

 private:
  void Serve(asio::ip::tcp::socket& socket) {
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    beast::error_code ec;
    http::read(socket, buffer, request, ec);
    if (ec) return;
    if (part_) {
      asio::write(
          socket,
          asio::buffer(fmt::format("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n{}", *part_)),
          ec);
    }
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return stopping_; });
  }

  std::optional<std::string> part_;
  std::mutex mu_;
  std::condition_variable changed_;
  bool stopping_ = false;
  mojoup::test::ThreadServer server_;
};

// The proxy in process: plain.test and again.test are plain-http upstreams,
// hangs.test one that hangs up, silent.test one that never answers and
// stalls.test one that stops mid-body, api.test (ACME_KEY bound) a TLS one.
struct ForwardWorld {
  TempDir dir;
  std::unique_ptr<SessionCa> upstream_ca = *SessionCa::Create("upstream test CA");
  mojoup::test::EchoServer plain;
  mojoup::test::EchoServer again;
  HangingUpServer hangs{1};
  StallingServer silent{std::nullopt};
  StallingServer stalls{std::string("0123456789")};
  mojoup::test::EchoServer api{*upstream_ca->ServerContext("api.test")};
  std::unique_ptr<Proxy> proxy;
  std::string stand_in;

  explicit ForwardWorld(std::chrono::milliseconds idle = std::chrono::minutes(2)) {
    ProxyOptions options;
    options.listen = "127.0.0.1:0";
    options.idle_timeout = idle;
    options.upstream_ca = dir.Write("upstream-ca.pem", upstream_ca->certificate_pem());
    options.rules = Rules(fmt::format(
        R"({{"agents": {{"network": {{"allow": [{{"host": "plain.test", "ports": [{}]}},
            {{"host": "again.test", "ports": [{}]}}, {{"host": "hangs.test", "ports": [{}]}},
            {{"host": "silent.test", "ports": [{}]}}, {{"host": "stalls.test", "ports": [{}]}},
            {{"host": "api.test", "ports": [{}]}}]}}}}}})",
        plain.port(), again.port(), hangs.port(), silent.port(), stalls.port(), api.port()));
    for (auto [host, port] : {std::pair{"plain.test", plain.port()},
                              {"again.test", again.port()},
                              {"hangs.test", hangs.port()},
                              {"silent.test", silent.port()},
                              {"stalls.test", stalls.port()},
                              {"api.test", api.port()}}) {
      options.pins[fmt::format("{}:{}", host, port)] = "127.0.0.1";
    }
    stand_in = *options.vault.Add("ACME_KEY", kReal, {"api.test"});
    auto started = Proxy::Start(std::move(options));
    REQUIRE(started.ok());
    proxy = std::move(*started);
  }

  asio::ip::tcp::endpoint Endpoint() const {
    const std::string address = proxy->tcp_address();
    const auto colon = address.rfind(':');
    return {asio::ip::make_address(address.substr(0, colon)),
            static_cast<unsigned short>(std::stoi(address.substr(colon + 1)))};
  }
};

// One client connection to the proxy, sending absolute-form requests.
struct PlainClient {
  asio::io_context io;
  asio::ip::tcp::socket socket{io};
  beast::flat_buffer buffer;

  explicit PlainClient(const ForwardWorld& world) { socket.connect(world.Endpoint()); }

  http::response<http::string_body> Get(const std::string& host, unsigned short port,
                                        const std::string& path, const std::string& body = "") {
    http::request<http::string_body> request{body.empty() ? http::verb::get : http::verb::post,
                                             fmt::format("http://{}:{}{}", host, port, path), 11};
    request.set(http::field::host, fmt::format("{}:{}", host, port));
    request.body() = body;
    request.prepare_payload();
    http::write(socket, request);
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    http::read(socket, buffer, parser);
    return parser.release();
  }
};

// One client connection to api.test through the proxy's CONNECT, its TLS
// terminated by the proxy (interception: ACME_KEY is bound to api.test).
struct InterceptedClient {
  asio::io_context io;
  asio::ip::tcp::socket socket{io};
  beast::flat_buffer buffer;
  asio::ssl::context context{asio::ssl::context::tls_client};
  asio::ssl::stream<asio::ip::tcp::socket&> tls{socket, context};
  std::string target;

  explicit InterceptedClient(const ForwardWorld& world)
      : target(fmt::format("api.test:{}", world.api.port())) {
    socket.connect(world.Endpoint());
    mojoup::test::OpenTunnel(socket, buffer, target);
    context.load_verify_file(world.proxy->ca_cert_path());
    SSL_set_tlsext_host_name(tls.native_handle(), "api.test");
    tls.set_verify_mode(asio::ssl::verify_peer);
    tls.handshake(asio::ssl::stream_base::client);
  }
};

}  // namespace

TEST_CASE("plain http: one client's requests to a host share one upstream connection",
          "[proxy][forward]") {
  ForwardWorld world;
  PlainClient client(world);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(client.Get("plain.test", world.plain.port(), "/get").result_int() == 200);
  }
  REQUIRE(client.Get("again.test", world.again.port(), "/other").result_int() == 200);
  REQUIRE(client.Get("plain.test", world.plain.port(), "/back").result_int() == 200);
  CHECK(world.plain.seen().size() == 4);
  // Three requests over one connection; the other host's came between the
  // fourth and them, so the fourth needed a new one.
  CHECK(world.plain.connections() == 2);
  CHECK(world.again.connections() == 1);
  // Another client never rides on this client's upstream.
  PlainClient other(world);
  REQUIRE(other.Get("plain.test", world.plain.port(), "/get").result_int() == 200);
  CHECK(world.plain.connections() == 3);
}

TEST_CASE("plain http: an upstream that hung up on its kept connection gets a new one",
          "[proxy][forward]") {
  ForwardWorld world;
  PlainClient client(world);
  auto first = client.Get("hangs.test", world.hangs.port(), "/one");
  REQUIRE(first.result_int() == 200);
  REQUIRE(first.body() == "ok");
  REQUIRE(world.hangs.WaitClosed(1));
  auto second = client.Get("hangs.test", world.hangs.port(), "/two");
  REQUIRE(second.result_int() == 200);
  CHECK(second.body() == "ok");
  CHECK(world.hangs.accepted() == 2);
}

TEST_CASE("plain http: a stand-in is refused on a kept connection as on a new one",
          "[proxy][forward]") {
  ForwardWorld world;
  PlainClient client(world);
  REQUIRE(client.Get("plain.test", world.plain.port(), "/first").result_int() == 200);
  auto refused = client.Get("plain.test", world.plain.port(), "/post", "key=" + world.stand_in);
  CHECK(refused.result_int() == 403);
  CHECK(std::string(refused["X-Mojoup-Proxy-Error"]) == "credential-host-mismatch");
  REQUIRE(world.plain.seen().size() == 1);
  CHECK(world.plain.seen()[0].target == "/first");
}

TEST_CASE("large bodies arrive whole through forwarding and interception", "[proxy][forward]") {
  ForwardWorld world;
  const std::size_t size = (3 << 20) + 12345;
  PlainClient client(world);
  auto plain = client.Get("plain.test", world.plain.port(), fmt::format("/bytes/{}", size));
  REQUIRE(plain.result_int() == 200);
  CHECK(plain.body() == std::string(size, 'x'));

  InterceptedClient client_tls(world);
  auto& tls = client_tls.tls;
  auto& buffer = client_tls.buffer;
  const std::string& target = client_tls.target;
  for (int i = 0; i < 2; ++i) {  // and again on the kept-alive connection
    http::request<http::empty_body> request{http::verb::get, fmt::format("/bytes/{}", size), 11};
    request.set(http::field::host, target);
    request.set("x-api-key", world.stand_in);
    http::write(tls, request);
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    http::read(tls, buffer, parser);
    REQUIRE(parser.get().result_int() == 200);
    CHECK(parser.get().body() == std::string(size, 'x'));
  }
  CHECK(world.api.seen().back().Header("x-api-key") == kReal);
}

TEST_CASE("interception: an event reaches the client while the stream goes quiet after it",
          "[proxy][forward]") {
  // The upstream sends one chunk of a stream, then nothing until the client
  // has it: the proxy must not hold the event back waiting for more (as
  // with Beast's parser keeping the chunk's closing CRLF for later).
  ForwardWorld world;
  InterceptedClient client(world);
  http::request<http::empty_body> request{http::verb::get, "/hold", 11};
  request.set(http::field::host, client.target);
  request.set("x-api-key", world.stand_in);
  http::write(client.tls, request);
  http::response_parser<http::string_body> parser;
  beast::error_code ec;
  while (!ec && parser.get().body().find("data: first") == std::string::npos) {
    // Within 5 s, head and event: the server holds its last chunk for 30.
    bool read = false;
    http::async_read_some(client.tls, client.buffer, parser, [&](beast::error_code e, std::size_t) {
      ec = e;
      read = true;
    });
    client.io.restart();
    client.io.run_for(std::chrono::seconds(5));
    REQUIRE(read);
  }
  REQUIRE_FALSE(ec);
  REQUIRE(parser.get().result_int() == 200);
  REQUIRE(parser.get().body().find("last") == std::string::npos);
  world.api.Release();
  http::read(client.tls, client.buffer, parser, ec);
  REQUIRE_FALSE(ec);
  CHECK(parser.get().body() == "data: first\n\ndata: last\n\n");
}

TEST_CASE("a host's responses are scrubbed of the real values that host can know",
          "[vault][reflect]") {
  Vault vault;
  REQUIRE(vault.Add("ACME_KEY", kReal, {"api.test", "mirror.test"}).ok());
  REQUIRE(vault.Add("OTHER_KEY", "ghp_0therH0stOnlyKey1234567890abcdef", {"other.test"}).ok());
  const std::string access = "at-Qz8xWv2Lm4Np6Rs8Tu0Vw2Xy4Za6Bc8";
  const std::string refresh = "rt-Hj3kLm5Np7Qr9St1Uv3Wx5Yz7Ab9Cd1";
  REQUIRE(vault.AddToken({"s access", access, "s", TokenRole::kAccess, {"chat.test"}, {}}).ok());
  REQUIRE(vault
              .AddToken({"s refresh",
                         refresh,
                         "s",
                         TokenRole::kRefresh,
                         {},
                         {TokenEndpoint{"auth.test", "/oauth/token", false, "refresh_token"}}})
              .ok());
  auto reals = [&](std::string_view host) {
    std::set<std::string> found;
    for (const auto& reflection : vault.Reflections(host)) {
      for (const std::string& real :
           {kReal, std::string("ghp_0therH0stOnlyKey1234567890abcdef"), access, refresh}) {
        if (reflection.real == real) found.insert(real);
      }
    }
    return found;
  };
  CHECK(reals("api.test") == std::set<std::string>{kReal});
  CHECK(reals("mirror.test") == std::set<std::string>{kReal});
  CHECK(reals("other.test") == std::set<std::string>{"ghp_0therH0stOnlyKey1234567890abcdef"});
  // A sign-in's tokens together, at each host any of them goes to: the
  // token endpoint issued the access token it never receives.
  CHECK(reals("auth.test") == std::set<std::string>{access, refresh});
  CHECK(reals("chat.test") == std::set<std::string>{access, refresh});
  CHECK(vault.Reflections("elsewhere.test").empty());
  // Each real value with its base64 forms, as the whole vault has them.
  CHECK(vault.Reflections("api.test").size() + vault.Reflections("other.test").size() +
            vault.Reflections("auth.test").size() ==
        vault.Reflections().size());
}

TEST_CASE("plain http: an upstream that goes quiet is given up after the idle timeout",
          "[proxy][forward]") {
  ForwardWorld world(std::chrono::milliseconds(300));
  SECTION("no answer at all: a 502 that says so") {
    PlainClient client(world);
    auto response = client.Get("silent.test", world.silent.port(), "/");
    CHECK(response.result_int() == 502);
    CHECK_THAT(response.body(), Catch::Matchers::Contains("sent no response within 0.3 s"));
  }
  SECTION("a body that stops midway: the client has what came, then the end") {
    PlainClient client(world);
    asio::write(client.socket, asio::buffer(fmt::format("GET http://stalls.test:{0}/ HTTP/1.1\r\n"
                                                        "Host: stalls.test:{0}\r\n\r\n",
                                                        world.stalls.port())));
    std::string got;
    char piece[4096];
    for (;;) {
      beast::error_code ec;
      const std::size_t n = client.socket.read_some(asio::buffer(piece), ec);
      got.append(piece, n);
      if (ec) {
        CHECK(ec == asio::error::eof);
        break;
      }
    }
    CHECK_THAT(got, Catch::Matchers::StartsWith("HTTP/1.1 200 OK"));
    CHECK_THAT(got, Catch::Matchers::EndsWith("\r\n\r\n0123456789"));
  }
}

#include "echo_server.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <thread>

#include "fmt/format.h"
#include "server_tls.h"
#include "test_server.h"

namespace mojoup::test {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

std::string Str(beast::string_view text) { return std::string(text.data(), text.size()); }

// The value of `name` in the target's query ("" when absent).
std::string QueryValue(const std::string& target, const std::string& name) {
  const std::size_t query = target.find('?');
  if (query == std::string::npos) return {};
  std::size_t start = query + 1;
  while (start < target.size()) {
    std::size_t end = target.find('&', start);
    if (end == std::string::npos) end = target.size();
    const std::string pair = target.substr(start, end - start);
    const std::size_t equals = pair.find('=');
    if (pair.substr(0, equals) == name) {
      return equals == std::string::npos ? "1" : pair.substr(equals + 1);
    }
    start = end + 1;
  }
  return {};
}

// Answers a /reflect request (see the header) or a TRACE.
template <class Stream>
void Reflect(Stream& stream, const http::request<http::string_body>& request,
             const SeenRequest& record, beast::error_code& ec) {
  const bool trace =
      request.method() == http::verb::trace || record.method == "TRACE" || record.method == "trace";
  std::string text;
  http::response<http::empty_body> response{http::status::ok, request.version()};
  response.set(http::field::server, "echo");
  if (trace) {
    text = fmt::format("{} {} HTTP/1.1\r\n", record.method, record.target);
    for (const auto& field : request) {
      text += fmt::format("{}: {}\r\n", Str(field.name_string()), Str(field.value()));
    }
    text += "\r\n";
    response.set(http::field::content_type, "message/http");
  } else {
    text = "target: " + record.target + "\n";
    for (const auto& field : request) {
      text += fmt::format("{}: {}\n", Str(field.name_string()), Str(field.value()));
      response.set("X-Echo-" + Str(field.name_string()), Str(field.value()));
    }
    text += request.body();
    response.set("X-Echo-Target", record.target);
    response.set(http::field::content_type, "text/plain");
    if (QueryValue(record.target, "b64") == "1") text = Base64(text);
  }
  if (QueryValue(record.target, "gzip") == "1") {
    text = Gzip(text);
    response.set(http::field::content_encoding, "gzip");
  } else if (QueryValue(record.target, "deflate") == "1") {
    text = Gzip(text, /*zlib_only=*/true);
    response.set(http::field::content_encoding, "deflate");
  }
  const bool chunked = QueryValue(record.target, "chunked") == "1";
  std::size_t split = text.size();
  if (const std::string n = QueryValue(record.target, "split"); !n.empty()) split = std::stoul(n);
  if (split == 0) split = 1;
  if (chunked) {
    response.chunked(true);
  } else {
    response.content_length(text.size());
  }
  response.keep_alive(request.keep_alive());
  http::response_serializer<http::empty_body> serializer{response};
  http::write_header(stream, serializer, ec);
  if (request.method() == http::verb::head) return;  // the head a GET would get, alone
  for (std::size_t at = 0; !ec && at < text.size(); at += split) {
    const std::string piece = text.substr(at, split);
    if (chunked) {
      asio::write(stream, http::make_chunk(asio::buffer(piece)), ec);
    } else {
      asio::write(stream, asio::buffer(piece), ec);
    }
    if (split < text.size()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (!ec && chunked) asio::write(stream, http::make_chunk_last(), ec);
}

// GET /hold: a chunked answer whose first chunk goes at once and whose
// last waits for `gate` (EchoServer::Release), as a stream of events that
// goes quiet between them.
template <class Stream>
void Hold(Stream& stream, unsigned version, const std::function<void()>& gate,
          beast::error_code& ec) {
  http::response<http::empty_body> response{http::status::ok, version};
  response.set(http::field::content_type, "text/event-stream");
  response.chunked(true);
  response.keep_alive(false);
  http::response_serializer<http::empty_body> serializer{response};
  http::write_header(stream, serializer, ec);
  // The chunk and its closing CRLF in one write (one TLS record), as
  // servers send them: a proxy that waits for the CRLF's sequel holds it.
  const std::string event = "data: first\n\n";
  if (!ec)
    asio::write(stream, asio::buffer(fmt::format("{:x}\r\n{}\r\n", event.size(), event)), ec);
  if (ec) return;
  gate();
  asio::write(stream, http::make_chunk(asio::buffer(std::string("data: last\n\n"))), ec);
  if (!ec) asio::write(stream, http::make_chunk_last(), ec);
}

template <class Stream>
void Exchange(Stream& stream, std::mutex& mu, std::vector<SeenRequest>& seen,
              const std::function<void()>& gate) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    beast::error_code ec;
    http::read(stream, buffer, parser, ec);
    if (ec) return;
    http::request<http::string_body>& request = parser.get();
    SeenRequest record = Recorded(request);
    std::string headers;
    for (const auto& [name, value] : record.headers) {
      headers +=
          fmt::format("{}\"{}\": \"{}\"", headers.empty() ? "" : ", ", name, Sha256Hex(value));
    }
    {
      std::lock_guard lock(mu);
      seen.push_back(record);
    }
    if (beast::websocket::is_upgrade(request)) {
      // Switch protocols, then echo raw bytes until the client closes.
      http::response<http::empty_body> switched{http::status::switching_protocols,
                                                request.version()};
      switched.set(http::field::upgrade, "websocket");
      switched.set(http::field::connection, "Upgrade");
      http::write(stream, switched, ec);
      if (ec) return;
      if (record.target.rfind("/reflect", 0) == 0) {
        // The upgrade request, headers and all, in the first server bytes.
        std::string text = "target: " + record.target + "\n";
        for (const auto& field : request) {
          text += fmt::format("{}: {}\n", Str(field.name_string()), Str(field.value()));
        }
        asio::write(stream, asio::buffer(text), ec);
        if (ec) return;
      }
      if (buffer.size() > 0) {
        asio::write(stream, buffer.data(), ec);
        buffer.consume(buffer.size());
      }
      char chunk[4096];
      for (;;) {
        std::size_t got = stream.read_some(asio::buffer(chunk), ec);
        if (ec || got == 0) return;
        asio::write(stream, asio::buffer(chunk, got), ec);
        if (ec) return;
      }
    }
    if (record.target == "/hold") return Hold(stream, request.version(), gate, ec);
    if (record.target.rfind("/reflect", 0) == 0 || record.method == "TRACE" ||
        record.method == "trace") {
      Reflect(stream, request, record, ec);
      if (ec || !request.keep_alive()) return;
      continue;
    }
    http::response<http::string_body> response{http::status::ok, request.version()};
    response.set(http::field::server, "echo");
    if (record.target.rfind("/bytes/", 0) == 0) {
      response.set(http::field::content_type, "application/octet-stream");
      response.body().assign(std::stoul(record.target.substr(7)), 'x');
    } else if (const std::string path = record.target.substr(0, record.target.find('?'));
               path.ends_with(".git/info/refs")) {
      // A dumb-protocol git server's advertisement: one branch.
      response.set(http::field::content_type, "text/plain");
      response.body() = std::string(kEchoGitCommit) + "\trefs/heads/main\n";
    } else {
      response.set(http::field::content_type, "application/json");
      response.body() = fmt::format(
          "{{\"method\": \"{}\", \"target_sha256\": \"{}\", \"headers\": {{{}}}, \"body_bytes\": "
          "{}}}\n",
          record.method, Sha256Hex(record.target), headers, record.body_bytes);
    }
    response.keep_alive(request.keep_alive());
    response.prepare_payload();
    http::write(stream, response, ec);
    if (ec || !request.keep_alive()) return;
  }
}

}  // namespace

std::string SeenRequest::Header(const std::string& name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return {};
}

std::string Gzip(const std::string& text, bool zlib_only) {
  z_stream z{};
  deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, zlib_only ? 15 : 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Base64(const std::string& text) {
  std::string encoded(beast::detail::base64::encoded_size(text.size()), '\0');
  encoded.resize(beast::detail::base64::encode(encoded.data(), text.data(), text.size()));
  return encoded;
}

EchoServer::EchoServer(std::shared_ptr<credproxy::ServerTls> tls, const std::string& address)
    : tls_(std::move(tls)) {
  const std::function<void()> gate = [this] {
    std::unique_lock lock(mu_);
    released_changed_.wait_for(lock, std::chrono::seconds(30), [this] { return released_; });
  };
  server_ = std::make_unique<ThreadServer>(address, 0, [this, gate](asio::ip::tcp::socket& socket) {
    if (!tls_) {
      Exchange(socket, mu_, seen_, gate);
      return;
    }
    beast::error_code ec;
    asio::ssl::stream<asio::ip::tcp::socket&> stream(socket, tls_->context());
    stream.handshake(asio::ssl::stream_base::server, ec);
    if (!ec) Exchange(stream, mu_, seen_, gate);
  });
  if (!server_->error().empty()) throw std::runtime_error("echo server: " + server_->error());
}

EchoServer::~EchoServer() = default;

unsigned short EchoServer::port() const { return server_->port(); }

int EchoServer::connections() const { return server_->accepted(); }

void EchoServer::Release() {
  std::lock_guard lock(mu_);
  released_ = true;
  released_changed_.notify_all();
}

std::vector<SeenRequest> EchoServer::seen() const {
  std::lock_guard lock(mu_);
  return seen_;
}

}  // namespace mojoup::test

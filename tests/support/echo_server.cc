#include "echo_server.h"

#include <netinet/in.h>
#include <openssl/sha.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <stdexcept>

#include "fmt/format.h"

namespace mojoup::test {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

std::string Str(beast::string_view text) { return std::string(text.data(), text.size()); }

template <class Stream>
void Exchange(Stream& stream, std::mutex& mu, std::vector<SeenRequest>& seen) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    beast::error_code ec;
    http::read(stream, buffer, parser, ec);
    if (ec) return;
    http::request<http::string_body>& request = parser.get();
    SeenRequest record;
    record.method = Str(request.method_string());
    record.target = Str(request.target());
    record.body_bytes = request.body().size();
    std::string headers;
    for (const auto& field : request) {
      std::string name = Str(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      record.headers.emplace_back(name, Str(field.value()));
      headers += fmt::format("{}\"{}\": \"{}\"", headers.empty() ? "" : ", ", name,
                             Sha256Hex(Str(field.value())));
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
    http::response<http::string_body> response{http::status::ok, request.version()};
    response.set(http::field::server, "echo");
    if (record.target.rfind("/bytes/", 0) == 0) {
      response.set(http::field::content_type, "application/octet-stream");
      response.body().assign(std::stoul(record.target.substr(7)), 'x');
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

std::string Sha256Hex(const std::string& text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  std::string hex;
  for (unsigned char byte : digest) hex += fmt::format("{:02x}", byte);
  return hex;
}

EchoServer::EchoServer(std::shared_ptr<asio::ssl::context> tls) : tls_(std::move(tls)) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(listen_fd_, 128) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throw std::runtime_error("echo server: cannot listen");
  }
  port_ = ntohs(address.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

EchoServer::~EchoServer() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  close(listen_fd_);
  {
    std::lock_guard lock(mu_);
    for (int fd : connections_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto& thread : threads_) thread.join();
}

std::vector<SeenRequest> EchoServer::seen() const {
  std::lock_guard lock(mu_);
  return seen_;
}

void EchoServer::AcceptLoop() {
  while (!stopping_) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_) return;
      continue;
    }
    std::lock_guard lock(mu_);
    connections_.push_back(fd);
    threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

void EchoServer::Serve(int fd) {
  asio::io_context io;
  asio::ip::tcp::socket socket(io, asio::ip::tcp::v4(), fd);
  beast::error_code ec;
  if (!tls_) {
    Exchange(socket, mu_, seen_);
  } else {
    asio::ssl::stream<asio::ip::tcp::socket&> stream(socket, *tls_);
    stream.handshake(asio::ssl::stream_base::server, ec);
    if (!ec) Exchange(stream, mu_, seen_);
  }
  socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  // The fd closes with the socket; forget it so the destructor leaves it alone.
  std::lock_guard lock(mu_);
  connections_.erase(std::remove(connections_.begin(), connections_.end(), fd), connections_.end());
}

}  // namespace mojoup::test

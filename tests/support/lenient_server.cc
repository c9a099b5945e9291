#include "lenient_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <stdexcept>

#include "server_tls.h"
#include "test_server.h"

namespace mojoup::test {
namespace {

namespace asio = boost::asio;

template <class Stream>
void Serve(Stream& stream, Repeated repeated, std::mutex& mu, std::vector<LenientRequest>& seen,
           std::vector<std::string>& leftovers) {
  std::string bytes;
  char buffer[16 * 1024];
  boost::system::error_code ec;
  for (;;) {
    const std::size_t got = stream.read_some(asio::buffer(buffer), ec);
    if (ec) break;
    bytes.append(buffer, got);
    LenientParse parsed = ParseLeniently(bytes, repeated);
    bytes.erase(0, parsed.used);
    for (LenientRequest& request : parsed.requests) {
      {
        std::lock_guard lock(mu);
        seen.push_back(request);
      }
      static constexpr std::string_view kAnswer =
          "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok";
      asio::write(stream, asio::buffer(kAnswer.data(), kAnswer.size()), ec);
    }
    if (parsed.error || ec) break;
  }
  std::lock_guard lock(mu);
  if (!bytes.empty()) leftovers.push_back(bytes);
}

}  // namespace

LenientServer::LenientServer(Repeated repeated, std::shared_ptr<credproxy::ServerTls> tls)
    : repeated_(repeated), tls_(std::move(tls)) {
  server_ = std::make_unique<ThreadServer>("127.0.0.1", 0, [this](asio::ip::tcp::socket& socket) {
    {
      std::lock_guard lock(mu_);
      ++started_;
    }
    if (!tls_) {
      Serve(socket, repeated_, mu_, seen_, leftovers_);
    } else {
      boost::system::error_code ec;
      asio::ssl::stream<asio::ip::tcp::socket&> stream(socket, tls_->context());
      stream.handshake(asio::ssl::stream_base::server, ec);
      if (!ec) Serve(stream, repeated_, mu_, seen_, leftovers_);
    }
    std::lock_guard lock(mu_);
    ++finished_;
    ended_.notify_all();
  });
  if (!server_->error().empty()) throw std::runtime_error("lenient server: " + server_->error());
}

LenientServer::~LenientServer() = default;

unsigned short LenientServer::port() const { return server_->port(); }

std::vector<LenientRequest> LenientServer::seen() const {
  std::lock_guard lock(mu_);
  return seen_;
}

std::vector<std::string> LenientServer::leftovers() const {
  std::lock_guard lock(mu_);
  return leftovers_;
}

bool LenientServer::WaitIdle(std::chrono::milliseconds limit) const {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::unique_lock lock(mu_);
  for (;;) {
    // A connection still in the listening queue has not been counted yet:
    // look again shortly for it to be accepted (the accepting thread wakes
    // at once; this is its turn coming, not a guess at a delay).
    const bool idle = finished_ == started_ && started_ == server_->accepted();
    if (idle && !server_->Pending()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    ended_.wait_for(lock, std::chrono::milliseconds(idle ? 1 : 100));
  }
}

void LenientServer::Clear() {
  std::lock_guard lock(mu_);
  seen_.clear();
  leftovers_.clear();
}

}  // namespace mojoup::test

#include "mojoup/probe/docker_api.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>

#include "fmt/format.h"

namespace mojoup::probe {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

constexpr std::size_t kMaxBody = 1 << 20;

DockerReply Failed(DockerReply::Failure failure, const beast::error_code& ec) {
  DockerReply reply;
  reply.failure = failure;
  if (ec.category() == boost::system::system_category()) reply.sys_error = ec.value();
  reply.message = ec.message();
  return reply;
}

DockerReply Classify(const beast::error_code& ec) {
  if (ec == beast::error::timeout) return Failed(DockerReply::Failure::kTimedOut, ec);
  if (ec.category() == boost::system::system_category()) {
    switch (ec.value()) {
      case ENOENT:
        return Failed(DockerReply::Failure::kNoSocket, ec);
      case ECONNREFUSED:
        return Failed(DockerReply::Failure::kRefused, ec);
      case EACCES:
      case EPERM:
        return Failed(DockerReply::Failure::kPermission, ec);
      default:
        break;
    }
  }
  if (ec.category() == http::make_error_code(http::error::end_of_stream).category() ||
      ec == asio::error::eof || ec == http::error::end_of_stream ||
      ec == asio::error::connection_reset || ec == asio::error::broken_pipe) {
    return Failed(DockerReply::Failure::kProtocol, ec);
  }
  return Failed(DockerReply::Failure::kOther, ec);
}

template <class Protocol>
DockerReply Exchange(const typename Protocol::endpoint& peer, const std::string& host_header,
                     std::string_view target, std::chrono::milliseconds timeout) {
  asio::io_context io;
  beast::basic_stream<Protocol> stream(io);
  http::request<http::empty_body> request{http::verb::get,
                                          beast::string_view(target.data(), target.size()), 11};
  request.set(http::field::host, host_header);
  request.set(http::field::user_agent, "mojoup-node");
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxBody);
  DockerReply reply;

  // One deadline for the whole exchange: each step gets what is left of it.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  stream.expires_at(deadline);
  stream.async_connect(peer, [&](beast::error_code connect_ec) {
    if (connect_ec) {
      reply = Classify(connect_ec);
      return;
    }
    stream.expires_at(deadline);
    http::async_write(stream, request, [&](beast::error_code write_ec, std::size_t) {
      if (write_ec) {
        reply = Classify(write_ec);
        return;
      }
      stream.expires_at(deadline);
      http::async_read(stream, buffer, parser, [&](beast::error_code read_ec, std::size_t) {
        if (read_ec) {
          reply = Classify(read_ec);
          return;
        }
        auto& response = parser.get();
        reply.failure = DockerReply::Failure::kNone;
        reply.status = static_cast<int>(response.result_int());
        reply.body = std::move(response.body());
        if (auto it = response.find("Api-Version"); it != response.end()) {
          reply.api_version = std::string(it->value());
        }
        if (auto it = response.find(http::field::server); it != response.end()) {
          reply.server = std::string(it->value());
        }
      });
    });
  });
  io.run();
  return reply;
}

DockerReply BadEndpoint(std::string message) {
  DockerReply reply;
  reply.failure = DockerReply::Failure::kBadEndpoint;
  reply.message = std::move(message);
  return reply;
}

class BeastDockerApi final : public DockerApi {
 public:
  DockerReply Get(const DockerEndpoint& endpoint, std::string_view target,
                  std::chrono::milliseconds timeout) override {
    const std::string& host = endpoint.host;
    if (std::string path = endpoint.UnixPath(); !path.empty()) {
      return Exchange<asio::local::stream_protocol>(asio::local::stream_protocol::endpoint(path),
                                                    "api.moby.localhost", target, timeout);
    }
    constexpr std::string_view kTcp = "tcp://";
    if (host.rfind(kTcp, 0) != 0) {
      return BadEndpoint(fmt::format(
          "{} uses a scheme this client does not speak (expected unix:// or tcp://)", host));
    }
    std::string authority = host.substr(kTcp.size());
    if (auto slash = authority.find('/'); slash != std::string::npos) authority.resize(slash);
    auto colon = authority.rfind(':');
    if (colon == std::string::npos) {
      return BadEndpoint(fmt::format("{} has no port (expected tcp://HOST:PORT)", host));
    }
    std::string name = authority.substr(0, colon);
    if (name.size() > 2 && name.front() == '[' && name.back() == ']') {
      name = name.substr(1, name.size() - 2);
    }
    int port = 0;
    try {
      port = std::stoi(authority.substr(colon + 1));
    } catch (...) {
      port = 0;
    }
    if (port <= 0 || port > 65535) {
      return BadEndpoint(fmt::format("{} has no valid port (expected 1 to 65535)", host));
    }
    boost::system::error_code ec;
    auto address = asio::ip::make_address(name == "localhost" ? "127.0.0.1" : name, ec);
    if (ec) {
      return BadEndpoint(
          fmt::format("{}: give the daemon's address as an IP address, not a name", host));
    }
    return Exchange<asio::ip::tcp>(
        asio::ip::tcp::endpoint(address, static_cast<unsigned short>(port)), authority, target,
        timeout);
  }
};

}  // namespace

std::unique_ptr<DockerApi> MakeDockerApi() { return std::make_unique<BeastDockerApi>(); }

}  // namespace mojoup::probe

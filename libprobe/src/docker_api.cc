#include "mojoup/probe/docker_api.h"

#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstring>

#include "fmt/format.h"
#include "mojoup/internal/json_codec.h"

namespace mojoup::probe {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = mojoup::internal::json;

constexpr std::size_t kMaxBody = 1 << 20;

// An error answer's words, when `message` is a string.
struct ErrorAnswer {
  std::optional<std::string> message;
};
constexpr auto kErrorAnswer =
    json::Message<ErrorAnswer>(json::Optional("message", &ErrorAnswer::message).Lenient());

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

// One request with one deadline for the whole exchange. With `upgrade`, the
// request asks to hijack the connection (attach, exec): only the response
// head is read, and on success the connection is handed over in `*upgrade`.
template <class Protocol>
DockerReply Exchange(const typename Protocol::endpoint& peer, const std::string& host_header,
                     http::verb method, std::string_view target, std::string_view body,
                     std::chrono::milliseconds timeout, DockerStream* upgrade) {
  asio::io_context io;
  beast::basic_stream<Protocol> stream(io);
  http::request<http::string_body> request{method, beast::string_view(target.data(), target.size()),
                                           11};
  request.set(http::field::host, host_header);
  request.set(http::field::user_agent, "mojoup-node");
  if (!body.empty()) {
    request.set(http::field::content_type, "application/json");
    request.body() = std::string(body);
  }
  if (method != http::verb::get || !body.empty()) request.prepare_payload();
  if (upgrade != nullptr) {
    request.set(http::field::connection, "Upgrade");
    request.set(http::field::upgrade, "tcp");
  }
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxBody);
  DockerReply reply;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto finish = [&] {
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
  };
  auto on_read = [&](beast::error_code read_ec, std::size_t) {
    if (read_ec) {
      reply = Classify(read_ec);
      return;
    }
    finish();
  };
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
      if (upgrade == nullptr) {
        http::async_read(stream, buffer, parser, on_read);
        return;
      }
      http::async_read_header(stream, buffer, parser, [&](beast::error_code head_ec, std::size_t) {
        if (head_ec) {
          reply = Classify(head_ec);
          return;
        }
        const unsigned status = parser.get().result_int();
        if (status == 101 || status == 200) {
          finish();
          return;
        }
        stream.expires_at(deadline);
        http::async_read(stream, buffer, parser, on_read);  // the error's body
      });
    });
  });
  io.run();
  if (upgrade != nullptr && reply.failure == DockerReply::Failure::kNone &&
      (reply.status == 101 || reply.status == 200)) {
    // The stream's own bytes may have arrived with the response head.
    upgrade->pending.assign(static_cast<const char*>(buffer.data().data()), buffer.size());
    upgrade->fd = ::dup(stream.socket().native_handle());
    if (upgrade->fd < 0) {
      reply.failure = DockerReply::Failure::kOther;
      reply.sys_error = errno;
      reply.message = std::strerror(errno);
    }
  }
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
  DockerReply Send(const DockerEndpoint& endpoint, std::string_view method_name,
                   std::string_view target, std::string_view body,
                   std::chrono::milliseconds timeout) override {
    return Dispatch(endpoint, method_name, target, body, timeout, nullptr);
  }

  DockerReply Upgrade(const DockerEndpoint& endpoint, std::string_view method,
                      std::string_view target, std::string_view body,
                      std::chrono::milliseconds timeout, DockerStream& stream) override {
    return Dispatch(endpoint, method, target, body, timeout, &stream);
  }

 private:
  DockerReply Dispatch(const DockerEndpoint& endpoint, std::string_view method_name,
                       std::string_view target, std::string_view body,
                       std::chrono::milliseconds timeout, DockerStream* upgrade) {
    const http::verb method =
        http::string_to_verb(beast::string_view(method_name.data(), method_name.size()));
    if (method == http::verb::unknown) {
      return BadEndpoint(fmt::format("{} is not an HTTP method", method_name));
    }
    const std::string& host = endpoint.host;
    if (std::string path = endpoint.UnixPath(); !path.empty()) {
      return Exchange<asio::local::stream_protocol>(asio::local::stream_protocol::endpoint(path),
                                                    "api.moby.localhost", method, target, body,
                                                    timeout, upgrade);
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
        asio::ip::tcp::endpoint(address, static_cast<unsigned short>(port)), authority, method,
        target, body, timeout, upgrade);
  }
};

}  // namespace

std::unique_ptr<DockerApi> MakeDockerApi() { return std::make_unique<BeastDockerApi>(); }

std::string DockerReplyProblem(const DockerReply& reply) {
  if (reply.failure != DockerReply::Failure::kNone) {
    return reply.message.empty() ? "the Docker daemon did not answer" : reply.message;
  }
  auto answer = json::Parse<ErrorAnswer>(reply.body, kErrorAnswer, "Docker's answer",
                                         {.max_bytes = kMaxBody});
  if (answer.ok() && answer->message) return *answer->message;
  return fmt::format("HTTP {}", reply.status);
}

}  // namespace mojoup::probe

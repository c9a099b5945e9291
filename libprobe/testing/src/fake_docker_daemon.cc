#include "mojoup/probe/testing/fake_docker_daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cstring>
#include <optional>
#include <regex>
#include <stdexcept>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace mojoup::probe::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct FakeDockerDaemon::State {
  int listen_fd = -1;
  int wake[2] = {-1, -1};
  mutable absl::Mutex mu;
  std::vector<std::string> requests ABSL_GUARDED_BY(mu);
  std::vector<int> held ABSL_GUARDED_BY(mu);  // connections kHang keeps open
  std::string engine ABSL_GUARDED_BY(mu) = "20.10.24";
  std::string api ABSL_GUARDED_BY(mu) = "1.41";
  bool ping_headers ABSL_GUARDED_BY(mu) = true;
  // reference -> its inspect JSON
  std::map<std::string, std::string> images ABSL_GUARDED_BY(mu);
};

namespace {

int Listen(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket: " + std::string(strerror(errno)));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) throw std::runtime_error("socket path too long");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  unlink(path.c_str());
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 16) != 0) {
    int err = errno;
    close(fd);
    throw std::runtime_error("bind " + path + ": " + strerror(err));
  }
  return fd;
}

// "%2F" -> "/": a client may percent-encode the reference in the path.
std::string PercentDecoded(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() &&
        std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// The reference a GET /images/<reference>/json asks about, or nullopt.
std::optional<std::string> InspectedImage(const std::string& target) {
  static const std::regex kInspect("(/v[0-9]+\\.[0-9]+)?/images/(.+)/json");
  std::smatch match;
  if (!std::regex_match(target, match, kInspect)) return std::nullopt;
  return PercentDecoded(match[2].str());
}

// Mode::kGarbage: reads what the client sent and answers with what no
// Docker daemon says (an SSH banner), then hangs up.
void AnswerGarbage(int conn) {
  char request[4096];
  (void)!read(conn, request, sizeof request);
  const char junk[] = "SSH-2.0-OpenSSH_9.2\r\n";
  (void)!write(conn, junk, sizeof junk - 1);
  close(conn);
}

}  // namespace

FakeDockerDaemon::FakeDockerDaemon(std::string socket_path, Mode mode)
    : socket_path_(std::move(socket_path)), mode_(mode), state_(std::make_unique<State>()) {
  state_->listen_fd = Listen(socket_path_);
  if (mode_ == Mode::kRefuse) {
    // The file stays; nothing listens behind it.
    close(state_->listen_fd);
    state_->listen_fd = -1;
    return;
  }
  if (pipe2(state_->wake, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  thread_ = std::thread([this] { Serve(); });
}

FakeDockerDaemon::~FakeDockerDaemon() {
  if (thread_.joinable()) {
    char byte = 0;
    (void)!write(state_->wake[1], &byte, 1);
    thread_.join();
  }
  {
    absl::MutexLock lock(&state_->mu);  // the server thread has ended; the rule holds anyway
    for (int fd : state_->held) close(fd);
  }
  for (int fd : {state_->listen_fd, state_->wake[0], state_->wake[1]}) {
    if (fd >= 0) close(fd);
  }
  if (mode_ != Mode::kRefuse) unlink(socket_path_.c_str());
}

void FakeDockerDaemon::SetVersion(std::string engine, std::string api_version) {
  absl::MutexLock lock(&state_->mu);
  state_->engine = std::move(engine);
  state_->api = std::move(api_version);
}

void FakeDockerDaemon::OmitPingHeaders() {
  absl::MutexLock lock(&state_->mu);
  state_->ping_headers = false;
}

void FakeDockerDaemon::AddImage(std::string reference, std::string id,
                                std::map<std::string, std::string> labels,
                                std::int64_t size_bytes) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("Id");
  w.String(id);
  w.Key("RepoTags");
  w.StartArray();
  w.String(reference);
  w.EndArray();
  w.Key("Size");
  w.Int64(size_bytes);
  w.Key("Config");
  w.StartObject();
  w.Key("Labels");
  if (labels.empty()) {
    w.Null();  // as dockerd says of an image without labels
  } else {
    w.StartObject();
    for (const auto& [name, value] : labels) {
      w.Key(name.c_str());
      w.String(value);
    }
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  absl::MutexLock lock(&state_->mu);
  state_->images[std::move(reference)] = buffer.GetString();
}

std::vector<std::string> FakeDockerDaemon::requests() const {
  absl::MutexLock lock(&state_->mu);
  return state_->requests;
}

void FakeDockerDaemon::Serve() {
  asio::io_context io;
  for (;;) {
    pollfd fds[2] = {{state_->listen_fd, POLLIN, 0}, {state_->wake[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    int conn = accept4(state_->listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    // A client that connects and says nothing must not wedge the fake.
    timeval limit{5, 0};
    setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    if (mode_ == Mode::kGarbage) {
      AnswerGarbage(conn);
      continue;
    }
    asio::local::stream_protocol::socket socket(io, asio::local::stream_protocol(), conn);
    beast::flat_buffer buffer;
    beast::error_code ec;
    // Serve this connection's requests until the client closes it.
    for (;;) {
      http::request<http::string_body> request;
      http::read(socket, buffer, request, ec);
      if (ec) break;
      std::string target(request.target());
      {
        absl::MutexLock lock(&state_->mu);
        state_->requests.push_back(target);
      }
      if (mode_ == Mode::kHang) {
        absl::MutexLock lock(&state_->mu);
        state_->held.push_back(socket.release());
        break;
      }
      http::response<http::string_body> response;
      response.version(11);
      std::string api;
      std::string engine;
      bool headers = true;
      const std::optional<std::string> image = InspectedImage(target);
      std::optional<std::string> image_json;
      {
        absl::MutexLock lock(&state_->mu);
        api = state_->api;
        engine = state_->engine;
        headers = state_->ping_headers || target != "/_ping";
        if (image) {
          if (auto found = state_->images.find(*image); found != state_->images.end()) {
            image_json = found->second;
          }
        }
      }
      if (headers) {
        response.set(http::field::server, "Docker/" + engine + " (linux)");
        response.set("Api-Version", api);
      }
      if (mode_ == Mode::kError500) {
        response.result(http::status::internal_server_error);
        response.set(http::field::content_type, "application/json");
        response.body() = R"({"message":"containerd: connection error: desc = transport failure"})";
      } else if (target == "/_ping") {
        response.result(http::status::ok);
        response.set(http::field::content_type, "text/plain; charset=utf-8");
        response.body() = "OK";
      } else if (target == "/version") {
        response.result(http::status::ok);
        response.set(http::field::content_type, "application/json");
        response.body() = R"({"Version":")" + engine + R"(","ApiVersion":")" + api +
                          R"(","MinAPIVersion":"1.12","Os":"linux","Arch":"amd64"})";
      } else if (image && request.method() == http::verb::get) {
        response.set(http::field::content_type, "application/json");
        if (image_json) {
          response.result(http::status::ok);
          response.body() = *image_json;
        } else {
          rapidjson::StringBuffer message;
          rapidjson::Writer<rapidjson::StringBuffer> w(message);
          w.StartObject();
          w.Key("message");
          w.String("No such image: " + *image);
          w.EndObject();
          response.result(http::status::not_found);
          response.body() = message.GetString();
        }
      } else {
        response.result(http::status::not_found);
        response.body() = R"({"message":"page not found"})";
      }
      response.keep_alive(request.keep_alive());
      response.prepare_payload();
      http::write(socket, response, ec);
      if (ec || !request.keep_alive()) break;
    }
    if (socket.is_open()) socket.close(ec);
  }
}

}  // namespace mojoup::probe::testing

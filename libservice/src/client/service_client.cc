// ServiceClient: the sandbox service's API from another process, one
// connection per call; an attach keeps its connection for the frames.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <utility>

#include "fmt/format.h"
#include "mojoup/internal/fd.h"
#include "mojoup/service/client.h"
#include "protocol/protocol.h"

namespace mojoup {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace fs = std::filesystem;
using service::EncodeFrame;
using service::FrameType;

absl::StatusOr<int> ConnectStream(const std::string& path, int timeout_seconds) {
  auto connected = service::ConnectUnix(path, SOCK_STREAM);
  if (!connected.ok()) {
    return absl::UnavailableError(
        fmt::format("no sandbox service answers on {}", std::string(connected.status().message())));
  }
  const int fd = *connected;
  timeval timeout{timeout_seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  return fd;
}

absl::Status StatusFor(int code, const std::string& sentence) {
  switch (code) {
    case 400:
      return absl::InvalidArgumentError(sentence);
    case 403:
      return absl::PermissionDeniedError(sentence);
    case 404:
      return absl::NotFoundError(sentence);
    case 413:
    case 429:
    case 507:
      return absl::ResourceExhaustedError(sentence);
    case 409:
    case 503:
      return absl::FailedPreconditionError(sentence);
    default:
      return absl::UnavailableError(sentence);
  }
}

// A refusal's error document as a status with its sentence; its reason in
// `*reason`.
absl::Status Refusal(int status, const std::string& body, std::string* reason) {
  const service::ErrorDoc refusal = service::ParseErrorDoc(body);
  if (!refusal.reason.empty()) *reason = refusal.reason;
  return StatusFor(status, refusal.error.empty()
                               ? fmt::format("the sandbox service answered {}", status)
                               : refusal.error);
}

bool WriteAllTo(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t wrote = ::write(fd, data.data(), data.size());
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(wrote));
  }
  return true;
}

class SocketAttachment : public Attachment {
 public:
  SocketAttachment(int fd, std::string leftover) : fd_(fd) {
    reader_.Add(leftover);
    int wake[2];
    if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) == 0) {
      wake_read_ = internal::Fd(wake[0]);
      wake_write_ = internal::Fd(wake[1]);
    }
  }

  absl::StatusOr<int> Pump(const sandbox::Stdio& stdio, const PumpHooks& hooks) override {
    if (stdio.rows > 0) Resize(stdio.rows, stdio.columns).IgnoreError();
    bool input = stdio.in >= 0;
    bool output_gone = false;
    char buffer[65536];
    for (;;) {
      if (auto done = Drain(stdio, hooks, output_gone)) return *done;
      pollfd fds[3] = {{fd_.get(), POLLIN, 0},
                       {input ? stdio.in : -1, POLLIN, 0},
                       {wake_read_.get(), POLLIN, 0}};
      if (::poll(fds, 3, -1) < 0) {
        if (errno == EINTR) continue;
        return absl::InternalError(std::strerror(errno));
      }
      if (fds[2].revents != 0) return absl::CancelledError("detached");
      if (fds[1].revents != 0) {
        const ssize_t got = ::read(stdio.in, buffer, sizeof buffer);
        if (got > 0) {
          Send(FrameType::kStdin, std::string_view(buffer, static_cast<std::size_t>(got)))
              .IgnoreError();
        } else if (got == 0 || errno != EINTR) {
          input = false;
          Send(FrameType::kStdinEnd, "").IgnoreError();
        }
      }
      if (fds[0].revents != 0) {
        const ssize_t got = ::recv(fd_.get(), buffer, sizeof buffer, 0);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got <= 0) {
          return absl::UnavailableError(
              "the sandbox service's connection ended before the session did");
        }
        reader_.Add(std::string_view(buffer, static_cast<std::size_t>(got)));
      }
    }
  }

  absl::Status Signal(int signal) override {
    return Send(FrameType::kSignal, std::to_string(signal));
  }
  absl::Status Resize(unsigned short rows, unsigned short columns) override {
    return Send(FrameType::kResize, fmt::format("{} {}", rows, columns));
  }
  void Detach() override {
    Send(FrameType::kDetach, "").IgnoreError();
    const char one = 1;
    [[maybe_unused]] ssize_t wrote = ::write(wake_write_.get(), &one, 1);
  }

 private:
  // Hands out the frames read so far; the exit code once it came.
  std::optional<absl::StatusOr<int>> Drain(const sandbox::Stdio& stdio, const PumpHooks& hooks,
                                           bool& output_gone) {
    for (;;) {
      auto frame = reader_.Next();
      if (!frame.ok()) return absl::StatusOr<int>(frame.status());
      if (!frame->has_value()) return std::nullopt;
      auto& [type, data] = **frame;
      if (type == FrameType::kExit) return absl::StatusOr<int>(std::atoi(data.c_str()));
      if (type == FrameType::kNotice) {
        if (hooks.notice) hooks.notice(data);
        continue;
      }
      const int out = type == FrameType::kStderr ? stdio.err : stdio.out;
      if (output_gone || WriteAllTo(out, data)) continue;
      // The reader went away: the command gets the SIGPIPE a pipeline gives.
      output_gone = true;
      if (stdio.output_closed) {
        stdio.output_closed();
      } else {
        Signal(SIGPIPE).IgnoreError();
      }
    }
  }

  absl::Status Send(FrameType type, std::string_view data) {
    std::lock_guard<std::mutex> lock(write_mu_);
    if (!WriteAllTo(fd_.get(), EncodeFrame(type, data))) {
      return absl::UnavailableError("the sandbox service's connection is gone");
    }
    return absl::OkStatus();
  }

  internal::Fd fd_;
  internal::Fd wake_read_, wake_write_;
  service::FrameReader reader_;
  std::mutex write_mu_;
};

std::string Absolute(const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  std::string normal = ec ? path : absolute.lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return normal;
}

}  // namespace

absl::StatusOr<ServiceClient> ServiceClient::Connect(const std::string& socket) {
  std::vector<std::string> candidates =
      socket.empty() ? ServiceSocketCandidates() : std::vector<std::string>{socket};
  absl::Status last = absl::UnavailableError("no sandbox service runs");
  for (const std::string& path : candidates) {
    auto fd = ConnectStream(path, 5);
    if (fd.ok()) {
      ::close(*fd);
      return ServiceClient(path);
    }
    last = fd.status();
  }
  return last;
}

absl::StatusOr<std::string> ServiceClient::Call(std::string_view method, const std::string& path,
                                                const std::string& body, int expected) {
  last_reason_.clear();
  // A start may build a sandbox and a stop waits for the session's end.
  const int timeout = method == "POST" && path == "/v1/sessions" ? 360 : 90;
  auto fd = ConnectStream(socket_, timeout);
  if (!fd.ok()) return fd.status();
  asio::io_context io;
  asio::local::stream_protocol::socket stream(io);
  beast::error_code ec;
  stream.assign(asio::local::stream_protocol(), *fd, ec);
  http::request<http::string_body> request{
      http::string_to_verb(beast::string_view(method.data(), method.size())), path, 11};
  request.set(http::field::host, "mojoup-node");
  request.set(http::field::content_type, "application/json");
  request.body() = body;
  request.prepare_payload();
  http::write(stream, request, ec);
  if (ec) return absl::UnavailableError(fmt::format("the sandbox service: {}", ec.message()));
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(service::kMaxAnswerBody);
  http::read(stream, buffer, parser, ec);
  if (ec) {
    return absl::UnavailableError(
        fmt::format("the sandbox service did not answer: {}", ec.message()));
  }
  const int status = static_cast<int>(parser.get().result_int());
  std::string answer = std::move(parser.get().body());
  if (status == expected || (expected == 0 && status < 300)) return answer;
  return Refusal(status, answer, &last_reason_);
}

absl::StatusOr<StartResult> ServiceClient::Start(const RunRequest& request,
                                                 const StartOptions& options) {
  RunRequest sent = request;
  sent.workdir = Absolute(request.workdir.empty() ? "." : request.workdir);
  sent.upstream_ca = Absolute(request.upstream_ca);
  sent.audit_file = Absolute(request.audit_file);
  std::map<std::string, std::string> secrets;
  for (const std::string& credential : request.credentials) {
    const std::string name = credential.substr(0, credential.find('='));
    if (const char* value = std::getenv(name.c_str()); value != nullptr) secrets[name] = value;
  }
  auto body = Call("POST", "/v1/sessions", service::StartRequestJson(sent, options, secrets), 0);
  if (!body.ok()) {
    // The notices of a refused start (the decision's sentence) are its message.
    return body.status();
  }
  auto answer = service::ParseStartAnswer(*body);
  if (!answer.ok()) {
    return absl::UnavailableError("the sandbox service's answer to a start is not one");
  }
  StartResult result;
  result.id = std::move(answer->id);
  result.unsandboxed = answer->unsandboxed;
  result.terminal = answer->terminal;
  result.notices = std::move(answer->notices);
  return result;
}

absl::StatusOr<std::vector<ServiceSession>> ServiceClient::Sessions() {
  auto body = Call("GET", "/v1/sessions", "", 200);
  if (!body.ok()) return body.status();
  auto sessions = service::ParseSessionList(*body);
  if (!sessions.ok())
    return absl::UnavailableError("the sandbox service's session list is not one");
  return sessions;
}

absl::StatusOr<ServiceSession> ServiceClient::Get(const std::string& id) {
  auto body = Call("GET", "/v1/sessions/" + id, "", 200);
  if (!body.ok()) return body.status();
  return service::ParseSession(*body);
}

absl::Status ServiceClient::Signal(const std::string& id, int signal) {
  return Call("POST", "/v1/sessions/" + id + "/signal", service::SignalBodyJson(signal), 200)
      .status();
}

absl::Status ServiceClient::Resize(const std::string& id, unsigned short rows,
                                   unsigned short columns) {
  return Call("POST", "/v1/sessions/" + id + "/resize", service::ResizeBodyJson(rows, columns), 200)
      .status();
}

absl::StatusOr<int> ServiceClient::Stop(const std::string& id) {
  auto body = Call("POST", "/v1/sessions/" + id + "/stop", "", 200);
  if (!body.ok()) return body.status();
  auto session = service::ParseSession(*body);
  if (!session.ok()) return session.status();
  return session->exit_code.value_or(1);
}

absl::Status ServiceClient::Drain() { return Call("POST", "/v1/service/drain", "", 202).status(); }

absl::StatusOr<std::string> ServiceClient::GetJson(const std::string& path) {
  return Call("GET", path, "", 200);
}

absl::StatusOr<std::unique_ptr<Attachment>> ServiceClient::Attach(const std::string& id) {
  last_reason_.clear();
  auto fd = ConnectStream(socket_, 30);
  if (!fd.ok()) return fd.status();
  asio::io_context io;
  asio::local::stream_protocol::socket stream(io);
  beast::error_code ec;
  stream.assign(asio::local::stream_protocol(), *fd, ec);
  http::request<http::empty_body> request{http::verb::post, "/v1/sessions/" + id + "/attach", 11};
  request.set(http::field::host, "mojoup-node");
  request.set(http::field::connection, "Upgrade");
  request.set(http::field::upgrade, "mojoup-attach/1");
  http::write(stream, request, ec);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1 << 20);
  if (!ec) http::read_header(stream, buffer, parser, ec);
  if (ec) return absl::UnavailableError(fmt::format("the sandbox service: {}", ec.message()));
  const int status = static_cast<int>(parser.get().result_int());
  if (status != 101) {
    http::read(stream, buffer, parser, ec);
    return Refusal(status, parser.get().body(), &last_reason_);
  }
  std::string leftover(static_cast<const char*>(buffer.data().data()), buffer.size());
  // The frames need no deadline on reads: a session may be quiet for hours.
  timeval none{0, 0};
  const int raw = stream.release();
  ::setsockopt(raw, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
  return std::unique_ptr<Attachment>(new SocketAttachment(raw, std::move(leftover)));
}

}  // namespace mojoup

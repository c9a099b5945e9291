// The operator's side of a session's control socket (control.cc): one
// request per connection, with a deadline on the whole call. Completion
// handlers, not coroutines: Clang's thread-safety check reads this file too.
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "control_messages.h"
#include "fmt/format.h"
#include "mojoup/credproxy/approvals.h"

namespace mojoup::credproxy {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Generic = asio::generic::stream_protocol;

constexpr auto kCallTime = std::chrono::seconds(10);
struct Call {
  beast::error_code ec;
  std::string stage = "connecting to";
  std::optional<uid_t> listener;  // the uid that must serve the socket
  bool stranger = false;          // another uid serves it: nothing was sent
  http::response<http::string_body> response;
};

// Connects, checks who listens (call.listener), writes the request and
// reads the answer, all within `deadline` (the stream's one expiry covers
// every step).
void Exchange(const std::string& socket, const http::request<http::string_body>& request,
              std::chrono::milliseconds deadline, Call& call) {
  asio::io_context io;
  beast::basic_stream<Generic> stream(io);
  stream.expires_after(deadline);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(control::kMaxAnswer);
  const Generic::endpoint endpoint(asio::local::stream_protocol::endpoint{socket});
  stream.async_connect(endpoint, [&](beast::error_code connected) {
    if ((call.ec = connected)) return;
    if (call.listener) {
      const std::optional<uid_t> peer = control::PeerUid(stream.socket().native_handle());
      if ((call.stranger = peer != call.listener)) return;
    }
    call.stage = "writing to";
    http::async_write(stream, request, [&](beast::error_code written, std::size_t) {
      if ((call.ec = written)) return;
      call.stage = "reading the answer of";
      http::async_read(stream, buffer, parser, [&](beast::error_code read, std::size_t) {
        call.ec = read;
        if (!read) call.response = parser.release();
      });
    });
  });
  io.run();
}

// One call; the answer's body when it is a 200, else the error it names.
absl::StatusOr<std::string> ControlCall(const std::string& socket, http::verb verb,
                                        const std::string& target, std::string body,
                                        std::chrono::milliseconds extra,
                                        std::optional<uid_t> listener) {
  http::request<http::string_body> request{verb, target, 11};
  request.set(http::field::host, "localhost");
  request.set(http::field::connection, "close");
  if (!body.empty()) request.set(http::field::content_type, "application/json");
  request.body() = std::move(body);
  request.prepare_payload();
  Call call;
  call.listener = listener;
  Exchange(socket, request, kCallTime + extra, call);
  if (call.stranger) {
    return absl::PermissionDeniedError(
        fmt::format("the control socket {} is not served by {}'s session", socket,
                    control::UserName(*listener)));
  }
  if (call.ec) {
    return absl::UnavailableError(fmt::format("{} the session's control socket {}: {}", call.stage,
                                              socket, call.ec.message()));
  }
  const unsigned status = call.response.result_int();
  if (status == 200) return std::move(call.response.body());
  auto error = control::json::Parse<control::Error>(
      call.response.body(), control::kError, "the error", {.max_bytes = control::kMaxAnswer});
  const std::string message =
      error.ok() ? error->error : fmt::format("the control socket answered {}", status);
  switch (status) {
    case 404:
      return absl::NotFoundError(message);
    case 409:
      return absl::FailedPreconditionError(message);
    case 403:
      return absl::PermissionDeniedError(message);
    default:
      return absl::InvalidArgumentError(message);
  }
}

}  // namespace

absl::StatusOr<ApprovalList> FetchApprovals(const std::string& control_socket,
                                            std::optional<std::uint64_t> after,
                                            std::chrono::milliseconds wait,
                                            std::optional<uid_t> listener) {
  std::string target = "/v1/approvals";
  if (after) target += fmt::format("?after={}&wait={}", *after, wait.count());
  auto body = ControlCall(control_socket, http::verb::get, target, "",
                          after ? wait : std::chrono::milliseconds{}, listener);
  if (!body.ok()) return body.status();
  return ParseApprovalsJson(*body);
}

absl::StatusOr<ApprovalInfo> SendDecision(const std::string& control_socket, const std::string& id,
                                          bool approve, ApprovalScope scope,
                                          const std::string& reason,
                                          const std::string& on_behalf_of,
                                          std::optional<uid_t> listener) {
  if (id.empty() || id.size() > 9 || id.find_first_not_of("0123456789") != std::string::npos) {
    return absl::InvalidArgumentError(
        fmt::format("\"{}\" is not an approval id; expected a number such as 3", id));
  }
  auto body =
      ControlCall(control_socket, http::verb::post, "/v1/approvals/" + id,
                  ApprovalDecisionJson({approve, scope, reason, on_behalf_of}), {}, listener);
  if (!body.ok()) return body.status();
  return ParseApprovalJson(*body);
}

}  // namespace mojoup::credproxy

// The control socket: where the operator lists and decides a session's
// approvals. A unix socket beside the proxy, never where a sandbox reaches
// it; only this process's user and root may use it (SO_PEERCRED). One small
// HTTP/1.1 request per connection, answered and closed:
//
//   GET  /v1/approvals[?after=VERSION&wait=MS]   the approvals (a long poll with after)
//   POST /v1/approvals/ID  {"decision": "approve"|"deny", "scope": "once"|"session",
//                           "reason": TEXT}
// g++ 12 mistakes an Asio coroutine frame's sized delete for a mismatch
// (GCC bug 109224, fixed in 13): see forward.cc.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/local/stream_protocol.hpp>

#include "control_messages.h"
#include "mojoup/internal/url_query.h"
#include "server.h"

namespace mojoup::credproxy {

namespace control {

// Who is at the other end, as the kernel says; nullopt when it cannot.
std::optional<uid_t> PeerUid(int fd) {
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return std::nullopt;
  return credentials.uid;
}

std::string UserName(uid_t uid) {
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) {
    return found->pw_name;
  }
  return "uid " + std::to_string(uid);
}

}  // namespace control

namespace {

namespace json = control::json;

constexpr std::size_t kControlHeader = 8192;
constexpr auto kControlRead = std::chrono::seconds(10);
constexpr auto kMaxWait = std::chrono::seconds(60);
constexpr std::size_t kMaxControlConnections = 64;

using ControlAnswer = Proxy::Impl::ControlAnswer;

ControlAnswer Failure(http::status status, std::string message) {
  return {status, json::ToJson(control::Error{std::move(message)}, control::kError)};
}

ControlAnswer FromStatus(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
      return Failure(http::status::not_found, std::string(status.message()));
    case absl::StatusCode::kFailedPrecondition:
      return Failure(http::status::conflict, std::string(status.message()));
    default:
      return Failure(http::status::bad_request, std::string(status.message()));
  }
}

ApprovalList ListOf(Approvals& approvals) {
  ApprovalList list;
  list.version = approvals.version();
  for (const Approval& approval : approvals.List()) list.approvals.push_back(InfoOf(approval));
  return list;
}

// "after=3&wait=20000" -> the version to wait past and for how long;
// nullopt without `after`.
absl::StatusOr<std::optional<std::pair<std::uint64_t, std::chrono::milliseconds>>> LongPoll(
    std::string_view query) {
  auto numbers = internal::ParseNumberQuery(query, {"after", "wait"});
  if (!numbers.ok()) return numbers.status();
  const auto after = numbers->find("after");
  if (after == numbers->end()) return std::nullopt;
  const auto wait = numbers->find("wait");
  const std::chrono::milliseconds asked(wait == numbers->end() ? 0 : wait->second);
  return std::pair{after->second, std::min(asked, std::chrono::milliseconds(kMaxWait))};
}

ControlAnswer Decide(Approvals& approvals, const std::string& id, const std::string& body,
                     uid_t peer) {
  auto parsed = ParseApprovalDecision(body);
  if (!parsed.ok()) return FromStatus(parsed.status());
  const std::string by =
      peer == 0 && !parsed->on_behalf_of.empty() ? parsed->on_behalf_of : control::UserName(peer);
  auto decided = approvals.Decide(id, {parsed->approve, parsed->scope, by, parsed->reason});
  if (!decided.ok()) return FromStatus(decided.status());
  return {http::status::ok, ApprovalJson(InfoOf(*decided))};
}

}  // namespace

awaitable<void> Proxy::Impl::AcceptControl() {
  for (;;) {
    beast::error_code ec;
    Generic::socket socket =
        co_await control_acceptor->async_accept(asio::redirect_error(use_awaitable, ec));
    if (ec == asio::error::operation_aborted) co_return;
    if (ec) {
      asio::steady_timer pause(io, std::chrono::milliseconds(50));
      co_await pause.async_wait(asio::redirect_error(use_awaitable, ec));
      continue;
    }
    if (control_active >= kMaxControlConnections) continue;  // closed unanswered
    ++control_active;
    asio::co_spawn(io, ServeControl(ClientStream(std::move(socket))),
                   [this](std::exception_ptr) { --control_active; });
  }
}

awaitable<void> Proxy::Impl::ServeControl(ClientStream stream) {
  const std::optional<uid_t> peer = control::PeerUid(stream.socket().native_handle());
  ControlAnswer answer;
  http::request_parser<http::string_body> parser;
  parser.header_limit(kControlHeader);
  parser.body_limit(control::kMaxRequestBody);
  beast::flat_buffer buffer;
  beast::error_code ec;
  stream.expires_after(kControlRead);
  co_await http::async_read(stream, buffer, parser, asio::redirect_error(use_awaitable, ec));
  if (ec) co_return;
  if (!peer || (*peer != 0 && *peer != geteuid())) {
    answer = Failure(http::status::forbidden,
                     "only the session's user and root may see or decide its approvals");
  } else {
    answer = co_await ControlRequest(parser.get(), *peer);
  }
  http::response<http::string_body> response{answer.status, 11};
  response.set(http::field::content_type, "application/json");
  response.set(http::field::connection, "close");
  response.body() = answer.body + "\n";
  response.prepare_payload();
  stream.expires_after(kControlRead);
  co_await http::async_write(stream, response, asio::redirect_error(use_awaitable, ec));
  stream.socket().shutdown(asio::socket_base::shutdown_both, ec);
}

awaitable<Proxy::Impl::ControlAnswer> Proxy::Impl::ControlRequest(
    const http::request<http::string_body>& request, uid_t peer) {
  Approvals& approvals = *options.approvals;
  const std::string target(request.target());
  const std::string path = target.substr(0, target.find('?'));
  const std::string query = target.size() > path.size() ? target.substr(path.size() + 1) : "";
  constexpr std::string_view kOne = "/v1/approvals/";
  if (request.method() == http::verb::get && path == "/v1/approvals") {
    auto poll = LongPoll(query);
    if (!poll.ok()) {
      co_return Failure(http::status::bad_request, std::string(poll.status().message()));
    }
    if (*poll && approvals.version() <= (*poll)->first) {
      co_await AwaitApprovals((*poll)->first, Clock::now() + (*poll)->second);
    }
    co_return ControlAnswer{http::status::ok, ApprovalsJson(ListOf(approvals))};
  }
  if (request.method() == http::verb::post && path.rfind(kOne, 0) == 0 &&
      path.size() > kOne.size()) {
    co_return Decide(approvals, path.substr(kOne.size()), request.body(), peer);
  }
  co_return Failure(http::status::not_found,
                    fmt::format("no {} {} here; expected GET /v1/approvals or POST "
                                "/v1/approvals/ID",
                                std::string(request.method_string()), path));
}

absl::Status ListenControl(Proxy::Impl& impl) {
  const std::string& socket = impl.options.control_socket;
  if (socket.empty()) return absl::OkStatus();
  if (!impl.options.approvals) {
    return absl::InvalidArgumentError("a control socket needs approvals to serve");
  }
  ::unlink(socket.c_str());
  asio::local::stream_protocol::endpoint endpoint(socket);
  auto& acceptor = impl.control_acceptor.emplace(impl.io);
  boost::system::error_code ec;
  acceptor.open(Generic(AF_UNIX, 0), ec);
  if (!ec) acceptor.bind(Generic::endpoint(endpoint), ec);
  // Owner only: the peer check is the rule, this the fence.
  if (!ec && ::chmod(socket.c_str(), 0600) != 0) ec.assign(errno, boost::system::system_category());
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(fmt::format("cannot listen on {}: {}", socket, ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace mojoup::credproxy

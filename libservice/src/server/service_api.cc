// The sandbox service's HTTP/1.1 API: on its unix socket (every call checked
// against the caller's SO_PEERCRED identity), and the health and metrics
// listener on loopback. One request per connection; an attach upgrades it
// and the connection goes to the session's worker.
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

#include "fmt/format.h"
#include "mojoup/internal/bounded_json.h"
#include "mojoup/internal/url_query.h"
#include "mojoup/policy/decision.h"
#include "mojoup/sandbox/audit_reader.h"
#include "mojoup/sandbox/node.h"
#include "server/service_state.h"

namespace mojoup::service {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Request = http::request<http::string_body>;

struct Answer {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

Answer Error(int status, std::string_view sentence, Reason reason) {
  return {status, ErrorJson(sentence, reason)};
}

// A body the service would not read: 413 when it is too large, else 400.
Answer Unreadable(const absl::Status& status) {
  const bool large = status.code() == absl::StatusCode::kResourceExhausted;
  return Error(large ? 413 : 400, std::string(status.message()),
               large ? Reason::kTooLarge : Reason::kInvalid);
}

std::vector<const ServiceSession*> Visible(const State& state, const Caller& caller)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.mu) {
  std::vector<const ServiceSession*> out;
  for (const auto& [id, slot] : state.sessions) {
    if (state.Owns(caller, slot.info)) out.push_back(&slot.info);
  }
  return out;
}

// The session `id` as the caller may see it, live or lately ended.
const ServiceSession* FindSession(const State& state, const Caller& caller, const std::string& id)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.mu) {
  if (auto live = state.sessions.find(id); live != state.sessions.end()) {
    return state.Owns(caller, live->second.info) ? &live->second.info : nullptr;
  }
  for (auto it = state.ended.rbegin(); it != state.ended.rend(); ++it) {
    if (it->id == id) return state.Owns(caller, *it) ? &*it : nullptr;
  }
  return nullptr;
}

// POST /v1/sessions/ID/{signal,resize,stop}
Answer Steer(State& state, const Caller& caller, const std::string& id, const std::string& what,
             const std::string& body) {
  {
    absl::MutexLock lock(&state.mu);
    const ServiceSession* session = FindSession(state, caller, id);
    if (session == nullptr)
      return Error(404, fmt::format("no session {} of yours", id), Reason::kNotFound);
    if (session->state == "ended") {
      return Error(409, fmt::format("session {} has ended", id), Reason::kEnded);
    }
  }
  // A stop takes no body: whatever came with it is not read.
  if (!body.empty() && what != "stop") {
    rapidjson::Document doc;
    if (absl::Status parsed = internal::ParseBoundedJson(
            body, doc, "the request body", {.max_bytes = kMaxRequestBody, .utf8 = false});
        !parsed.ok()) {
      return Unreadable(parsed);
    }
  }
  WorkerOp op{.op = what};
  if (what == "signal") {
    const int signal = ParseSignalBody(body).signal;
    if (signal <= 0 || signal >= NSIG) {
      return Error(400, "the body's \"signal\": expected a signal number from 1 to 64",
                   Reason::kInvalid);
    }
    op.signal = signal;
  } else if (what == "resize") {
    const ResizeBody size = ParseResizeBody(body);
    if (size.rows < 0 || size.rows > 65535 || size.columns < 0 || size.columns > 65535) {
      return Error(400, "the body's \"rows\" and \"columns\": expected numbers from 0 to 65535",
                   Reason::kInvalid);
    }
    op.rows = size.rows;
    op.columns = size.columns;
  }
  auto answered = AskWorker(state, id, WorkerOpJson(op));
  if (!answered.ok()) {
    return Error(502, fmt::format("session {}'s worker does not answer", id), Reason::kWorker);
  }
  if (what != "stop") return {200, OkJson()};
  // Stop waits for the end, as `mojoup-node stop` does.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    {
      absl::MutexLock lock(&state.mu);
      const ServiceSession* session = FindSession(state, caller, id);
      if (session != nullptr && session->state == "ended") return {200, SessionJson(*session)};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Error(504, fmt::format("session {} did not end within 60 s of its stop", id),
               Reason::kTimeout);
}

// A session of the caller's, its owner's uid; nullopt when the caller may
// not see it.
std::optional<uid_t> OwnerOf(State& state, const Caller& caller, const std::string& id) {
  absl::MutexLock lock(&state.mu);
  const ServiceSession* session = FindSession(state, caller, id);
  if (session == nullptr) return std::nullopt;
  return session->uid;
}

// What the control socket's client said, as the service's answer.
Answer FromControl(const absl::Status& status, const std::string& id) {
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
      return Error(404, std::string(status.message()), Reason::kNotFound);
    case absl::StatusCode::kFailedPrecondition:
      return Error(409, std::string(status.message()), Reason::kEnded);
    case absl::StatusCode::kInvalidArgument:
      return Error(400, std::string(status.message()), Reason::kInvalid);
    default:
      return Error(502,
                   fmt::format("session {}'s approvals do not answer: {}", id,
                               std::string(status.message())),
                   Reason::kWorker);
  }
}

constexpr auto kMaxApprovalsWait = std::chrono::seconds(25);

// GET /v1/sessions/ID/approvals[?after=N&wait=MS], POST .../approvals/APR:
// relayed to the session's control socket, for its owner or root. The
// socket is in the owner's state directory, theirs to change: only one the
// owner's session serves is called, so a link there to another user's
// session's socket is refused.
Answer SessionApprovals(State& state, const Caller& caller, const std::string& id,
                        const std::string& what, std::string_view query, const Request& request) {
  std::optional<uid_t> owner = OwnerOf(state, caller, id);
  if (!owner) return Error(404, fmt::format("no session {} of yours", id), Reason::kNotFound);
  const std::string dir = state.WorkerStateDir(*owner);
  if (dir.empty()) return Error(404, fmt::format("no session {} of yours", id), Reason::kNotFound);
  const std::string socket = sandbox::ControlSocketPath(dir, id);
  if (request.method() == http::verb::get && what == "approvals") {
    auto numbers = internal::ParseNumberQuery(query, {"after", "wait"});
    if (!numbers.ok()) return Unreadable(numbers.status());
    const auto after = numbers->find("after");
    const auto wait = numbers->find("wait");
    auto list = credproxy::FetchApprovals(
        socket,
        after == numbers->end() ? std::nullopt : std::optional<std::uint64_t>(after->second),
        std::min(std::chrono::milliseconds(wait == numbers->end() ? 0 : wait->second),
                 std::chrono::milliseconds(kMaxApprovalsWait)),
        *owner);
    if (!list.ok()) return FromControl(list.status(), id);
    return {200, credproxy::ApprovalsJson(*list)};
  }
  if (request.method() == http::verb::post && what.rfind("approvals/", 0) == 0) {
    auto body = credproxy::ParseApprovalDecision(request.body());
    if (!body.ok()) return Unreadable(body.status());
    if (!body->on_behalf_of.empty()) {
      return Error(400, "on_behalf_of is not for callers: the service records who called",
                   Reason::kInvalid);
    }
    auto decided = credproxy::SendDecision(socket, what.substr(10), body->approve, body->scope,
                                           body->reason, caller.user, *owner);
    if (!decided.ok()) return FromControl(decided.status(), id);
    return {200, credproxy::ApprovalJson(*decided)};
  }
  return Error(405, "approvals take GET, and POST on one approval", Reason::kMethod);
}

// GET /v1/sessions/ID/audit[?since=SEQ]: the session's audit lines, for its
// owner or root, read as the owner's file.
Answer SessionAudit(State& state, const Caller& caller, const std::string& id,
                    std::string_view query) {
  std::optional<uid_t> owner = OwnerOf(state, caller, id);
  const std::string dir = owner ? state.WorkerStateDir(*owner) : "";
  if (dir.empty()) return Error(404, fmt::format("no session {} of yours", id), Reason::kNotFound);
  auto numbers = internal::ParseNumberQuery(query, {"since"});
  if (!numbers.ok()) return Unreadable(numbers.status());
  const std::uint64_t since = numbers->count("since") != 0 ? numbers->at("since") : 0;
  auto lines = sandbox::ReadAudit(sandbox::AuditPath(dir, id), {.since = since, .reader = *owner});
  if (!lines.ok()) {
    if (absl::IsNotFound(lines.status())) {
      return Error(404, fmt::format("session {} has no audit", id), Reason::kNotFound);
    }
    return Error(500, std::string(lines.status().message()), Reason::kInternal);
  }
  std::string body;
  for (const sandbox::AuditLine& line : *lines) body += line.text + "\n";
  return {200, std::move(body), "application/x-ndjson"};
}

Answer Route(State& state, const Caller& caller, const Request& request) {
  const std::string target(request.target());
  const auto method = request.method();
  if (method == http::verb::get && target == "/v1/node") {
    absl::MutexLock lock(&state.mu);
    return {200, NodeDocument(state, caller)};
  }
  if (method == http::verb::get && target == "/v1/doctor") {
    absl::MutexLock lock(&state.mu);
    return {200, probe::ReportToJson(state.report)};
  }
  if (method == http::verb::get && target == "/v1/status") {
    absl::MutexLock lock(&state.mu);
    return {200, StatusDocument(state, &caller)};
  }
  if (method == http::verb::get && target == "/v1/sessions") {
    absl::MutexLock lock(&state.mu);
    return {200, SessionsDocument(state, caller)};
  }
  if (method == http::verb::post && target == "/v1/sessions") {
    auto [status, body] = StartSession(state, caller, request.body());
    return {status, std::move(body)};
  }
  if (method == http::verb::post && target == "/v1/service/drain") {
    if (caller.uid != 0 && caller.uid != state.service_uid) {
      return Error(403, fmt::format("only {} or root may drain this service", state.service_user),
                   Reason::kForbidden);
    }
    state.Drain(fmt::format("a drain request from {}", caller.user));
    return {202, OkJson()};
  }
  constexpr std::string_view kPrefix = "/v1/sessions/";
  if (target.rfind(kPrefix, 0) == 0) {
    const std::string rest = target.substr(kPrefix.size());
    const std::size_t slash = rest.find('/');
    const std::string id = rest.substr(0, slash);
    const std::string what = slash == std::string::npos ? "" : rest.substr(slash + 1);
    if (method == http::verb::get && what.empty()) {
      absl::MutexLock lock(&state.mu);
      const ServiceSession* session = FindSession(state, caller, id);
      if (session == nullptr)
        return Error(404, fmt::format("no session {} of yours", id), Reason::kNotFound);
      return {200, SessionJson(*session)};
    }
    if (method == http::verb::post && (what == "signal" || what == "resize" || what == "stop")) {
      return Steer(state, caller, id, what, request.body());
    }
    const std::size_t mark = what.find('?');
    const std::string call = what.substr(0, mark);
    const std::string query = mark == std::string::npos ? "" : what.substr(mark + 1);
    if (call == "approvals" || call.rfind("approvals/", 0) == 0) {
      return SessionApprovals(state, caller, id, call, query, request);
    }
    if (method == http::verb::get && call == "audit") return SessionAudit(state, caller, id, query);
  }
  return Error(404,
               fmt::format("no such call: {} {}", std::string(request.method_string()), target),
               Reason::kNotFound);
}

// GET /healthz, /readyz, /status.json, /metrics: no identity, loopback only.
Answer Health(State& state, const Request& request) {
  const std::string target(request.target());
  if (request.method() != http::verb::get) return Error(405, "only GET here", Reason::kMethod);
  absl::MutexLock lock(&state.mu);
  if (target == "/healthz") return {200, "ok\n", "text/plain"};
  if (target == "/readyz") {
    if (state.draining) return {503, "draining\n", "text/plain"};
    if (!state.report.verdict.can_sandbox)
      return {503, state.report.verdict.Line() + "\n", "text/plain"};
    return {200, "ready\n", "text/plain"};
  }
  if (target == "/status.json") return {200, StatusDocument(state, nullptr)};
  if (target == "/metrics") return {200, MetricsText(state), "text/plain; version=0.0.4"};
  return Error(404, "no such page", Reason::kNotFound);
}

// How long a client has to take its answer: one that never reads does not
// hold its connection (asio's own writes wait without a bound once the
// socket is non-blocking, SO_SNDTIMEO or not).
constexpr auto kAnswerDeadline = std::chrono::seconds(30);

// Sends all of `bytes` on `fd` within `limit`; gives up at the deadline.
void SendWithin(int fd, std::string_view bytes, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!bytes.empty()) {
    const ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(sent));
      continue;
    }
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && errno != EAGAIN) return;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd wait{fd, POLLOUT, 0};
    if (left.count() <= 0 || ::poll(&wait, 1, static_cast<int>(left.count())) <= 0) return;
  }
}

template <class Stream>
void Respond(Stream& stream, const Request& request, const Answer& answer) {
  http::response<http::string_body> response{static_cast<http::status>(answer.status),
                                             request.version()};
  response.set(http::field::server, "mojoup-node");
  response.set(http::field::content_type, answer.content_type);
  response.keep_alive(false);
  response.body() = answer.body;
  response.prepare_payload();
  std::ostringstream bytes;
  bytes << response;
  SendWithin(stream.native_handle(), bytes.str(), kAnswerDeadline);
}

// POST /v1/sessions/ID/attach with Upgrade: the 101 answer, then the
// connection goes to the session's worker, which speaks the frames.
void Attach(State& state, const Caller& caller, const std::string& id,
            asio::local::stream_protocol::socket& socket, const Request& request) {
  {
    absl::MutexLock lock(&state.mu);
    auto live = state.sessions.find(id);
    if (live == state.sessions.end() || !state.Owns(caller, live->second.info)) {
      Respond(socket, request,
              Error(404, fmt::format("no running session {} of yours", id), Reason::kNotFound));
      return;
    }
  }
  http::response<http::empty_body> upgrade{http::status::switching_protocols, request.version()};
  upgrade.set(http::field::connection, "Upgrade");
  upgrade.set(http::field::upgrade, "mojoup-attach/1");
  beast::error_code ec;
  http::write(socket, upgrade, ec);
  if (ec) return;
  if (AskWorker(state, id, WorkerOpJson({.op = "attach"}), socket.native_handle()).ok()) return;
  // The worker went in between: the session has just ended. Its exit code,
  // once the service has seen the worker go, is all there is to give.
  std::optional<int> code;
  for (int i = 0; i < 50 && !code; ++i) {
    {
      absl::MutexLock lock(&state.mu);
      const ServiceSession* session = FindSession(state, caller, id);
      if (session != nullptr && session->state == "ended") code = session->exit_code.value_or(1);
    }
    if (!code) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string frames =
      EncodeFrame(FrameType::kNotice, fmt::format("session {} ended before the attach", id)) +
      EncodeFrame(FrameType::kExit, std::to_string(code.value_or(1)));
  asio::write(socket, asio::buffer(frames), ec);
}

// The answer to a body over the limit. The client may still be sending it:
// closing now, with its bytes unread, could reset the connection before it
// reads the answer. So the write side is shut, and what the client still
// sends is read and dropped, for a second and 4 MiB at most.
template <class Stream>
void RefuseTooLarge(Stream& stream, const Request& request) {
  Respond(stream, request,
          Error(413,
                fmt::format("the request body is larger than the {} bytes this service reads",
                            kMaxRequestBody),
                Reason::kTooLarge));
  const int fd = stream.native_handle();
  ::shutdown(fd, SHUT_WR);
  // The stream closes its own descriptor; the lingering one is a copy.
  if (const int kept = ::fcntl(fd, F_DUPFD_CLOEXEC, 0); kept >= 0) LingerThenClose(kept, 4 << 20);
}

// How long a client has to send its whole request, head and body: one that
// trickles a byte at a time is cut off, not waited on.
constexpr auto kApiRequestDeadline = std::chrono::seconds(10);
constexpr auto kHealthRequestDeadline = std::chrono::seconds(5);

// Reads one request into `parser` within `limit`; `expired` says whether the
// deadline ended it.
template <class Socket>
beast::error_code ReadWithin(asio::io_context& io, Socket& socket, beast::flat_buffer& buffer,
                             http::request_parser<http::string_body>& parser,
                             std::chrono::seconds limit, bool& expired) {
  beast::error_code result;
  bool read = false;
  expired = false;
  asio::steady_timer timer(io, limit);
  http::async_read(socket, buffer, parser, [&](beast::error_code ec, std::size_t) {
    result = ec;
    read = true;
    timer.cancel();
  });
  timer.async_wait([&](beast::error_code ec) {
    if (ec || read) return;
    expired = true;
    beast::error_code ignored;
    socket.cancel(ignored);
  });
  io.run();
  io.restart();
  return result;
}

template <class Socket>
void Late(State& state, Socket& socket, const char* listener, std::chrono::seconds limit) {
  state.ConnectionRefused(listener, Reason::kDeadline);
  Respond(socket, Request{},
          Error(408, fmt::format("the request did not arrive whole within {} s", limit.count()),
                Reason::kTimeout));
}

}  // namespace

void HandleConnection(State& state, int fd, const Caller* caller) {
  // Nothing waits on a client for ever.
  timeval timeout{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  asio::io_context io;
  beast::flat_buffer buffer;
  http::request_parser<http::string_body> parser;
  parser.body_limit(kMaxRequestBody);
  parser.header_limit(16 << 10);
  beast::error_code ec;
  bool expired = false;
  if (caller == nullptr) {
    asio::ip::tcp::socket socket(io);
    socket.assign(asio::ip::tcp::v4(), fd, ec);
    ec = ReadWithin(io, socket, buffer, parser, kHealthRequestDeadline, expired);
    if (expired) {
      Late(state, socket, "health", kHealthRequestDeadline);
    } else if (ec == http::error::body_limit) {
      RefuseTooLarge(socket, parser.get());
    } else if (!ec) {
      Respond(socket, parser.get(), Health(state, parser.get()));
    }
    return;
  }
  asio::local::stream_protocol::socket socket(io);
  socket.assign(asio::local::stream_protocol(), fd, ec);
  ec = ReadWithin(io, socket, buffer, parser, kApiRequestDeadline, expired);
  if (expired) {
    Late(state, socket, "api", kApiRequestDeadline);
    return;
  }
  // Over the limit, the head was read whole.
  if (ec == http::error::body_limit) {
    RefuseTooLarge(socket, parser.get());
    return;
  }
  if (ec) return;
  const Request& request = parser.get();
  const std::string target(request.target());
  if (request.method() == http::verb::post && target.size() > 20 &&
      target.rfind("/v1/sessions/", 0) == 0 && target.substr(target.size() - 7) == "/attach") {
    if (request[http::field::upgrade] != "mojoup-attach/1") {
      Respond(socket, request,
              Error(400, "an attach asks for \"Upgrade: mojoup-attach/1\"", Reason::kInvalid));
      return;
    }
    Attach(state, *caller, target.substr(13, target.size() - 20), socket, request);
    return;
  }
  Respond(socket, request, Route(state, *caller, request));
}

std::string StatusDocument(const State& state, const Caller* caller) {
  std::vector<sandbox::SessionRecord> records;
  for (const auto& [id, slot] : state.sessions) {
    if (caller != nullptr && !state.Owns(*caller, slot.info)) continue;
    sandbox::SessionRecord record;
    record.id = id;
    record.user = slot.info.user;
    // Anyone on the machine may read the health listener: no paths there.
    record.repo = caller != nullptr ? slot.info.repo : "";
    record.tool = slot.info.tool;
    record.runtime = slot.info.runtime;
    record.state = slot.info.state;
    record.started_at = slot.info.started_at;
    record.pid = slot.entry.pid;
    records.push_back(std::move(record));
  }
  return StatusJson(state.report.verdict, records, state.image);
}

std::string NodeDocument(const State& state, const Caller& caller) {
  NodeView node;
  node.can_sandbox = state.report.verdict.can_sandbox;
  // The console's words: "Agents run in a sandbox." or "This machine cannot
  // sandbox agents: <reason>".
  node.verdict = state.report.verdict.Line();
  if (std::string failing = FailingCheck(state.report); !failing.empty()) {
    node.failing_check = std::move(failing);
  }
  // Who may use the node's sandboxes: the setting, else the node's owner.
  const std::string allowed =
      state.config.Get("node.sandbox.allowed_users").value_or(policy::NodeOwnerName(state.config));
  for (const std::string& user : policy::SplitConfigList(allowed)) {
    if (!user.empty()) node.allowed_users.push_back(user);
  }
  node.service_user = state.service_user;
  node.draining = state.draining;
  node.max_sessions = policy::ServiceMaxSessions(state.config);
  node.sessions = Visible(state, caller);
  return NodeJson(node);
}

std::string SessionsDocument(const State& state, const Caller& caller) {
  return SessionListJson(Visible(state, caller));
}

std::string FailingCheck(const probe::Report& report) {
  if (report.verdict.can_sandbox) return "";
  for (const probe::Check& check : report.checks) {
    if (check.required && check.status == probe::Status::kFail) return check.id;
  }
  return "";
}

namespace {

std::string Label(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void WriteHistogram(std::string& out, std::string_view name, std::string_view help,
                    const Histogram& h) {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.bounds.size(); ++i) {
    cumulative += h.counts.empty() ? 0 : h.counts[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, h.bounds[i], cumulative);
  }
  cumulative += h.counts.empty() ? 0 : h.counts.back();
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, cumulative,
                     name, h.sum, name, cumulative);
}

// The proxies' decisions and the approvals of every session the service
// ran: those that ended, and the last tally of each that runs.
void WriteTallies(std::string& out, const State& state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.mu) {
  WorkerTally all = state.metrics.ended_tally;
  all.approvals.pending = 0;
  for (const auto& [id, slot] : state.sessions) AddTally(all, slot.tally);
  const EgressTally& egress = all.egress;
  out += fmt::format(
      "# HELP mojoup_egress_decisions_total Requests and tunnels the sessions' proxies decided, "
      "by outcome (allowed; denied; asked: held for the operator and answered that approval is "
      "pending; error), ended sessions included, since the service started.\n"
      "# TYPE mojoup_egress_decisions_total counter\n"
      "mojoup_egress_decisions_total{{outcome=\"allowed\"}} {}\n"
      "mojoup_egress_decisions_total{{outcome=\"denied\"}} {}\n"
      "mojoup_egress_decisions_total{{outcome=\"asked\"}} {}\n"
      "mojoup_egress_decisions_total{{outcome=\"error\"}} {}\n",
      egress.allowed, egress.denied, egress.asked, egress.error);
  const ApprovalTally& approvals = all.approvals;
  out += fmt::format(
      "# HELP mojoup_approvals_pending Approvals waiting for the operator now, across sessions.\n"
      "# TYPE mojoup_approvals_pending gauge\nmojoup_approvals_pending {}\n"
      "# HELP mojoup_approvals_decided_total Approvals decided, by state (approved, denied, "
      "expired), ended sessions included, since the service started.\n"
      "# TYPE mojoup_approvals_decided_total counter\n"
      "mojoup_approvals_decided_total{{state=\"approved\"}} {}\n"
      "mojoup_approvals_decided_total{{state=\"denied\"}} {}\n"
      "mojoup_approvals_decided_total{{state=\"expired\"}} {}\n",
      approvals.pending, approvals.approved, approvals.denied, approvals.expired);
}

}  // namespace

void AddTally(WorkerTally& into, const WorkerTally& tally) {
  auto add = [](std::uint64_t& to, std::uint64_t more) {
    to = more > std::numeric_limits<std::uint64_t>::max() - to
             ? std::numeric_limits<std::uint64_t>::max()
             : to + more;
  };
  add(into.egress.allowed, tally.egress.allowed);
  add(into.egress.denied, tally.egress.denied);
  add(into.egress.asked, tally.egress.asked);
  add(into.egress.error, tally.egress.error);
  add(into.approvals.pending, tally.approvals.pending);
  add(into.approvals.approved, tally.approvals.approved);
  add(into.approvals.denied, tally.approvals.denied);
  add(into.approvals.expired, tally.approvals.expired);
}

std::string MetricsText(const State& state) {
  std::string out;
  out +=
      "# HELP mojoup_sessions Sessions the service runs now, by state, tool and runtime.\n"
      "# TYPE mojoup_sessions gauge\n";
  std::map<std::tuple<std::string, std::string, std::string>, int> by;
  for (const auto& [id, slot] : state.sessions) {
    ++by[{slot.info.state, slot.info.tool.empty() ? "none" : slot.info.tool, slot.info.runtime}];
  }
  for (const auto& [key, count] : by) {
    out += fmt::format("mojoup_sessions{{state=\"{}\",tool=\"{}\",runtime=\"{}\"}} {}\n",
                       Label(std::get<0>(key)), Label(std::get<1>(key)), Label(std::get<2>(key)),
                       count);
  }
  out += fmt::format(
      "# HELP mojoup_sessions_started_total Sessions started.\n"
      "# TYPE mojoup_sessions_started_total counter\nmojoup_sessions_started_total {}\n",
      state.metrics.started);
  out +=
      "# HELP mojoup_sessions_ended_total Sessions ended, by outcome.\n"
      "# TYPE mojoup_sessions_ended_total counter\n";
  for (const auto& [outcome, count] : state.metrics.ended) {
    out += fmt::format("mojoup_sessions_ended_total{{outcome=\"{}\"}} {}\n", Label(outcome), count);
  }
  WriteHistogram(out, "mojoup_session_start_seconds",
                 "Time from the start request to the session running.",
                 state.metrics.start_seconds);
  WriteHistogram(out, "mojoup_session_duration_seconds", "How long sessions ran.",
                 state.metrics.duration_seconds);
  out +=
      "# HELP mojoup_session_refusals_total Sessions refused, by reason.\n"
      "# TYPE mojoup_session_refusals_total counter\n";
  for (const auto& [reason, count] : state.metrics.refusals) {
    out += fmt::format("mojoup_session_refusals_total{{reason=\"{}\"}} {}\n", Label(reason), count);
  }
  out +=
      "# HELP mojoup_connection_refusals_total Connections refused at accept or cut off, by "
      "listener (api, health) and reason (not_allowed, forbidden, busy, busy_user, evicted, "
      "deadline).\n# TYPE mojoup_connection_refusals_total counter\n";
  for (const auto& [key, count] : state.metrics.connection_refusals) {
    out += fmt::format("mojoup_connection_refusals_total{{listener=\"{}\",reason=\"{}\"}} {}\n",
                       Label(key.first), Label(key.second), count);
  }
  out += fmt::format(
      "# HELP mojoup_can_sandbox Whether this machine can sandbox agents; failing_check names the "
      "check that says why not.\n# TYPE mojoup_can_sandbox gauge\n"
      "mojoup_can_sandbox{{failing_check=\"{}\"}} {}\n",
      Label(FailingCheck(state.report)), state.report.verdict.can_sandbox ? 1 : 0);
  out += fmt::format(
      "# HELP mojoup_service_draining Whether the service is draining.\n"
      "# TYPE mojoup_service_draining gauge\nmojoup_service_draining {}\n",
      state.draining ? 1 : 0);
  out += fmt::format(
      "# HELP mojoup_leftovers_reaped_total Sessions and sandboxes of dead owners cleaned up.\n"
      "# TYPE mojoup_leftovers_reaped_total counter\nmojoup_leftovers_reaped_total {}\n",
      state.metrics.reaped);
  WriteTallies(out, state);
  return out;
}

}  // namespace mojoup::service

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "fmt/format.h"
#include "mojoup/credproxy/audit.h"
#include "mojoup/internal/json_codec.h"
#include "mojoup/internal/rfc3339.h"

namespace mojoup::credproxy {
namespace {

namespace json = mojoup::internal::json;

// Optional on read, left out on write when empty or zero.
template <typename Member>
constexpr auto Omitted(const char* name, Member member) {
  return json::Optional(name, member).OmitDefault();
}

constexpr auto kAuditEvent = json::Message<AuditEvent>(
    json::Const("schema", "mojoup.audit/v1"), json::Field("seq", &AuditEvent::seq),
    json::Field("time", &AuditEvent::time), json::Field("session", &AuditEvent::session),
    json::Field("event", &AuditEvent::event), Omitted("method", &AuditEvent::method),
    Omitted("host", &AuditEvent::host), Omitted("port", &AuditEvent::port),
    Omitted("decision", &AuditEvent::decision), Omitted("reason", &AuditEvent::reason),
    Omitted("rule", &AuditEvent::rule), Omitted("source", &AuditEvent::source),
    Omitted("path", &AuditEvent::path), Omitted("credentials", &AuditEvent::credentials),
    Omitted("approval", &AuditEvent::approval), Omitted("status", &AuditEvent::status),
    Omitted("bytes_up", &AuditEvent::bytes_up), Omitted("bytes_down", &AuditEvent::bytes_down),
    Omitted("duration_ms", &AuditEvent::duration_ms), Omitted("detail", &AuditEvent::detail),
    Omitted("user", &AuditEvent::user), Omitted("uid", &AuditEvent::uid),
    Omitted("repo", &AuditEvent::repo), Omitted("tool", &AuditEvent::tool),
    Omitted("runtime", &AuditEvent::runtime), Omitted("image", &AuditEvent::image),
    Omitted("ask", &AuditEvent::ask), Omitted("exit_code", &AuditEvent::exit_code),
    Omitted("allowed", &AuditEvent::allowed), Omitted("denied", &AuditEvent::denied),
    Omitted("errors", &AuditEvent::errors), Omitted("coalesced", &AuditEvent::coalesced),
    Omitted("dropped", &AuditEvent::dropped), Omitted("expires", &AuditEvent::expires),
    Omitted("state", &AuditEvent::state), Omitted("scope", &AuditEvent::scope),
    Omitted("by", &AuditEvent::by), Omitted("kind", &AuditEvent::kind),
    Omitted("message", &AuditEvent::message), Omitted("file", &AuditEvent::file),
    Omitted("count", &AuditEvent::count), Omitted("of", &AuditEvent::of),
    Omitted("max_bytes", &AuditEvent::max_bytes));

constexpr std::size_t kMaxLine = 64 * 1024;
// Kept below the bound for the lines written at and after it: a pending
// "audit.coalesced", "audit.limit" and "session.end".
constexpr std::uint64_t kReserve = 1024;

// What makes two events identical for coalescing: all but seq, time,
// duration and byte counts.
std::string CoalescingKey(AuditEvent event) {
  event.seq = 0;
  event.time.clear();
  event.duration_ms = 0;
  event.bytes_up = 0;
  event.bytes_down = 0;
  return AuditLine(event);
}

absl::Status OpenError(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(fmt::format("{}: {}: {}", path, what, std::strerror(errno)));
}

}  // namespace

std::string AuditLine(const AuditEvent& event) { return json::ToJson(event, kAuditEvent); }

absl::StatusOr<AuditEvent> ParseAuditLine(std::string_view line) {
  return json::Parse<AuditEvent>(line, kAuditEvent, "the audit line", {.max_bytes = kMaxLine});
}

AuditLog::AuditLog(AuditOptions options) : options_(std::move(options)) {
  if (!options_.now) options_.now = [] { return std::chrono::system_clock::now(); };
}

absl::StatusOr<std::shared_ptr<AuditLog>> AuditLog::Open(AuditOptions options) {
  std::shared_ptr<AuditLog> log(new AuditLog(std::move(options)));
  const AuditOptions& opened = log->options_;
  if (!opened.path.empty()) {
    log->fd_ =
        open(opened.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (log->fd_ < 0) {
      return errno == EEXIST ? absl::AlreadyExistsError(fmt::format(
                                   "{}: the audit log exists already; a session's audit is "
                                   "never appended to",
                                   opened.path))
                             : OpenError(opened.path, "cannot create the audit log");
    }
  }
  if (!opened.mirror.empty()) {
    log->mirror_fd_ =
        open(opened.mirror.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (log->mirror_fd_ < 0) return OpenError(opened.mirror, "cannot open the audit log");
  }
  return log;
}

AuditLog::~AuditLog() {
  Close();
  if (fd_ >= 0) close(fd_);
  if (mirror_fd_ >= 0) close(mirror_fd_);
}

void AuditLog::Write(AuditEvent event) {
  std::lock_guard lock(mu_);
  event.session = options_.session;
  if (event.event == "egress") {
    if (event.decision == "allow") ++counts_.allowed;
    if (event.decision == "deny") ++counts_.denied;
    if (event.decision == "deny" && event.reason == "approval-pending") ++counts_.asked;
    if (event.decision == "error") ++counts_.errors;
  }
  if (event.event == "session.end") {
    FlushCoalesced();
    event.allowed = counts_.allowed;
    event.denied = counts_.denied;
    event.errors = counts_.errors;
    event.coalesced = counts_.coalesced;
    event.dropped = counts_.dropped;
    Append(event);  // into the room kept for it
    last_key_.clear();
    return;
  }
  if (limited_) {
    ++counts_.dropped;
    return;
  }
  std::string key = CoalescingKey(event);
  if (Coalesces(key)) {
    ++pending_;
    ++counts_.coalesced;
    return;
  }
  FlushCoalesced();
  const std::uint64_t bound = options_.max_bytes > kReserve ? options_.max_bytes - kReserve : 0;
  event.seq = seq_ + 1;
  event.time = internal::Rfc3339Millis(options_.now());
  if (written_ + AuditLine(event).size() + 1 > bound) {
    limited_ = true;
    ++counts_.dropped;
    AuditEvent limit;
    limit.event = "audit.limit";
    limit.session = options_.session;
    limit.max_bytes = options_.max_bytes;
    Append(limit);
    return;
  }
  Append(event);
  last_key_ = std::move(key);
}

bool AuditLog::Coalesces(const std::string& key) const {
  return written_ >= options_.max_bytes / 4 * 3 && key == last_key_;
}

void AuditLog::FlushCoalesced() {
  if (pending_ == 0) return;
  AuditEvent coalesced;
  coalesced.event = "audit.coalesced";
  coalesced.session = options_.session;
  coalesced.count = pending_;
  coalesced.of = seq_;
  pending_ = 0;
  Append(coalesced);
  last_key_.clear();
}

void AuditLog::Append(AuditEvent& event) {
  event.seq = ++seq_;
  event.time = internal::Rfc3339Millis(options_.now());
  const std::string line = AuditLine(event) + "\n";
  written_ += line.size();
  // One write per line, so that lines stay whole beside other writers of
  // the mirror.
  if (fd_ >= 0) (void)!::write(fd_, line.data(), line.size());
  if (mirror_fd_ >= 0) (void)!::write(mirror_fd_, line.data(), line.size());
}

std::uint64_t AuditLog::last_seq() const {
  std::lock_guard lock(mu_);
  return seq_;
}

AuditCounts AuditLog::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

void AuditLog::Close() {
  std::lock_guard lock(mu_);
  FlushCoalesced();
}

}  // namespace mojoup::credproxy

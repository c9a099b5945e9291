// AuditLog: a session's audit, one JSON line per event ("mojoup.audit/v1"):
// the proxy's egress decisions, the session's start and end, approvals and
// notices. Every line has schema, seq (1, 2, 3 ... per file, no gaps), time
// (RFC 3339 UTC, milliseconds), session and event; the other members are left
// out when empty or zero. Each line is one write(2), so lines stay whole.
//
// The file is bounded (AuditOptions::max_bytes). Past 3/4 of the bound an
// event identical to the one before it (seq, time, duration and byte counts
// aside) is counted instead of written, the count written as one
// "audit.coalesced" line when a different event comes or the log closes. At
// the bound one "audit.limit" line is written and later events are counted as
// dropped, except "session.end", for which room is kept and which carries the
// totals. Nothing is dropped silently.
//
//   auto log = AuditLog::Open({.path = dir + "/0123456789abcdef.jsonl",
//                              .session = "0123456789abcdef"});
//   AuditEvent event;
//   event.event = "egress";
//   event.method = "CONNECT";
//   event.host = "api.anthropic.com";
//   event.port = 443;
//   event.decision = "allow";
//   (*log)->Write(std::move(event));   // seq, time and session filled here
//   (*log)->Write({.event = "session.end", .exit_code = 0});  // totals filled
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace mojoup::credproxy {

inline constexpr std::string_view kAuditSchema = "mojoup.audit/v1";

// One line of the audit, member by member in the order written. Which
// members an event has is AUDIT_FORMAT's (docs/proxy.md, "The audit log").
struct AuditEvent {
  // Filled by AuditLog::Write.
  std::uint64_t seq = 0;
  std::string time{};
  std::string session{};

  // "egress", "session.start", "session.end", "approval.request",
  // "approval.decision", "notice", "policy.accept", "audit.coalesced",
  // "audit.limit".
  std::string event{};

  // egress (host, port, approval and reason for approvals too).
  std::string method{};
  std::string host{};
  std::uint16_t port = 0;
  std::string decision{};                  // "allow", "deny" or "error"
  std::string reason{};                    // a deny's X-Mojoup-Proxy-Error value; a denial's own
  std::string rule{};                      // NetworkRules::Rule::Describe(), or the grant
  std::string source{};                    // where the rule came from: "repo: FILE", "default"
  std::string path{};                      // without query or fragment; empty for a tunnel
  std::vector<std::string> credentials{};  // names of those swapped in
  std::string approval{};                  // the approval's id
  unsigned status = 0;                     // the upstream's HTTP status
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  double duration_ms = 0;
  std::string detail{};

  // session.start
  std::string user{};
  std::optional<std::uint32_t> uid{};
  std::string repo{};
  std::string tool{};
  std::string runtime{};
  std::string image{};
  std::optional<bool> ask{};

  // session.end; allowed to dropped are filled by AuditLog::Write.
  std::optional<int> exit_code{};
  std::uint64_t allowed = 0;
  std::uint64_t denied = 0;
  std::uint64_t errors = 0;
  std::uint64_t coalesced = 0;
  std::uint64_t dropped = 0;

  // approval.request, approval.decision
  std::string expires{};  // RFC 3339
  std::string state{};    // "approved", "denied", "expired"
  std::string scope{};    // "once", "session"
  std::string by{};       // a user's name, "timeout" or "session end"

  // notice, policy.accept
  std::string kind{};  // "sign-in", "quarantine", "policy", "cleanup", ...
  std::string message{};
  std::string file{};

  // audit.coalesced, audit.limit
  std::uint64_t count = 0;
  std::uint64_t of = 0;  // the seq of the line the coalesced events repeat
  std::uint64_t max_bytes = 0;
};

// The event's line, without its newline: exactly what AuditLog writes.
std::string AuditLine(const AuditEvent& event);

// A line read back (readers treat the file as untrusted): at most 64 KiB,
// schema "mojoup.audit/v1", seq, time, session and event present and of their
// types, every other member of its type when present. The error is a sentence
// naming the member ("field \"seq\" is missing"); the caller adds FILE:LINE.
absl::StatusOr<AuditEvent> ParseAuditLine(std::string_view line);

struct AuditOptions {
  // The session's own file, created (never an existing one); empty: none.
  std::string path{};
  // `--audit FILE`: the same lines appended, the file created when missing.
  std::string mirror{};
  std::string session{};
  std::uint64_t max_bytes = 16 << 20;
  // The clock for `time`; empty: the system clock.
  std::function<std::chrono::system_clock::time_point()> now{};
};

// Egress decisions by outcome, and what the bound kept out of the file.
struct AuditCounts {
  std::uint64_t allowed = 0;
  std::uint64_t denied = 0;
  std::uint64_t errors = 0;
  std::uint64_t coalesced = 0;
  std::uint64_t dropped = 0;
  // Of the denied, those that asked the operator and were answered that the
  // approval is pending (reason "approval-pending").
  std::uint64_t asked = 0;
};

// Thread-safe; shared by whoever writes the session's events (the proxy, the
// session's manager, approvals).
class AuditLog {
 public:
  // Creates `path` (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600: an existing file or
  // a symlink is an error naming it) and opens `mirror` for appending
  // (O_NOFOLLOW, created 0600 when missing). With neither, the log writes
  // nothing but still counts.
  static absl::StatusOr<std::shared_ptr<AuditLog>> Open(AuditOptions options);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Fills seq, time and session (and a "session.end"'s totals), counts an
  // "egress" event by its decision, and writes the line to the file and the
  // mirror, within the bound.
  void Write(AuditEvent event);
  // The seq of the last line written; 0 before the first.
  std::uint64_t last_seq() const;
  AuditCounts counts() const;
  // Writes a pending "audit.coalesced" count; later events are still written.
  void Close();

 private:
  explicit AuditLog(AuditOptions options);
  bool Coalesces(const std::string& key) const;
  void FlushCoalesced();
  void Append(AuditEvent& event);

  AuditOptions options_;
  int fd_ = -1;
  int mirror_fd_ = -1;
  mutable std::mutex mu_;
  std::uint64_t seq_ = 0;
  std::uint64_t written_ = 0;  // bytes
  bool limited_ = false;       // the bound was reached
  AuditCounts counts_;
  std::string last_key_;       // the previous line, seq, time, duration and bytes aside
  std::uint64_t pending_ = 0;  // events identical to the last line, not written
};

}  // namespace mojoup::credproxy

// Reading a session's audit (`mojoup.audit/v1`, one JSON object per line):
// the file the session's owner writes under the node's state directory, or
// a `--audit FILE` mirror of it. The file is taken as untrusted: it is
// opened without following a link and without blocking, must be a regular
// file the reader owns (any owner when root reads), no line may pass
// kMaxAuditLineBytes and no read the bound, and every line is checked (its
// schema, its members' types, and a `seq` that starts at 1 and rises by
// one) before a caller sees it.
//
//   auto lines = mojoup::sandbox::ReadAudit(path, {.since = 41});
//   if (!lines.ok()) return Fail(lines.status());  // "FILE:42: field \"seq\" must be 42, not 44"
//   for (const auto& line : *lines) std::cout << line.text << '\n';
//
//   // Every line as it comes, until the session's end line.
//   auto followed = mojoup::sandbox::FollowAudit(path, {}, [](const AuditLine& line) {
//     std::cout << line.text << std::endl;
//     return true;  // false stops
//   });
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mojoup/credproxy/audit.h"

namespace mojoup::sandbox {

// A line longer than this (its newline not counted) is refused.
inline constexpr std::size_t kMaxAuditLineBytes = 64 * 1024;
// node.audit.max_bytes when the node config leaves it unset.
inline constexpr std::uint64_t kDefaultAuditMaxBytes = 16 * 1024 * 1024;  // as AuditOptions

// One line of an audit: every member the format has, as the writer's codec
// reads it (a member an event leaves out keeps its default), and the line.
struct AuditLine : credproxy::AuditEvent {
  // The line as it was read, without its newline.
  std::string text;
};

// The event names the format has, in the order it lists them.
const std::vector<std::string_view>& AuditEventNames();

// Checks one line (without its newline) and reads it: the writer's
// credproxy::ParseAuditLine, then the event's name and the time's form.
// `expected_seq`, when not 0, is the seq the line must carry. The error is the sentence alone
// ("field \"seq\" must be 3, not 5"); a reader puts "FILE:LINE: " before it.
absl::StatusOr<AuditLine> ParseAuditLine(std::string_view text, std::uint64_t expected_seq = 0);

struct AuditReadOptions {
  // Only the lines whose seq is greater (every line is still checked).
  std::uint64_t since = 0;
  // The most bytes read from the file: the session's bound
  // (node.audit.max_bytes). More is refused, never read.
  std::uint64_t max_bytes = kDefaultAuditMaxBytes;
  // Whose file it must be; unset: this process's effective uid, for which
  // root (0) takes any owner's.
  std::optional<uid_t> reader{};
};

// The complete lines of the audit at `path` with seq > options.since. A
// last line without its newline (still being written) is left for the next
// read. Errors: NotFound when absent; FailedPrecondition when it is a link,
// not a regular file or not the reader's; InvalidArgument
// "PATH:LINE: what was expected" for a line that does not pass;
// ResourceExhausted past the bound.
absl::StatusOr<std::vector<AuditLine>> ReadAudit(const std::string& path,
                                                 const AuditReadOptions& options = {});

struct AuditFollowOptions {
  AuditReadOptions read{};
  // How long one wait for more lines may take before the file is read
  // again and `stop` asked (a write the watch missed is then still seen).
  std::chrono::milliseconds wait = std::chrono::seconds(1);
  // Asked after every wait: true ends the follow (after a last read).
  std::function<bool()> stop{};
};

// ReadAudit, then every line as it is appended, each handed to `on_line`
// in order, until a "session.end" line has been handed over, `on_line`
// returns false, or options.stop says so: then OK. Waits with inotify,
// each wait at most options.wait. The same errors as ReadAudit, and
// FailedPrecondition when the file is removed before its session ends.
absl::Status FollowAudit(const std::string& path, const AuditFollowOptions& options,
                         const std::function<bool(const AuditLine&)>& on_line);

}  // namespace mojoup::sandbox

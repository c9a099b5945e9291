#include <algorithm>

#include "audit/audit_time.h"
#include "fmt/format.h"
#include "mojoup/sandbox/audit_reader.h"

namespace mojoup::sandbox {
namespace {

std::string EventChoices() {
  std::string text = "one of";
  const auto& names = AuditEventNames();
  for (std::size_t i = 0; i < names.size(); ++i) {
    text += fmt::format("{}\"{}\"", i == 0 ? " " : ", ", names[i]);
  }
  return text;
}

// The codec's sentence without the name it gives the line: the reader
// names the file and line instead.
absl::Status Refused(const absl::Status& status) {
  const std::string text(status.message());
  std::string_view message = text;
  constexpr std::string_view kPrefix = "the audit line: ";
  if (message.substr(0, kPrefix.size()) == kPrefix) message.remove_prefix(kPrefix.size());
  return absl::InvalidArgumentError(std::string(message));
}

}  // namespace

const std::vector<std::string_view>& AuditEventNames() {
  static const std::vector<std::string_view> kNames = {
      "egress", "session.start", "session.end",     "approval.request", "approval.decision",
      "notice", "policy.accept", "audit.coalesced", "audit.limit"};
  return kNames;
}

absl::StatusOr<AuditLine> ParseAuditLine(std::string_view text, std::uint64_t expected_seq) {
  if (text.size() > kMaxAuditLineBytes) {
    return absl::InvalidArgumentError(fmt::format(
        "the line is {} bytes, over the {} a line may have", text.size(), kMaxAuditLineBytes));
  }
  auto event = credproxy::ParseAuditLine(text);
  if (!event.ok()) return Refused(event.status());
  AuditLine line;
  static_cast<credproxy::AuditEvent&>(line) = *std::move(event);
  const auto& names = AuditEventNames();
  if (std::find(names.begin(), names.end(), line.event) == names.end()) {
    return absl::InvalidArgumentError(
        fmt::format("field \"event\" must be {}, not \"{}\"", EventChoices(), line.event));
  }
  if (!AuditTimeMillis(line.time)) {
    return absl::InvalidArgumentError(fmt::format(
        "field \"time\" must be an RFC 3339 time in UTC (\"2026-12-04T18:20:01.123Z\"), not \"{}\"",
        line.time));
  }
  if (expected_seq != 0 && line.seq != expected_seq) {
    return absl::InvalidArgumentError(
        fmt::format("field \"seq\" must be {}, not {}", expected_seq, line.seq));
  }
  line.text = std::string(text);
  return line;
}

}  // namespace mojoup::sandbox

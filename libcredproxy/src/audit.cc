#include "audit.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "fmt/format.h"
#include "mojoup/internal/json_codec.h"
#include "mojoup/internal/rfc3339.h"

namespace mojoup::credproxy {
namespace {

namespace json = mojoup::internal::json;

// One audit line, member by member.
struct AuditLine {
  std::string time;
  std::string session;
  std::string method;
  std::string host;
  std::uint16_t port = 0;
  std::string decision;
  std::string rule;
  std::string detail;   // left out when empty
  unsigned status = 0;  // left out when 0
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  double duration_ms = 0;
};

constexpr auto kAuditLine = json::Message<AuditLine>(
    json::Field("time", &AuditLine::time), json::Field("session", &AuditLine::session),
    json::Field("method", &AuditLine::method), json::Field("host", &AuditLine::host),
    json::Field("port", &AuditLine::port), json::Field("decision", &AuditLine::decision),
    json::Field("rule", &AuditLine::rule), json::Field("detail", &AuditLine::detail).OmitDefault(),
    json::Field("status", &AuditLine::status).OmitDefault(),
    json::Field("bytes_up", &AuditLine::bytes_up),
    json::Field("bytes_down", &AuditLine::bytes_down),
    json::Field("duration_ms", &AuditLine::duration_ms));

}  // namespace

void AuditRecord::Finish(const std::string& decision, const std::string& deciding_rule,
                         const std::string& detail) {
  if (audit == nullptr) return;
  audit->Write(Line(decision, deciding_rule, detail, std::chrono::steady_clock::now()));
  audit = nullptr;  // one line per record
}

std::string AuditRecord::Line(const std::string& decision, const std::string& deciding_rule,
                              const std::string& detail,
                              std::chrono::steady_clock::time_point now) const {
  const AuditLine line{internal::Rfc3339Millis(started),
                       session,
                       method,
                       host,
                       port,
                       decision,
                       deciding_rule,
                       detail,
                       status,
                       bytes_up,
                       bytes_down,
                       std::chrono::duration<double, std::milli>(now - clock).count()};
  return json::ToJson(line, kAuditLine) + "\n";
}

absl::StatusOr<std::unique_ptr<Audit>> Audit::Open(const std::string& path) {
  auto audit = std::make_unique<Audit>();
  if (!path.empty()) {
    audit->fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (audit->fd_ < 0) {
      return absl::InvalidArgumentError(
          fmt::format("{}: cannot open the audit log: {}", path, std::strerror(errno)));
    }
  }
  return audit;
}

Audit::~Audit() {
  if (fd_ >= 0) close(fd_);
}

AuditRecord Audit::Begin(const std::string& session, const std::string& method) {
  AuditRecord record;
  record.audit = fd_ >= 0 ? this : nullptr;
  record.session = session;
  record.method = method;
  return record;
}

void Audit::Write(const std::string& line) {
  std::lock_guard lock(mu_);
  // O_APPEND and one write per line keep lines whole.
  (void)!::write(fd_, line.data(), line.size());
}

}  // namespace mojoup::credproxy

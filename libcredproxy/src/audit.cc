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
struct EgressLine {
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

constexpr auto kEgressLine = json::Message<EgressLine>(
    json::Field("time", &EgressLine::time), json::Field("session", &EgressLine::session),
    json::Field("method", &EgressLine::method), json::Field("host", &EgressLine::host),
    json::Field("port", &EgressLine::port), json::Field("decision", &EgressLine::decision),
    json::Field("rule", &EgressLine::rule),
    json::Field("detail", &EgressLine::detail).OmitDefault(),
    json::Field("status", &EgressLine::status).OmitDefault(),
    json::Field("bytes_up", &EgressLine::bytes_up),
    json::Field("bytes_down", &EgressLine::bytes_down),
    json::Field("duration_ms", &EgressLine::duration_ms));

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
  const EgressLine line{internal::Rfc3339Millis(started),
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
  return json::ToJson(line, kEgressLine) + "\n";
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

#include "audit.h"

#include <fcntl.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <cstring>

#include "fmt/format.h"
#include "mojoup/internal/rfc3339.h"

namespace mojoup::credproxy {

void AuditRecord::Finish(const std::string& decision, const std::string& deciding_rule,
                         const std::string& detail) {
  if (audit == nullptr) return;
  audit->Write(Line(decision, deciding_rule, detail, std::chrono::steady_clock::now()));
  audit = nullptr;  // one line per record
}

std::string AuditRecord::Line(const std::string& decision, const std::string& deciding_rule,
                              const std::string& detail,
                              std::chrono::steady_clock::time_point now) const {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("time");
  w.String(internal::Rfc3339Millis(started));
  w.Key("session");
  w.String(session);
  w.Key("method");
  w.String(method);
  w.Key("host");
  w.String(host);
  w.Key("port");
  w.Uint(port);
  w.Key("decision");
  w.String(decision);
  w.Key("rule");
  w.String(deciding_rule);
  if (!detail.empty()) {
    w.Key("detail");
    w.String(detail);
  }
  if (status != 0) {
    w.Key("status");
    w.Uint(status);
  }
  w.Key("bytes_up");
  w.Uint64(bytes_up);
  w.Key("bytes_down");
  w.Uint64(bytes_down);
  w.Key("duration_ms");
  w.Double(std::chrono::duration<double, std::milli>(now - clock).count());
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
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

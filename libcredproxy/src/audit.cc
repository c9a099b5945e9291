#include "audit.h"

namespace mojoup::credproxy {

void AuditRecord::Finish(const std::string& decision, const std::string& reason,
                         const std::string& detail) {
  if (log == nullptr) return;
  log->Write(Event(decision, reason, detail, std::chrono::steady_clock::now()));
  log = nullptr;  // one event per record
}

AuditEvent AuditRecord::Event(const std::string& decision, const std::string& reason,
                              const std::string& detail,
                              std::chrono::steady_clock::time_point now) const {
  AuditEvent event;
  event.event = "egress";
  event.method = method;
  event.host = host;
  event.port = port;
  event.decision = decision;
  event.reason = reason;
  event.rule = rule;
  event.source = source;
  event.path = path;
  event.credentials = credentials;
  event.approval = approval;
  event.status = status;
  event.bytes_up = bytes_up;
  event.bytes_down = bytes_down;
  event.duration_ms = std::chrono::duration<double, std::milli>(now - clock).count();
  event.detail = detail;
  return event;
}

std::string AuditPath(std::string_view target) {
  return std::string(target.substr(0, target.find_first_of("?#")));
}

}  // namespace mojoup::credproxy

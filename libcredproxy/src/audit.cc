#include "audit.h"

namespace mojoup::credproxy {

void AuditRecord::Finish(const std::string& outcome, const std::string& code,
                         const std::string& why) {
  if (log == nullptr) return;
  log->Write(Event(outcome, code, why, std::chrono::steady_clock::now()));
  log = nullptr;  // one event per record
}

AuditEvent AuditRecord::Event(const std::string& outcome, const std::string& code,
                              const std::string& why,
                              std::chrono::steady_clock::time_point now) const {
  AuditEvent written = *this;
  written.event = "egress";
  written.decision = outcome;
  written.reason = code;
  written.duration_ms = std::chrono::duration<double, std::milli>(now - clock).count();
  written.detail = why;
  return written;
}

std::string AuditPath(std::string_view target) {
  return std::string(target.substr(0, target.find_first_of("?#")));
}

}  // namespace mojoup::credproxy

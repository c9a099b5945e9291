// AuditRecord: what the proxy learns of one request or tunnel as it handles
// it, written as one "egress" event of the session's AuditLog when the
// decision is taken. Never holds a real secret: requests are logged by host,
// method and path, and credentials by name.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "mojoup/credproxy/audit.h"

namespace mojoup::credproxy {

// The egress members (method to bytes_down) are filled as the request goes.
struct AuditRecord : AuditEvent {
  AuditLog* log = nullptr;
  std::chrono::steady_clock::time_point clock = std::chrono::steady_clock::now();

  // Writes the event: `outcome` (its decision) is allow, deny or error;
  // `code` (its reason) a deny's X-Mojoup-Proxy-Error value, `why` its
  // detail. Once per record.
  void Finish(const std::string& outcome, const std::string& code, const std::string& why);
  // The event Finish writes, timed up to `now`.
  AuditEvent Event(const std::string& outcome, const std::string& code, const std::string& why,
                   std::chrono::steady_clock::time_point now) const;
};

// The path of an origin-form target ("/v1/messages?beta=true" ->
// "/v1/messages"): the query and fragment dropped.
std::string AuditPath(std::string_view target);

}  // namespace mojoup::credproxy

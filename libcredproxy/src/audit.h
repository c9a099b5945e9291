// AuditRecord: what the proxy learns of one request or tunnel as it handles
// it, written as one "egress" event of the session's AuditLog when the
// decision is taken. Never holds a real secret: requests are logged by host,
// method and path, and credentials by name.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mojoup/credproxy/audit.h"

namespace mojoup::credproxy {

struct AuditRecord {
  AuditLog* log = nullptr;
  std::string method;
  std::string host;
  std::uint16_t port = 0;
  std::string rule;                      // the deciding rule, NetworkRules::Rule::Describe()
  std::string source;                    // where it came from
  std::string path;                      // the request's, without query and fragment
  std::vector<std::string> credentials;  // the names of those swapped in
  std::string approval;
  unsigned status = 0;  // the upstream's HTTP status, when there was one
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  std::chrono::steady_clock::time_point clock = std::chrono::steady_clock::now();

  // Writes the event: decision is allow, deny or error; `reason` a deny's
  // X-Mojoup-Proxy-Error value. Once per record.
  void Finish(const std::string& decision, const std::string& reason, const std::string& detail);
  // The event Finish writes, timed up to `now`.
  AuditEvent Event(const std::string& decision, const std::string& reason,
                   const std::string& detail, std::chrono::steady_clock::time_point now) const;
};

// The path of an origin-form target ("/v1/messages?beta=true" ->
// "/v1/messages"): the query and fragment dropped.
std::string AuditPath(std::string_view target);

}  // namespace mojoup::credproxy

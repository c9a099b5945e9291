// Audit: every decision the proxy takes, one JSON line each (time, session,
// method, host, port, decision, rule, bytes each way, duration). Never holds a
// real secret: requests are logged by host and method, not by content.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"

namespace mojoup::credproxy {

class Audit;

struct AuditRecord {
  Audit* audit = nullptr;
  std::string session;
  std::string method;
  std::string host;
  std::uint16_t port = 0;
  std::string rule;
  unsigned status = 0;  // the upstream's HTTP status, when there was one
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  std::chrono::system_clock::time_point started = std::chrono::system_clock::now();
  std::chrono::steady_clock::time_point clock = std::chrono::steady_clock::now();

  // Writes the line: decision is allow, intercept, deny or error.
  void Finish(const std::string& decision, const std::string& deciding_rule,
              const std::string& detail);
  // The line Finish writes, with its newline, timed up to `now`.
  std::string Line(const std::string& decision, const std::string& deciding_rule,
                   const std::string& detail, std::chrono::steady_clock::time_point now) const;
};

class Audit {
 public:
  // An empty path writes nothing.
  static absl::StatusOr<std::unique_ptr<Audit>> Open(const std::string& path);
  ~Audit();
  AuditRecord Begin(const std::string& session, const std::string& method);
  void Write(const std::string& line);

 private:
  int fd_ = -1;
  std::mutex mu_;
};

}  // namespace mojoup::credproxy

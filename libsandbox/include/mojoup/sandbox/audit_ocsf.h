// The OCSF view of a session's audit: each line as an event of the Open
// Cybersecurity Schema Framework 1.8, for a SIEM that takes OCSF
// (`mojoup-node audit SESSION --ocsf`).
//
//   egress, CONNECT tunnel        Network Activity (4001): Open, or Fail on error
//   egress, any other method      HTTP Activity (4002): the method's activity
//   egress, denied                Detection Finding (2004), the destination as evidence
//   session.start, session.end    Process Activity (1007): Launch, Terminate
//   policy.accept                 Device Config State Change (5019): Log
//   approval.request, .decision   Detection Finding (2004): Create, then Close
//   notice "quarantine",
//   audit.limit                   Detection Finding (2004): Create
//   other notices, audit.coalesced  Base Event (0): Other
//
// Every event carries class_uid, category_uid, activity_id, type_uid
// (class_uid * 100 + activity_id), severity_id, time (milliseconds since
// the epoch), status where the line has an outcome, and metadata: version
// "1.8.0", product "mojoup-node", the session as correlation_uid and the
// line's seq as sequence.
//
//   auto event = mojoup::sandbox::AuditLineToOcsf(line, {.hostname = "node-1"});
//   if (event.ok()) std::cout << *event << '\n';
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "mojoup/sandbox/audit_reader.h"

namespace mojoup::sandbox {

inline constexpr std::string_view kOcsfVersion = "1.8.0";

struct OcsfOptions {
  // The node, as the events' device; empty: this machine's host name.
  std::string hostname;
};

// The OCSF event of one audit line (one that ReadAudit returned), as one
// line of compact JSON. InvalidArgument when the line's time is not an
// RFC 3339 UTC time.
absl::StatusOr<std::string> AuditLineToOcsf(const AuditLine& line, const OcsfOptions& options = {});

}  // namespace mojoup::sandbox

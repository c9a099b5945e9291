// Why the sandbox service refused a call: the `reason` of its error
// documents (schema mojoup.service.error/v1) and of a start it refused, and
// the label of its refusal counters in /metrics. Each value has one wire word
// and one sentence that says what it means.
#pragma once

#include <optional>
#include <string_view>

namespace mojoup {

enum class Reason {
  kNone,                // no refusal (a start that went ahead); the wire word is ""
  kInvalid,             // 400
  kTooLarge,            // 413
  kIdentity,            // 403
  kInternal,            // 500
  kWorker,              // 500, 502
  kRefused,             // a start the decision refused
  kDraining,            // 503
  kCannotSandbox,       // 503
  kMaxSessions,         // 429
  kMaxSessionsPerUser,  // 429
  kDisk,                // 429
  kNotAllowed,          // 403
  kForbidden,           // 403
  kBusy,                // 503
  kBusyUser,            // 503
  kEvicted,             // a health connection that gave way (no answer)
  kDeadline,            // a connection cut off at its deadline (counted; answered with kTimeout)
  kTimeout,             // 408, 504
  kNotFound,            // 404
  kEnded,               // 409
  kMethod,              // 405
};

// The wire word: "invalid", "max_sessions", ...; "" for kNone.
std::string_view ReasonName(Reason reason);
// One sentence on what the reason means, for documentation and logs.
std::string_view ReasonMeaning(Reason reason);
// The reason a wire word names; nullopt for a word no reason has.
std::optional<Reason> ReasonFromName(std::string_view name);

}  // namespace mojoup

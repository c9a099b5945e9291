#include "mojoup/service/reason.h"

#include <array>

namespace mojoup {
namespace {

struct ReasonEntry {
  Reason reason;
  std::string_view name;
  std::string_view meaning;
};

// In the enum's order: the table is indexed by it.
constexpr std::array<ReasonEntry, 22> kReasons = {{
    {Reason::kNone, "", "Nothing was refused."},
    {Reason::kInvalid, "invalid",
     "The request is not one the API takes; the sentence names the field."},
    {Reason::kTooLarge, "too_large", "The request's body is larger than the service reads."},
    {Reason::kIdentity, "identity",
     "The caller's account cannot be read, so no session is started for it."},
    {Reason::kInternal, "internal",
     "The service could not make what a session needs (sockets, a worker)."},
    {Reason::kWorker, "worker", "A session's worker did not answer as it should."},
    {Reason::kRefused, "refused", "The node's decision refused the session (its policy or host)."},
    {Reason::kDraining, "draining", "The service is draining and admits no new sessions."},
    {Reason::kCannotSandbox, "cannot_sandbox", "This host cannot sandbox agents now."},
    {Reason::kMaxSessions, "max_sessions",
     "The node runs its most sessions at once (node.service.max_sessions)."},
    {Reason::kMaxSessionsPerUser, "max_sessions_per_user",
     "The caller runs their most sessions at once (node.service.max_sessions_per_user)."},
    {Reason::kDisk, "disk",
     "The disk the sessions or Docker write to has less free space than "
     "node.service.min_free_disk_mb."},
    {Reason::kNotAllowed, "not_allowed", "The caller may not run agents in this node's sandboxes."},
    {Reason::kForbidden, "forbidden",
     "The call is the service's owner's or root's alone, or the caller's identity cannot be read."},
    {Reason::kBusy, "busy", "The listener answers all the connections it may at once."},
    {Reason::kBusyUser, "busy_user",
     "The caller has all the connections one user may have open at once."},
    {Reason::kEvicted, "evicted", "A health connection gave way to a newer one."},
    {Reason::kDeadline, "deadline",
     "A connection was cut off because its request did not arrive whole in time."},
    {Reason::kTimeout, "timeout", "What was asked did not happen within its deadline."},
    {Reason::kNotFound, "not_found", "No such call, or no such session of the caller's."},
    {Reason::kEnded, "ended", "The session has ended."},
    {Reason::kMethod, "method", "The path does not take that method."},
}};

constexpr bool InEnumOrder() {
  for (std::size_t i = 0; i < kReasons.size(); ++i) {
    if (static_cast<std::size_t>(kReasons[i].reason) != i) return false;
  }
  return true;
}
static_assert(InEnumOrder(), "kReasons is indexed by Reason: keep it in the enum's order");

}  // namespace

std::string_view ReasonName(Reason reason) {
  return kReasons[static_cast<std::size_t>(reason)].name;
}

std::string_view ReasonMeaning(Reason reason) {
  return kReasons[static_cast<std::size_t>(reason)].meaning;
}

std::optional<Reason> ReasonFromName(std::string_view name) {
  for (const ReasonEntry& entry : kReasons) {
    if (entry.name == name) return entry.reason;
  }
  return std::nullopt;
}

}  // namespace mojoup

// Approvals: a session's requests held for the operator's answer ("ask").
//
// When a session's policy and its node allow asking, a request to a
// destination no rule decided (no allow rule matched, no deny rule did, the
// address is not a blocked one) is not refused at once: the proxy asks here,
// holds the request up to `hold`, and goes on when the operator approves in
// time. Otherwise the agent gets a 403 naming the approval and may retry the
// same request later; the approval stays pending until it is decided, it
// expires (`expiry`, or the session's end), and a timeout never grants.
//
// Pending approvals are deduplicated by host and port and capped per session.
// A grant lives in the session only: "once" lets one request through (the
// held one, or the first retry), "session" every later request to that host
// and port. A denial stands for that host and port for the rest of the
// session, so an agent cannot ask again and again.
//
// The registry is thread-safe: the proxy asks from its thread, the operator
// decides from the control socket's (see Proxy's control_socket), and every
// change wakes what waits for it.
//
//   Approvals approvals({.session = id, .hold = 30s});
//   Approvals::Asked asked = approvals.Ask("pypi.org", 443, "GET");
//   approvals.Decide(asked.approval.id, Approvals::Decision::Approve("alice"));
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace mojoup::credproxy {

enum class ApprovalState { kPending, kApproved, kDenied, kExpired };
enum class ApprovalScope { kOnce, kSession };

// "pending", "approved", "denied", "expired"
std::string_view ApprovalStateName(ApprovalState state);
// "once", "session"
std::string_view ApprovalScopeName(ApprovalScope scope);
std::optional<ApprovalScope> ApprovalScopeNamed(std::string_view name);

struct Approval {
  std::string session;
  std::string id;  // "1", "2", ... in the order asked
  std::string host;
  std::uint16_t port = 0;
  std::string method;  // of the request that first asked
  ApprovalState state = ApprovalState::kPending;
  ApprovalScope scope = ApprovalScope::kOnce;  // for an approval
  std::string by;      // who decided: a user's name, "timeout" or "session end"
  std::string reason;  // the operator's, for a denial
  std::chrono::system_clock::time_point requested;
  std::chrono::system_clock::time_point expires;  // when a pending one lapses
  std::chrono::system_clock::time_point decided;
  bool used = false;  // a "once" grant that let its request through
};

struct ApprovalsOptions {
  std::string session;
  // How long the proxy holds a request, and how long an undecided approval
  // stays pending (node.proxy.ask_hold, node.proxy.ask_expiry).
  std::chrono::milliseconds hold{30000};
  std::chrono::milliseconds expiry{3600000};
  std::size_t max_pending = 8;                                   // node.proxy.ask_max_pending
  std::function<std::chrono::system_clock::time_point()> now{};  // unset: the system clock
  // Called outside the registry's lock, on the thread that made the change,
  // for each approval asked or decided (expiry included): the session's
  // audit, the `run` notice.
  std::function<void(const Approval&)> on_change{};
  // Set when a grant cannot be limited to one request (a runtime whose own
  // proxy applies it to the sandbox's policy): approving with scope "once"
  // is refused with this sentence, and nothing is decided.
  std::string once_refused{};
};

class Approvals {
 public:
  explicit Approvals(ApprovalsOptions options);
  Approvals(const Approvals&) = delete;
  Approvals& operator=(const Approvals&) = delete;

  // What the proxy is to do with a request no rule decided.
  struct Asked {
    enum class Outcome {
      kGranted,  // approved: go on (`approval` says by which)
      kDenied,   // the operator denied this host and port
      kPending,  // wait for a decision, up to the hold
      kFull,     // too many pending already: refuse, nothing was asked
    };
    Outcome outcome = Outcome::kPending;
    Approval approval;  // empty for kFull
  };
  // Finds the grant, denial or pending approval for host:port, or asks anew.
  // A "once" grant found here is used up.
  Asked Ask(const std::string& host, std::uint16_t port, const std::string& method);
  // The grant, denial or pending approval Ask would find for host:port,
  // without using a "once" grant up; nullopt when Ask would ask anew.
  std::optional<Approval> Find(const std::string& host, std::uint16_t port);

  // Registers `wake` to be called (on the deciding thread, outside the lock)
  // at the next change to any approval; the returned id cancels it.
  std::uint64_t OnNextChange(std::function<void()> wake);
  void CancelWake(std::uint64_t id);
  // A number that rises with every change, for long polls.
  std::uint64_t version() const;

  struct Decision {
    bool approve = false;
    ApprovalScope scope = ApprovalScope::kOnce;
    std::string by;
    std::string reason;
  };
  // The operator's decision. NotFound for an unknown id; FailedPrecondition,
  // saying why in one sentence, for one already decided or expired;
  // InvalidArgument, with once_refused, for scope once where it is refused.
  absl::StatusOr<Approval> Decide(const std::string& id, const Decision& decision);

  // Every approval of the session, oldest first, with lapsed ones expired.
  std::vector<Approval> List();
  // How many approvals are in each state now, with lapsed ones expired.
  // Only "pending" ever goes down: a decided approval stays as it was.
  struct Counts {
    std::uint64_t pending = 0;
    std::uint64_t approved = 0;
    std::uint64_t denied = 0;
    std::uint64_t expired = 0;
  };
  Counts Count();
  // The session ends: every pending approval expires ("session end").
  void EndSession();

  // What the session's grants add to its rules, one line each:
  // "allow pypi.org:443 (approval 2 by alice, scope session)".
  std::vector<std::string> Grants();

  const ApprovalsOptions& options() const { return options_; }

 private:
  std::chrono::system_clock::time_point Now() const;
  // Expires lapsed pending approvals; appends what changed to `changed`.
  void ExpireLocked(std::vector<Approval>& changed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The approval Ask finds for host:port, or nullptr.
  Approval* FindLocked(const std::string& host, std::uint16_t port)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Changed(std::vector<Approval> changed) ABSL_LOCKS_EXCLUDED(mu_);

  const ApprovalsOptions options_;
  mutable absl::Mutex mu_;
  std::vector<Approval> approvals_ ABSL_GUARDED_BY(mu_);
  std::uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  std::uint64_t next_wake_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::uint64_t, std::function<void()>> wakes_ ABSL_GUARDED_BY(mu_);
};

// An approval as another process sees it: its JSON, as the control socket,
// `mojoup-node approvals --json` and the service answer it (times RFC 3339;
// scope, by, reason and decided left out until it is decided; used only
// when true).
struct ApprovalInfo {
  std::string session;
  std::string id;
  std::string host;
  std::uint16_t port = 0;
  std::string method;
  std::string state;  // ApprovalStateName
  std::string scope;  // ApprovalScopeName, once approved
  std::string by;
  std::string reason;
  std::string requested;
  std::string expires;
  std::string decided;
  bool used = false;  // a "once" grant that let its request through
};
ApprovalInfo InfoOf(const Approval& approval);
std::string ApprovalJson(const ApprovalInfo& approval);

// {"schema": "mojoup.approvals/v1", "version": N, "approvals": [...]}
struct ApprovalList {
  std::uint64_t version = 0;
  std::vector<ApprovalInfo> approvals;
};
std::string ApprovalsJson(const ApprovalList& list);
// Reads either of the above from another process: bounded, every member checked.
absl::StatusOr<ApprovalList> ParseApprovalsJson(std::string_view text);
absl::StatusOr<ApprovalInfo> ParseApprovalJson(std::string_view text);

// A decision as it travels: the body of POST /v1/approvals/ID on a
// session's control socket and of POST /v1/sessions/ID/approvals/APR on
// the node's service, {"decision": "approve"|"deny", "scope":
// "once"|"session" (default once), "reason": TEXT, "on_behalf_of": USER}.
struct ApprovalDecision {
  bool approve = false;
  ApprovalScope scope = ApprovalScope::kOnce;
  std::string reason;
  // The user a root caller (the node's service) decides for; the control
  // socket ignores it from anyone else, and the service refuses it.
  std::string on_behalf_of;
};
// Strict: bounded, an unknown member, a wrong type, a decision or scope
// not named above, or a reason over 500 bytes is InvalidArgument, in one
// sentence.
absl::StatusOr<ApprovalDecision> ParseApprovalDecision(std::string_view text);
std::string ApprovalDecisionJson(const ApprovalDecision& decision);

// What a person could commit to keep what `approvals` granted: a policy
// file's network section allowing each approved host and port (approved
// once or for the session), hosts with their ports merged, in the order
// first approved; {"agents": {"network": {"allow": []}}} when none was.
std::string ProposedPolicy(const std::vector<ApprovalInfo>& approvals);

// The operator's side of a session's control socket (a unix socket only the
// session's user and root may use). Each call has a deadline.
//
// `listener`: the uid that must serve the socket (its session's user), as
// the kernel says (SO_PEERCRED) once connected and before anything is sent;
// another's is PermissionDenied, in one sentence, and nothing is asked. A
// caller that reaches the socket through a directory someone else can
// change (root, at a user's state directory) must set it: a link there may
// lead to another user's session.
//
// The approvals; with `after`, waits (up to `wait`, at most 60 s) until the
// version passes it, for a console that shows requests as they arrive.
absl::StatusOr<ApprovalList> FetchApprovals(const std::string& control_socket,
                                            std::optional<std::uint64_t> after = std::nullopt,
                                            std::chrono::milliseconds wait = {},
                                            std::optional<uid_t> listener = std::nullopt);
// Approves or denies one; the approval as it now is. NotFound and
// FailedPrecondition as Approvals::Decide says. `on_behalf_of`: the user a
// root caller (the node's service) decides for, recorded as the decider.
absl::StatusOr<ApprovalInfo> SendDecision(const std::string& control_socket, const std::string& id,
                                          bool approve, ApprovalScope scope,
                                          const std::string& reason,
                                          const std::string& on_behalf_of = "",
                                          std::optional<uid_t> listener = std::nullopt);

}  // namespace mojoup::credproxy

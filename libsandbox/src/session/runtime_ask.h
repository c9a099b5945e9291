// Ask on a runtime whose own proxy refuses a request outside the list at
// once (Backend::RefusesEgressItself, OpenShell's): the request is never
// held. Its refusals, read from the runtime, become the session's audit
// lines and, where the session's own rules would ask, pending approvals in
// its Approvals (so `approvals`, `approve`, `deny` and the service work as
// for any session). An approval is checked against the rules again, then
// applied by the runtime (Backend::AllowEgress); the agent's retry passes.
//
// One thread per session, stopped with it. Each call to the runtime and
// each name resolved has its own deadline, and stopping is looked for before
// each refusal and each grant, so stopping waits at most for the call under
// way. What is known already (a host and port pending, granted or denied in
// the approvals) or cannot be asked (the approvals full) is not resolved,
// and a read's refusals have one deadline together: those left when it
// passes go to the audit unasked (the agent's retry is read again).
//
//   auto ask = std::make_shared<RuntimeAsk>(options);   // backend, rules, audit
//   ask->Start(sandbox, approvals);                      // once the sandbox exists
//   ask->Approved(approval);                             // from the approvals' on_change
//   ask->Stop();
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "mojoup/credproxy/approvals.h"
#include "mojoup/credproxy/audit.h"
#include "mojoup/policy/network_rules.h"
#include "mojoup/sandbox/backend.h"

namespace mojoup::sandbox {

// Why a destination that no rule of the session allowed is not asked about,
// in one sentence; "" when it may be. The checks the session's proxy makes
// before it asks (libcredproxy upstream.h Admit, ask.cc AskOperator): a rule
// that decides it (a deny rule, or an allow rule, when the runtime refused
// for reasons of its own), a deny rule for the host on any port, an address
// the proxy never reaches (IsBlockedAddress), and a name that resolves on
// this node to one, within `resolve_deadline`. A name this node cannot
// resolve is not asked either: a grant lets the runtime's proxy reach
// whatever the sandbox resolves it to, private addresses included, and
// nothing here could check that. The operator's own pins (`run --resolve`,
// "host:port" -> address) stand for resolving, as in the session's proxy.
//
// `resolve`: the addresses a name resolves to (none when it does not), or
// DeadlineExceeded when it is still resolving at the deadline; unset, this
// node's resolver. A deadline of zero or less resolves nothing.
using Resolver = std::function<absl::StatusOr<std::vector<std::string>>(
    const std::string& host, std::chrono::milliseconds deadline)>;
std::string NotAskable(const policy::NetworkRules& rules, const std::string& host,
                       std::uint16_t port, const std::map<std::string, std::string>& pins = {},
                       std::chrono::milliseconds resolve_deadline = std::chrono::seconds(5),
                       const Resolver& resolve = {});

struct RuntimeAskOptions {
  Backend* backend = nullptr;
  policy::NetworkRules rules;
  std::map<std::string, std::string> pins;     // ProxyOptions::pins
  std::shared_ptr<credproxy::AuditLog> audit;  // may be null
  std::chrono::milliseconds interval{1000};    // between reads of the runtime
  // Tells the user what became of each grant (one sentence); may be empty.
  std::function<void(const std::string&)> tell;
  std::chrono::milliseconds resolve_deadline{5000};  // one name
  std::chrono::milliseconds read_deadline{15000};    // the names of one read's refusals
  Resolver resolve{};                                // unset: this node's resolver
};

class RuntimeAsk {
 public:
  explicit RuntimeAsk(RuntimeAskOptions options) : options_(std::move(options)) {}
  ~RuntimeAsk() { Stop(); }
  RuntimeAsk(const RuntimeAsk&) = delete;
  RuntimeAsk& operator=(const RuntimeAsk&) = delete;

  // Starts reading the sandbox's refusals, on a thread of its own; those to
  // ask about go to `approvals`.
  void Start(const std::string& sandbox, std::shared_ptr<credproxy::Approvals> approvals);
  // An approval was decided: an approved one is applied on that thread.
  void Approved(const credproxy::Approval& approval);
  // Ends the thread; what was read so far is in the audit.
  void Stop();

 private:
  void Loop();
  bool Stopping();
  void Refused(const EgressRefusal& refusal, bool may_ask,
               std::chrono::steady_clock::time_point deadline = {});
  // Why a refusal is not asked about, in one sentence; "" when it is.
  std::string WhyNotAsk(const EgressRefusal& refusal,
                        std::chrono::steady_clock::time_point deadline);
  void Grant(const credproxy::Approval& approval);
  // A notice line of the audit, about an approval when one is given.
  void Note(const std::string& kind, const std::string& message,
            const credproxy::Approval* about = nullptr);

  const RuntimeAskOptions options_;
  std::string sandbox_;
  std::shared_ptr<credproxy::Approvals> approvals_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<credproxy::Approval> grants_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
  std::string last_problem_;  // the runtime's last failure, said once
};

}  // namespace mojoup::sandbox

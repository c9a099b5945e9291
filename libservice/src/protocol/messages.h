// What the service, its workers and its clients say to each other: one typed
// struct per message and one codec each (messages.cc), described once on
// mojoup/internal/json_codec.h, so that the writer and the checked reader
// cannot disagree. The schemas are versioned; the bytes each writer makes
// are recorded in tests/golden/service/.
//
//   client  -> service  StartRequestJson          mojoup.service.start/v1
//   service -> worker   WorkerStartJson           the same, with the service's fields
//   worker  -> service  WorkerAnswer              how the start went
//   service -> client   StartAnswer               mojoup.service.started/v1 (error/v1 refused)
//   service -> client   SessionJson, SessionList  mojoup.service.session/v1, sessions/v1
//   service -> client   NodeView                  mojoup.service.node/v1
//   service -> client   ErrorJson, OkJson         mojoup.service.error/v1, ok/v1
//   client  -> service  SignalBody, ResizeBody    a session's signal and resize
//   service -> worker   WorkerOp                  attach, watch, info, signal, resize, stop
//   worker  -> service  WorkerInfo, WorkerExit    its state; its session's exit code
//   worker  -> service  WorkerTally               mojoup.service.tally/v1, its session's counts
//   service's own file  WorkerEntry               mojoup.service.worker/v1
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "mojoup/service/client.h"
#include "mojoup/service/reason.h"

namespace mojoup::service {

// The start request a worker reads from its control socket.
struct WorkerStart {
  RunRequest request;
  StartOptions options;
  std::string config_path;
  bool config_named = false;
  // The credentials' values, which the client read from its environment.
  std::map<std::string, std::string> secrets;
};

// The POST /v1/sessions body (schema mojoup.service.start/v1), without the
// service's own fields (config_path, config_named, session_id).
std::string StartRequestJson(const RunRequest& request, const StartOptions& options,
                             const std::map<std::string, std::string>& secrets);
// The body checked: InvalidArgument naming the field and what was expected
// (or saying why it is not JSON, or nests too deep); ResourceExhausted
// when it is over kMaxRequestBody.
// From a client (`from_client`), the service's own fields are refused, the
// environment may carry only the terminal's TERM and COLORTERM, and a
// secret only the value of a credential the request names.
absl::StatusOr<WorkerStart> ParseStartRequest(std::string_view json, bool from_client = false);
// The same document with the service's own fields added, for the worker.
std::string WorkerStartJson(const WorkerStart& start);

// How a worker's start went, as its first packet says it.
enum class StartStatus { kStarted, kUnsandboxed, kInvalid, kRefused };
struct WorkerAnswer {
  StartStatus status = StartStatus::kRefused;
  std::string message;  // why, when not started
  bool terminal = false;
  std::vector<std::string> notices;
};
std::string WorkerAnswerJson(const WorkerAnswer& answer);
// InvalidArgument when `json` is not a worker's answer.
absl::StatusOr<WorkerAnswer> ParseWorkerAnswer(std::string_view json);

// The service's answer to POST /v1/sessions: mojoup.service.started/v1 for a
// session that started or is to run unsandboxed, mojoup.service.error/v1
// (with the same fields) for one the decision refused.
struct StartAnswer {
  bool answered = true;  // started or unsandboxed: the started/v1 schema
  std::string id;        // "" unless started
  bool unsandboxed = false;
  bool terminal = false;
  std::string error;  // the refusal's sentence
  Reason reason = Reason::kNone;
  std::vector<std::string> notices;
};
std::string StartAnswerJson(const StartAnswer& answer);
// An answer with an "id": what else it holds is read where it is valid.
absl::StatusOr<StartAnswer> ParseStartAnswer(std::string_view json);

// {"schema": "mojoup.service.session/v1", ...}
std::string SessionJson(const ServiceSession& session);
absl::StatusOr<ServiceSession> ParseSession(std::string_view json);

// {"schema": "mojoup.service.sessions/v1", "sessions": [SESSION...]}
std::string SessionListJson(const std::vector<const ServiceSession*>& sessions);
// The sessions of a list; one that is not a session is left out.
absl::StatusOr<std::vector<ServiceSession>> ParseSessionList(std::string_view json);

// GET /v1/node: the node as its console shows it.
struct NodeView {
  bool can_sandbox = false;
  std::string verdict;                       // the verdict's line
  std::optional<std::string> failing_check;  // null when none fails
  std::vector<std::string> allowed_users;
  std::string service_user;
  bool draining = false;
  int max_sessions = 0;
  std::vector<const ServiceSession*> sessions;
};
std::string NodeJson(const NodeView& node);

// {"schema": "mojoup.service.error/v1", "error": SENTENCE, "reason": REASON}
std::string ErrorJson(std::string_view sentence, Reason reason);
// A refusal's sentence and reason word, each when the body has it.
struct ErrorDoc {
  std::string error;
  std::string reason;
};
ErrorDoc ParseErrorDoc(std::string_view json);
// {"schema": "mojoup.service.ok/v1"}
std::string OkJson();

// The bodies of POST /v1/sessions/ID/signal and /resize. Read leniently:
// a number missing or of another type reads as -1, which the service then
// refuses in its own words.
struct SignalBody {
  int signal = -1;
};
struct ResizeBody {
  int rows = -1;
  int columns = -1;
};
std::string SignalBodyJson(int signal);
std::string ResizeBodyJson(int rows, int columns);
SignalBody ParseSignalBody(std::string_view json);

ResizeBody ParseResizeBody(std::string_view json);

// What the service asks of a session's worker on its socket.
struct WorkerOp {
  std::string op;  // attach, watch, info, signal, resize, stop
  std::optional<int> signal = std::nullopt;
  std::optional<int> rows = std::nullopt;
  std::optional<int> columns = std::nullopt;
};
std::string WorkerOpJson(const WorkerOp& op);
// An op with its name; numbers that are missing or not integers read as
// absent. InvalidArgument when `json` names no op.
absl::StatusOr<WorkerOp> ParseWorkerOp(std::string_view json);

// A worker's answer to an op: {"ok": true}, or an error document.
std::string WorkerOkJson();

// A worker's answer to "info".
struct WorkerInfo {
  std::string state;  // starting, running, stopping, ended
  bool terminal = false;
  std::string runtime;
};
std::string WorkerInfoJson(const WorkerInfo& info);
// Each field when it is there and of its type: runtime "" and state
// "running" otherwise. nullopt when `json` is not an object at all.
std::optional<WorkerInfo> ParseWorkerInfo(std::string_view json);

// The packet a worker sends its watcher when its session ends.
std::string WorkerExitJson(int code);
// The exit code in such a packet; nullopt when it holds none.
std::optional<int> ParseWorkerExit(std::string_view json);

// What a worker pushes its watchers when its session's counts change (at
// most a few times a second): the proxy's decisions and the approvals so
// far. Every count but `pending` only rises over a session's life.
struct EgressTally {
  std::uint64_t allowed = 0;
  std::uint64_t denied = 0;  // refused without asking, or by the operator
  std::uint64_t asked = 0;   // held, and answered that approval is pending
  std::uint64_t error = 0;
  bool operator==(const EgressTally&) const = default;
};
struct ApprovalTally {
  std::uint64_t pending = 0;  // now
  std::uint64_t approved = 0;
  std::uint64_t denied = 0;
  std::uint64_t expired = 0;
  bool operator==(const ApprovalTally&) const = default;
};
struct WorkerTally {
  EgressTally egress;
  ApprovalTally approvals;
  bool operator==(const WorkerTally&) const = default;
};
// The largest count a tally may hold (exact in a double, as Prometheus
// reads it), and the most approvals a session may have pending
// (node.proxy.ask_max_pending's ceiling).
inline constexpr std::uint64_t kMaxTallyCount = (std::uint64_t{1} << 53) - 1;
inline constexpr std::uint64_t kMaxTallyPending = 64;
std::string WorkerTallyJson(const WorkerTally& tally);
// A tally from a worker, which runs as an ordinary user: bounded, every
// member present and a whole number within the bounds above, nothing else.
absl::StatusOr<WorkerTally> ParseWorkerTally(std::string_view json);

// The service's own files: <socket dir>/node-workers/ID.json and ID.sock per session.
struct WorkerEntry {
  std::string id;
  uid_t uid = 0;
  std::string user;
  int pid = 0;
  std::uint64_t pid_start = 0;
  std::string repo, tool, started_at;
  bool terminal = false, detached = false;
};
std::string WorkerEntryJson(const WorkerEntry& entry);
absl::StatusOr<WorkerEntry> ParseWorkerEntry(std::string_view json);

}  // namespace mojoup::service

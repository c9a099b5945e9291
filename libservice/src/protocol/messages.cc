#include "protocol/messages.h"

#include <algorithm>
#include <utility>

#include "fmt/format.h"
#include "mojoup/internal/bounded_json.h"
#include "mojoup/internal/json_codec.h"
#include "protocol/protocol.h"

namespace mojoup::service {
namespace {

namespace json = internal::json;
using json::Const;
using json::Field;
using json::Member;
using json::Optional;

// What the service reads from its clients and workers: never more than a
// request body, bytes as they are (paths need not be UTF-8).
constexpr internal::JsonBounds kRequestBounds{.max_bytes = kMaxRequestBody, .utf8 = false};
constexpr internal::JsonBounds kPacketBounds{.max_bytes = kMaxFrame, .utf8 = false};
constexpr internal::JsonBounds kAnswerBounds{.max_bytes = kMaxAnswerBody, .utf8 = false};

constexpr const char* kStartSchema = "mojoup.service.start/v1";

// The start request's fields a client sends, in their wire order; the
// service adds its own three after them for the worker. Every field may be
// absent (it keeps its default); none may be of another type.
constexpr auto kClientStartFields = std::make_tuple(
    Const("schema", kStartSchema),
    Optional("workdir", Member(&WorkerStart::request, &RunRequest::workdir)),
    Optional("tool", Member(&WorkerStart::request, &RunRequest::tool)),
    Optional("command", Member(&WorkerStart::request, &RunRequest::command)),
    Optional("credentials", Member(&WorkerStart::request, &RunRequest::credentials)),
    Optional("resolve", Member(&WorkerStart::request, &RunRequest::resolve)),
    Optional("upstream_ca", Member(&WorkerStart::request, &RunRequest::upstream_ca)),
    Optional("audit_file", Member(&WorkerStart::request, &RunRequest::audit_file)),
    Optional("accept_policy", Member(&WorkerStart::request, &RunRequest::accept_policy)),
    Optional("terminal", Member(&WorkerStart::request, &RunRequest::terminal)),
    Optional("terminal_input", Member(&WorkerStart::request, &RunRequest::terminal_input)),
    Optional("environment", Member(&WorkerStart::request, &RunRequest::environment)),
    Optional("secrets", &WorkerStart::secrets),
    Optional("detach", Member(&WorkerStart::options, &StartOptions::detach)),
    Optional("rows", Member(&WorkerStart::options, &StartOptions::rows)),
    Optional("columns", Member(&WorkerStart::options, &StartOptions::columns)));
constexpr auto kServiceStartFields =
    std::make_tuple(Optional("session_id", Member(&WorkerStart::request, &RunRequest::session_id)),
                    Optional("config_path", &WorkerStart::config_path),
                    Optional("config_named", &WorkerStart::config_named));

constexpr auto kClientStart =
    std::apply([](auto... fields) { return json::Message<WorkerStart>(fields...).RefuseUnknown(); },
               kClientStartFields);
constexpr auto kWorkerStart =
    std::apply([](auto... fields) { return json::Message<WorkerStart>(fields...).RefuseUnknown(); },
               std::tuple_cat(kClientStartFields, kServiceStartFields));

constexpr auto kStartStatus = json::Enum<StartStatus>({{StartStatus::kStarted, "started"},
                                                       {StartStatus::kUnsandboxed, "unsandboxed"},
                                                       {StartStatus::kInvalid, "invalid"},
                                                       {StartStatus::kRefused, "refused"}});
// Written by the service's own worker, read by the service, which runs as
// root: only the status is needed, the rest is taken where it is valid.
constexpr auto kWorkerAnswer =
    json::Message<WorkerAnswer>(Field("status", &WorkerAnswer::status, kStartStatus),
                                Optional("message", &WorkerAnswer::message).Lenient(),
                                Optional("terminal", &WorkerAnswer::terminal).Lenient(),
                                Optional("notices", &WorkerAnswer::notices).Lenient());

// A Reason as its wire word ("" for none).
struct ReasonCodec {
  using value_type = Reason;
  template <typename W>
  void Write(W& w, Reason reason) const {
    const std::string_view word = ReasonName(reason);
    w.String(word.data(), static_cast<rapidjson::SizeType>(word.size()));
  }
  bool Read(const rapidjson::Value& v, Reason& out, const json::Path& path,
            json::Error& error) const {
    std::string word;
    if (!v.IsString()) return error.Set(json::Error::Kind::kWrongType, path, "a string");
    word.assign(v.GetString(), v.GetStringLength());
    out = ReasonFromName(word).value_or(Reason::kNone);
    return true;
  }
};

// The started/v1 and error/v1 schemas share the answer's fields.
struct StartSchema {
  using value_type = bool;
  template <typename W>
  void Write(W& w, bool answered) const {
    w.String(answered ? "mojoup.service.started/v1" : "mojoup.service.error/v1");
  }
  bool Read(const rapidjson::Value& v, bool& answered, const json::Path&, json::Error&) const {
    answered = v.IsString() && std::string_view(v.GetString()) == "mojoup.service.started/v1";
    return true;
  }
};

constexpr auto kStartAnswer = json::Message<StartAnswer>(
    Optional("schema", &StartAnswer::answered, StartSchema{}), Field("id", &StartAnswer::id),
    Optional("unsandboxed", &StartAnswer::unsandboxed).Lenient(),
    Optional("terminal", &StartAnswer::terminal).Lenient(),
    Optional("error", &StartAnswer::error).Lenient(),
    Optional("reason", &StartAnswer::reason, ReasonCodec{}).Lenient(),
    Optional("notices", &StartAnswer::notices).Lenient());

constexpr auto kSession = json::Message<ServiceSession>(
    Const("schema", "mojoup.service.session/v1"), Optional("id", &ServiceSession::id),
    Optional("user", &ServiceSession::user), Optional("repo", &ServiceSession::repo),
    Optional("tool", &ServiceSession::tool), Optional("runtime", &ServiceSession::runtime),
    Optional("state", &ServiceSession::state), Optional("started_at", &ServiceSession::started_at),
    Optional("uid", &ServiceSession::uid).Lenient(),
    Optional("terminal", &ServiceSession::terminal),
    Optional("detached", &ServiceSession::detached),
    Optional("exit_code", &ServiceSession::exit_code).WriteNull().Lenient());

// A list of sessions the service holds: written from pointers, never read
// as a whole (ParseSessionList reads each on its own).
struct SessionPointers {
  using value_type = const ServiceSession*;
  template <typename W>
  void Write(W& w, const ServiceSession* session) const {
    kSession.Write(w, *session);
  }
  bool Read(const rapidjson::Value&, const ServiceSession*&, const json::Path&,
            json::Error&) const {
    return false;
  }
};

struct SessionList {
  std::vector<const ServiceSession*> sessions;
};
constexpr auto kSessionList =
    json::Message<SessionList>(Const("schema", "mojoup.service.sessions/v1"),
                               Field("sessions", &SessionList::sessions, SessionPointers{}));

constexpr auto kNode = json::Message<NodeView>(
    Const("schema", "mojoup.service.node/v1"), Field("can_sandbox", &NodeView::can_sandbox),
    Field("verdict", &NodeView::verdict),
    Field("failing_check", &NodeView::failing_check).WriteNull(),
    Field("allowed_users", &NodeView::allowed_users),
    Field("service_user", &NodeView::service_user), Field("draining", &NodeView::draining),
    Field("max_sessions", &NodeView::max_sessions),
    Field("sessions", &NodeView::sessions, SessionPointers{}));

struct ErrorMessage {
  std::string_view error;
  Reason reason = Reason::kNone;
};
// The error document's sentence, written from a view.
struct ViewCodec {
  using value_type = std::string_view;
  template <typename W>
  void Write(W& w, std::string_view text) const {
    w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  }
  bool Read(const rapidjson::Value&, std::string_view&, const json::Path&, json::Error&) const {
    return false;
  }
};
constexpr auto kError = json::Message<ErrorMessage>(
    Const("schema", "mojoup.service.error/v1"), Field("error", &ErrorMessage::error, ViewCodec{}),
    Field("reason", &ErrorMessage::reason, ReasonCodec{}));
// A refusal as a client reads it: each field where it is a string.
constexpr auto kErrorDoc = json::Message<ErrorDoc>(Optional("error", &ErrorDoc::error).Lenient(),
                                                   Optional("reason", &ErrorDoc::reason).Lenient());

struct Ok {};
constexpr auto kOk = json::Message<Ok>(Const("schema", "mojoup.service.ok/v1"));

constexpr auto kSignalBody =
    json::Message<SignalBody>(Optional("signal", &SignalBody::signal).Lenient());
constexpr auto kResizeBody =
    json::Message<ResizeBody>(Optional("rows", &ResizeBody::rows).Lenient(),
                              Optional("columns", &ResizeBody::columns).Lenient());

constexpr auto kWorkerOp = json::Message<WorkerOp>(
    Field("op", &WorkerOp::op), Optional("signal", &WorkerOp::signal).Lenient(),
    Optional("rows", &WorkerOp::rows).Lenient(), Optional("columns", &WorkerOp::columns).Lenient());

struct WorkerOk {
  bool ok = true;
};
constexpr auto kWorkerOk = json::Message<WorkerOk>(Field("ok", &WorkerOk::ok));

struct WorkerInfoMessage {
  bool ok = true;
  WorkerInfo info;
};
constexpr auto kWorkerInfo = json::Message<WorkerInfoMessage>(
    Field("ok", &WorkerInfoMessage::ok).Lenient(),
    Optional("state", Member(&WorkerInfoMessage::info, &WorkerInfo::state)).Lenient(),
    Optional("terminal", Member(&WorkerInfoMessage::info, &WorkerInfo::terminal)).Lenient(),
    Optional("runtime", Member(&WorkerInfoMessage::info, &WorkerInfo::runtime)).Lenient());

struct WorkerExit {
  std::optional<int> exit;
};
constexpr auto kWorkerExit =
    json::Message<WorkerExit>(Optional("exit", &WorkerExit::exit).Lenient());

constexpr auto kEgressTally = json::Message<EgressTally>(Field("allowed", &EgressTally::allowed),
                                                         Field("denied", &EgressTally::denied),
                                                         Field("asked", &EgressTally::asked),
                                                         Field("error", &EgressTally::error))
                                  .RefuseUnknown();
constexpr auto kApprovalTally =
    json::Message<ApprovalTally>(
        Field("pending", &ApprovalTally::pending), Field("approved", &ApprovalTally::approved),
        Field("denied", &ApprovalTally::denied), Field("expired", &ApprovalTally::expired))
        .RefuseUnknown();
constexpr auto kWorkerTally =
    json::Message<WorkerTally>(Const("schema", "mojoup.service.tally/v1"),
                               Field("egress", &WorkerTally::egress, kEgressTally),
                               Field("approvals", &WorkerTally::approvals, kApprovalTally))
        .RefuseUnknown();

constexpr auto kWorkerEntry = json::Message<WorkerEntry>(
    Const("schema", "mojoup.service.worker/v1"), Optional("id", &WorkerEntry::id),
    Optional("user", &WorkerEntry::user), Optional("repo", &WorkerEntry::repo),
    Optional("tool", &WorkerEntry::tool), Optional("started_at", &WorkerEntry::started_at),
    Field("uid", &WorkerEntry::uid), Field("pid", &WorkerEntry::pid),
    Field("pid_start", &WorkerEntry::pid_start), Optional("terminal", &WorkerEntry::terminal),
    Optional("detached", &WorkerEntry::detached));

// A value read leniently from a body that may not be JSON at all: parsed
// within `bounds`, then each field taken where it is valid.
template <typename T, typename Codec>
T ReadLeniently(std::string_view text, const Codec& codec, internal::JsonBounds bounds) {
  T out{};
  rapidjson::Document doc;
  if (internal::ParseBoundedJson(text, doc, "a message", bounds).ok() && doc.IsObject()) {
    json::Read(doc, out, codec).IgnoreError();
  }
  return out;
}

absl::Status Bad(std::string_view field, std::string_view expected) {
  return absl::InvalidArgumentError(
      fmt::format("the start request: field \"{}\" must be {}", field, expected));
}

bool IsEnvironmentWord(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// What a client may not set: the service's own fields, an environment
// beyond the terminal's, a secret that is not a named credential's value.
absl::Status CheckClientFields(const rapidjson::Document& doc, const WorkerStart& start) {
  for (const char* own : {"session_id", "config_path", "config_named"}) {
    if (doc.HasMember(own)) {
      return absl::InvalidArgumentError(
          fmt::format("the start request: field \"{}\" is the service's to set", own));
    }
  }
  for (const auto& [name, value] : start.request.environment) {
    if (name != "TERM" && name != "COLORTERM") return Bad("environment", "only TERM and COLORTERM");
  }
  for (const auto& secret : start.secrets) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one.
    const std::string& name = secret.first;
    const bool named =
        std::any_of(start.request.credentials.begin(), start.request.credentials.end(),
                    [&name](const std::string& credential) {
                      return credential.substr(0, credential.find('=')) == name;
                    });
    if (!named || !IsEnvironmentWord(name) || name.rfind("LD_", 0) == 0 ||
        name.rfind("MOJOUP_", 0) == 0 || name == "PATH" || name == "HOME") {
      return Bad("secrets", "the values of the credentials the request names, by NAME");
    }
  }
  return absl::OkStatus();
}

// What every start request must hold, whoever sent it.
absl::Status CheckStartValues(const RunRequest& r) {
  if (r.command.empty()) return Bad("command", "the command to run, one or more words");
  if (r.workdir.empty() || r.workdir.front() != '/') {
    return Bad("workdir", "an absolute path inside the repository");
  }
  for (const std::string* path : {&r.upstream_ca, &r.audit_file}) {
    if (!path->empty() && path->front() != '/') {
      return Bad(path == &r.upstream_ca ? "upstream_ca" : "audit_file", "an absolute path");
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string StartRequestJson(const RunRequest& request, const StartOptions& options,
                             const std::map<std::string, std::string>& secrets) {
  WorkerStart start;
  start.request = request;
  start.options = options;
  start.secrets = secrets;
  return json::ToJson(start, kClientStart);
}

std::string WorkerStartJson(const WorkerStart& start) { return json::ToJson(start, kWorkerStart); }

absl::StatusOr<WorkerStart> ParseStartRequest(std::string_view text, bool from_client) {
  constexpr std::string_view kWhat = "the start request";
  rapidjson::Document doc;
  if (absl::Status parsed = internal::ParseBoundedJson(text, doc, kWhat, kRequestBounds);
      !parsed.ok()) {
    return parsed;
  }
  WorkerStart start;
  if (absl::Status read = json::Read(doc, start, kWorkerStart); !read.ok()) {
    return absl::InvalidArgumentError(fmt::format("{}: {}", kWhat, std::string(read.message())));
  }
  if (from_client) {
    if (absl::Status client = CheckClientFields(doc, start); !client.ok()) return client;
  }
  if (absl::Status values = CheckStartValues(start.request); !values.ok()) return values;
  return start;
}

std::string WorkerAnswerJson(const WorkerAnswer& answer) {
  return json::ToJson(answer, kWorkerAnswer);
}

absl::StatusOr<WorkerAnswer> ParseWorkerAnswer(std::string_view text) {
  return json::Parse<WorkerAnswer>(text, kWorkerAnswer, "the worker's answer", kPacketBounds);
}

std::string StartAnswerJson(const StartAnswer& answer) {
  return json::ToJson(answer, kStartAnswer);
}

absl::StatusOr<StartAnswer> ParseStartAnswer(std::string_view text) {
  return json::Parse<StartAnswer>(text, kStartAnswer, "the sandbox service's answer",
                                  kAnswerBounds);
}

std::string SessionJson(const ServiceSession& session) { return json::ToJson(session, kSession); }

absl::StatusOr<ServiceSession> ParseSession(std::string_view text) {
  return json::Parse<ServiceSession>(text, kSession, "the service's session", kAnswerBounds);
}

std::string SessionListJson(const std::vector<const ServiceSession*>& sessions) {
  return json::ToJson(SessionList{sessions}, kSessionList);
}

absl::StatusOr<std::vector<ServiceSession>> ParseSessionList(std::string_view text) {
  rapidjson::Document doc;
  if (!internal::ParseBoundedJson(text, doc, "the sandbox service's session list", kAnswerBounds)
           .ok() ||
      !doc.IsObject() || !doc.HasMember("sessions") || !doc["sessions"].IsArray()) {
    return absl::InvalidArgumentError("the sandbox service's session list is not one");
  }
  std::vector<ServiceSession> sessions;
  for (const rapidjson::Value& item : doc["sessions"].GetArray()) {
    ServiceSession session;
    if (json::Read(item, session, kSession).ok()) sessions.push_back(std::move(session));
  }
  return sessions;
}

std::string NodeJson(const NodeView& node) { return json::ToJson(node, kNode); }

std::string ErrorJson(std::string_view sentence, Reason reason) {
  return json::ToJson(ErrorMessage{sentence, reason}, kError);
}

ErrorDoc ParseErrorDoc(std::string_view text) {
  return ReadLeniently<ErrorDoc>(text, kErrorDoc, kAnswerBounds);
}

std::string OkJson() { return json::ToJson(Ok{}, kOk); }

std::string SignalBodyJson(int signal) { return json::ToJson(SignalBody{signal}, kSignalBody); }

std::string ResizeBodyJson(int rows, int columns) {
  return json::ToJson(ResizeBody{rows, columns}, kResizeBody);
}

SignalBody ParseSignalBody(std::string_view text) {
  return ReadLeniently<SignalBody>(text, kSignalBody, kRequestBounds);
}

ResizeBody ParseResizeBody(std::string_view text) {
  return ReadLeniently<ResizeBody>(text, kResizeBody, kRequestBounds);
}

std::string WorkerOpJson(const WorkerOp& op) { return json::ToJson(op, kWorkerOp); }

absl::StatusOr<WorkerOp> ParseWorkerOp(std::string_view text) {
  return json::Parse<WorkerOp>(text, kWorkerOp, "the service's request", kPacketBounds);
}

std::string WorkerOkJson() { return json::ToJson(WorkerOk{}, kWorkerOk); }

std::string WorkerInfoJson(const WorkerInfo& info) {
  return json::ToJson(WorkerInfoMessage{true, info}, kWorkerInfo);
}

std::optional<WorkerInfo> ParseWorkerInfo(std::string_view text) {
  WorkerInfoMessage message;
  message.info.state = "running";
  rapidjson::Document doc;
  if (!internal::ParseBoundedJson(text, doc, "the worker's info", kPacketBounds).ok() ||
      !doc.IsObject()) {
    return std::nullopt;
  }
  json::Read(doc, message, kWorkerInfo).IgnoreError();
  return message.info;
}

std::string WorkerExitJson(int code) { return json::ToJson(WorkerExit{code}, kWorkerExit); }

std::optional<int> ParseWorkerExit(std::string_view text) {
  return ReadLeniently<WorkerExit>(text, kWorkerExit, kPacketBounds).exit;
}

std::string WorkerTallyJson(const WorkerTally& tally) { return json::ToJson(tally, kWorkerTally); }

absl::StatusOr<WorkerTally> ParseWorkerTally(std::string_view text) {
  constexpr std::string_view kWhat = "the worker's tally";
  // A tally is a few hundred bytes, two levels deep; nothing larger is read.
  auto tally =
      json::Parse<WorkerTally>(text, kWorkerTally, kWhat, {.max_bytes = 4096, .max_depth = 2});
  if (!tally.ok()) return tally.status();
  const EgressTally& e = tally->egress;
  const ApprovalTally& a = tally->approvals;
  for (std::uint64_t count :
       {e.allowed, e.denied, e.asked, e.error, a.approved, a.denied, a.expired}) {
    if (count > kMaxTallyCount) {
      return absl::InvalidArgumentError(
          fmt::format("{}: a count must be at most {}", kWhat, kMaxTallyCount));
    }
  }
  if (a.pending > kMaxTallyPending) {
    return absl::InvalidArgumentError(
        fmt::format("{}: field \"approvals.pending\" must be at most {}", kWhat, kMaxTallyPending));
  }
  return tally;
}

std::string WorkerEntryJson(const WorkerEntry& entry) { return json::ToJson(entry, kWorkerEntry); }

absl::StatusOr<WorkerEntry> ParseWorkerEntry(std::string_view text) {
  auto entry = json::Parse<WorkerEntry>(text, kWorkerEntry, "a worker entry", kRequestBounds);
  if (entry.ok() && entry->pid <= 1) {
    return absl::InvalidArgumentError("a worker entry: expected uid, pid and pid_start numbers");
  }
  return entry;
}

}  // namespace mojoup::service

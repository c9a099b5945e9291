#include "mojoup/sandbox/audit_ocsf.h"

#include <unistd.h>

#include <array>
#include <optional>
#include <vector>

#include "audit/audit_time.h"
#include "fmt/format.h"
#include "mojoup/internal/json_codec.h"

namespace mojoup::sandbox {
// A namespace of its own: the objects' plain names (User, Device, Event)
// must not meet another file's in a unity batch.
namespace ocsf {
namespace {

namespace json = internal::json;

// The OCSF objects the view writes, with only the attributes it fills.
struct Product {
  std::string name = "mojoup-node";
  std::string vendor_name = "mojoup";
};
struct Metadata {
  std::string version{kOcsfVersion};
  Product product;
  std::string uid;
  std::string correlation_uid;
  std::string log_name = "audit";
  std::string log_version{credproxy::kAuditSchema};
  std::string original_time;
  std::int64_t sequence = 0;
};
struct User {
  std::string name;
  std::string uid;
};
struct Device {
  std::string hostname;
  std::string name;
  std::string type = "Server";
  int type_id = 1;
};
struct Endpoint {
  std::string hostname;
  std::uint16_t port = 0;
};
struct Url {
  std::string hostname;
  std::uint16_t port = 0;
  std::string path;
};
struct HttpRequest {
  std::string http_method;
  Url url;
};
struct HttpResponse {
  unsigned code = 0;
};
struct Traffic {
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
};
struct Process {
  std::string name;
  std::string uid;
  std::optional<User> user;
};
struct Actor {
  std::string app_name = "mojoup-node";
  std::optional<User> user;
};
struct FindingInfo {
  std::string uid;
  std::string title;
  std::string desc;
  std::vector<std::string> types;
};
struct Evidence {
  std::string name;
  std::optional<Endpoint> dst_endpoint;
  std::optional<HttpRequest> http_request;
};

struct Event {
  int activity_id = 0;
  std::string activity_name;
  int category_uid = 0;
  std::string category_name;
  int class_uid = 0;
  std::string class_name;
  std::int64_t type_uid = 0;
  std::string type_name;
  int severity_id = 1;
  std::string severity = "Informational";
  std::int64_t time = 0;
  Metadata metadata;
  std::string message;
  int status_id = 0;
  std::string status;
  std::string status_code;
  std::string status_detail;
  std::int64_t duration = 0;
  std::optional<Actor> actor;
  std::optional<Device> device;
  std::optional<Process> process;
  std::optional<int> exit_code;
  std::optional<Endpoint> dst_endpoint;
  std::optional<HttpRequest> http_request;
  std::optional<HttpResponse> http_response;
  std::optional<Traffic> traffic;
  std::optional<FindingInfo> finding_info;
  std::vector<Evidence> evidences;
  bool is_alert = false;
};

constexpr auto kProduct = json::Message<Product>(json::Field("name", &Product::name),
                                                 json::Field("vendor_name", &Product::vendor_name));
constexpr auto kMetadata = json::Message<Metadata>(
    json::Field("version", &Metadata::version),
    json::Field("product", &Metadata::product, kProduct), json::Field("uid", &Metadata::uid),
    json::Field("correlation_uid", &Metadata::correlation_uid),
    json::Field("log_name", &Metadata::log_name),
    json::Field("log_version", &Metadata::log_version),
    json::Field("original_time", &Metadata::original_time),
    json::Field("sequence", &Metadata::sequence));
constexpr auto kUser = json::Message<User>(json::Field("name", &User::name).OmitDefault(),
                                           json::Field("uid", &User::uid).OmitDefault());
constexpr auto kDevice = json::Message<Device>(
    json::Field("hostname", &Device::hostname), json::Field("name", &Device::name),
    json::Field("type", &Device::type), json::Field("type_id", &Device::type_id));
constexpr auto kEndpoint = json::Message<Endpoint>(json::Field("hostname", &Endpoint::hostname),
                                                   json::Field("port", &Endpoint::port));
constexpr auto kUrl =
    json::Message<Url>(json::Field("hostname", &Url::hostname), json::Field("port", &Url::port),
                       json::Field("path", &Url::path));
constexpr auto kHttpRequest =
    json::Message<HttpRequest>(json::Field("http_method", &HttpRequest::http_method).OmitDefault(),
                               json::Field("url", &HttpRequest::url, kUrl));
constexpr auto kHttpResponse =
    json::Message<HttpResponse>(json::Field("code", &HttpResponse::code));
constexpr auto kTraffic = json::Message<Traffic>(json::Field("bytes_in", &Traffic::bytes_in),
                                                 json::Field("bytes_out", &Traffic::bytes_out));
constexpr auto kProcess = json::Message<Process>(json::Field("name", &Process::name).OmitDefault(),
                                                 json::Field("uid", &Process::uid),
                                                 json::Optional("user", &Process::user, kUser));
constexpr auto kActor = json::Message<Actor>(json::Field("app_name", &Actor::app_name),
                                             json::Optional("user", &Actor::user, kUser));
constexpr auto kFindingInfo = json::Message<FindingInfo>(
    json::Field("uid", &FindingInfo::uid), json::Field("title", &FindingInfo::title),
    json::Field("desc", &FindingInfo::desc).OmitDefault(),
    json::Field("types", &FindingInfo::types).OmitDefault());
constexpr auto kEvidence =
    json::Message<Evidence>(json::Field("name", &Evidence::name),
                            json::Optional("dst_endpoint", &Evidence::dst_endpoint, kEndpoint),
                            json::Optional("http_request", &Evidence::http_request, kHttpRequest));

constexpr auto kEvent = json::Message<Event>(
    json::Field("activity_id", &Event::activity_id),
    json::Field("activity_name", &Event::activity_name),
    json::Field("category_uid", &Event::category_uid),
    json::Field("category_name", &Event::category_name),
    json::Field("class_uid", &Event::class_uid), json::Field("class_name", &Event::class_name),
    json::Field("type_uid", &Event::type_uid), json::Field("type_name", &Event::type_name),
    json::Field("severity_id", &Event::severity_id), json::Field("severity", &Event::severity),
    json::Field("time", &Event::time), json::Field("metadata", &Event::metadata, kMetadata),
    json::Field("message", &Event::message).OmitDefault(),
    json::Field("status_id", &Event::status_id).OmitDefault(),
    json::Field("status", &Event::status).OmitDefault(),
    json::Field("status_code", &Event::status_code).OmitDefault(),
    json::Field("status_detail", &Event::status_detail).OmitDefault(),
    json::Field("duration", &Event::duration).OmitDefault(),
    json::Optional("actor", &Event::actor, kActor),
    json::Optional("device", &Event::device, kDevice),
    json::Optional("process", &Event::process, kProcess),
    json::Optional("exit_code", &Event::exit_code),
    json::Optional("dst_endpoint", &Event::dst_endpoint, kEndpoint),
    json::Optional("http_request", &Event::http_request, kHttpRequest),
    json::Optional("http_response", &Event::http_response, kHttpResponse),
    json::Optional("traffic", &Event::traffic, kTraffic),
    json::Optional("finding_info", &Event::finding_info, kFindingInfo),
    json::Field("evidences", &Event::evidences, kEvidence).OmitDefault(),
    json::Field("is_alert", &Event::is_alert).OmitDefault());

// A class of the schema: its category and the names the event repeats.
struct OcsfClass {
  int category_uid;
  const char* category_name;
  int class_uid;
  const char* class_name;
};
constexpr OcsfClass kBaseEvent{0, "Uncategorized", 0, "Base Event"};
constexpr OcsfClass kProcessActivity{1, "System Activity", 1007, "Process Activity"};
constexpr OcsfClass kDetectionFinding{2, "Findings", 2004, "Detection Finding"};
constexpr OcsfClass kNetworkActivity{4, "Network Activity", 4001, "Network Activity"};
constexpr OcsfClass kHttpActivity{4, "Network Activity", 4002, "HTTP Activity"};
constexpr OcsfClass kDeviceConfigStateChange{5, "Discovery", 5019, "Device Config State Change"};

constexpr int kOther = 99;
constexpr std::array<const char*, 7> kSeverities = {"Unknown", "Informational", "Low",  "Medium",
                                                    "High",    "Critical",      "Fatal"};
enum Severity { kInformational = 1, kLow = 2, kMedium = 3 };

void Classify(Event& event, const OcsfClass& of, int activity_id, std::string activity_name) {
  event.category_uid = of.category_uid;
  event.category_name = of.category_name;
  event.class_uid = of.class_uid;
  event.class_name = of.class_name;
  event.activity_id = activity_id;
  event.activity_name = std::move(activity_name);
  event.type_uid = std::int64_t{of.class_uid} * 100 + activity_id;
  event.type_name = fmt::format("{}: {}", of.class_name, event.activity_name);
}

void Rate(Event& event, Severity severity) {
  event.severity_id = severity;
  event.severity = kSeverities[severity];
}

void Outcome(Event& event, bool success) {
  event.status_id = success ? 1 : 2;
  event.status = success ? "Success" : "Failure";
}

// HTTP Activity's activities, in its order; a method it lacks is Other.
int HttpActivity(std::string_view method) {
  static constexpr std::array<std::string_view, 9> kMethods = {
      "CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT", "TRACE", "PATCH"};
  for (std::size_t i = 0; i < kMethods.size(); ++i) {
    if (kMethods[i] == method) return static_cast<int>(i) + 1;
  }
  return kOther;
}

std::string Capitalised(std::string_view method) {
  std::string name(method);
  for (std::size_t i = 1; i < name.size(); ++i) {
    if (name[i] >= 'A' && name[i] <= 'Z') name[i] = static_cast<char>(name[i] - 'A' + 'a');
  }
  return name;
}

std::string Destination(const AuditLine& line) {
  return fmt::format("{}:{}{}", line.host, line.port, line.path);
}

std::optional<HttpRequest> RequestOf(const AuditLine& line) {
  if (line.method == "CONNECT") return std::nullopt;
  HttpRequest request;
  if (HttpActivity(line.method) != kOther) request.http_method = line.method;
  request.url = {line.host, line.port, line.path.empty() ? "/" : line.path};
  return request;
}

void Egress(const AuditLine& line, Event& event) {
  const bool tunnel = line.method == "CONNECT";
  if (tunnel) {
    const bool failed = line.decision == "error";
    Classify(event, kNetworkActivity, failed ? 4 : 1, failed ? "Fail" : "Open");
  } else {
    const int activity = HttpActivity(line.method);
    Classify(event, kHttpActivity, activity, Capitalised(line.method));
    event.http_request = RequestOf(line);
    if (line.status != 0) event.http_response = HttpResponse{line.status};
  }
  Outcome(event, line.decision == "allow");
  Rate(event, line.decision == "allow" ? kInformational : kLow);
  event.status_code = line.decision == "allow" ? "" : line.decision;
  event.status_detail = line.detail.empty() ? line.rule : line.detail;
  event.duration = static_cast<std::int64_t>(line.duration_ms);
  event.dst_endpoint = Endpoint{line.host, line.port};
  event.traffic = Traffic{line.bytes_down, line.bytes_up};
  event.message = fmt::format("{} {} {}{}", line.method, Destination(line),
                              line.decision == "allow" ? "allowed" : line.decision,
                              line.rule.empty() ? "" : " by " + line.rule);
}

// A finding the operator should look at: created, new, an alert.
void NewFinding(Event& event) {
  Classify(event, kDetectionFinding, 1, "Create");
  Rate(event, kMedium);
  event.status_id = 1;
  event.status = "New";
  event.is_alert = true;
}

// A denial: what the proxy refused, and the rule or reason that did.
void Denial(const AuditLine& line, Event& event) {
  NewFinding(event);
  const std::string why = line.reason.empty() ? "denied" : line.reason;
  event.message = fmt::format("{} {} denied: {}", line.method, Destination(line), why);
  event.finding_info = FindingInfo{
      fmt::format("{}/{}", line.session, line.seq),
      fmt::format("Egress to {}:{} denied", line.host, line.port),
      line.rule.empty()
          ? why
          : fmt::format("{} ({}{})", why, line.rule, line.source.empty() ? "" : ", " + line.source),
      {"Egress denial"}};
  event.evidences.push_back({"destination", Endpoint{line.host, line.port}, RequestOf(line)});
}

void Approval(const AuditLine& line, Event& event) {
  const bool asked = line.event == "approval.request";
  Classify(event, kDetectionFinding, asked ? 1 : 3, asked ? "Create" : "Close");
  Rate(event, asked ? kMedium : kInformational);
  event.status_id = asked ? 1 : 4;
  event.status = asked ? "New" : "Resolved";
  event.is_alert = asked;
  const std::string where = fmt::format("{}:{}", line.host, line.port);
  std::string what =
      asked ? fmt::format("Approval {} asked for {}, until {}", line.approval, where, line.expires)
            : fmt::format("Approval {} for {} {}", line.approval, where, line.state);
  if (!asked && !line.by.empty()) what += " by " + line.by;
  if (!line.scope.empty()) what += " (scope " + line.scope + ")";
  if (!line.reason.empty()) what += ": " + line.reason;
  event.message = what;
  event.finding_info = FindingInfo{fmt::format("{}/approval/{}", line.session, line.approval),
                                   fmt::format("Egress to {} asked for approval", where),
                                   what,
                                   {"Egress approval"}};
  event.evidences.push_back({"destination", Endpoint{line.host, line.port}, std::nullopt});
}

// A risk the node reports: a sign-in quarantined, the audit's bound reached.
void Risk(const AuditLine& line, Event& event) {
  NewFinding(event);
  event.message = line.event == "audit.limit"
                      ? fmt::format(
                            "The audit reached its bound of {} bytes; later events are "
                            "counted, not written",
                            line.max_bytes)
                      : line.message;
  const std::string kind = line.event == "audit.limit" ? "Audit bound" : "Quarantine";
  event.finding_info =
      FindingInfo{fmt::format("{}/{}", line.session, line.seq), event.message, "", {kind}};
}

void SessionEvent(const AuditLine& line, const Device& device, Event& event) {
  const bool start = line.event == "session.start";
  Classify(event, kProcessActivity, start ? 1 : 2, start ? "Launch" : "Terminate");
  event.device = device;
  event.actor = Actor{};
  event.process = Process{line.tool, line.session, std::nullopt};
  if (start) {
    const User user{line.user, line.uid ? std::to_string(*line.uid) : ""};
    if (!user.name.empty() || !user.uid.empty()) {
      event.actor->user = user;
      event.process->user = user;
    }
    event.message = fmt::format("Session {} started: {} for {} in {} ({}{})", line.session,
                                line.tool.empty() ? "a command" : line.tool, line.user, line.repo,
                                line.runtime, line.ask.value_or(false) ? ", ask on" : "");
    return;
  }
  event.exit_code = line.exit_code;
  if (line.exit_code) Outcome(event, *line.exit_code == 0);
  event.message = fmt::format(
      "Session {} ended{}: {} allowed, {} denied, {} errors, {} coalesced, {} dropped",
      line.session, line.exit_code ? fmt::format(" with exit code {}", *line.exit_code) : "",
      line.allowed, line.denied, line.errors, line.coalesced, line.dropped);
}

void Other(const AuditLine& line, Event& event) {
  Classify(event, kBaseEvent, kOther, line.event == "notice" ? line.kind : line.event);
  event.message =
      line.event == "audit.coalesced"
          ? fmt::format("{} more events like line {} were not written", line.count, line.of)
          : line.message;
}

std::string HostName() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return "localhost";
  return name.data();
}

}  // namespace
}  // namespace ocsf

absl::StatusOr<std::string> AuditLineToOcsf(const AuditLine& line, const OcsfOptions& options) {
  const std::optional<std::int64_t> time = AuditTimeMillis(line.time);
  if (!time) {
    return absl::InvalidArgumentError(
        fmt::format("line {}: \"{}\" is not an RFC 3339 time in UTC", line.seq, line.time));
  }
  ocsf::Event event;
  event.time = *time;
  event.metadata.uid = fmt::format("{}/{}", line.session, line.seq);
  event.metadata.correlation_uid = line.session;
  event.metadata.original_time = line.time;
  event.metadata.sequence = static_cast<std::int64_t>(line.seq);
  const std::string host = options.hostname.empty() ? ocsf::HostName() : options.hostname;
  const ocsf::Device device{host, host};
  if (line.event == "egress") {
    line.decision == "deny" ? ocsf::Denial(line, event) : ocsf::Egress(line, event);
  } else if (line.event == "session.start" || line.event == "session.end") {
    ocsf::SessionEvent(line, device, event);
  } else if (line.event == "policy.accept") {
    ocsf::Classify(event, ocsf::kDeviceConfigStateChange, 1, "Log");
    ocsf::Outcome(event, true);
    event.device = device;
    event.message = line.message.empty() ? "Policy " + line.file + " accepted" : line.message;
  } else if (line.event == "approval.request" || line.event == "approval.decision") {
    ocsf::Approval(line, event);
  } else if ((line.event == "notice" && line.kind == "quarantine") || line.event == "audit.limit") {
    ocsf::Risk(line, event);
  } else {
    ocsf::Other(line, event);
  }
  return internal::json::ToJson(event, ocsf::kEvent);
}

}  // namespace mojoup::sandbox

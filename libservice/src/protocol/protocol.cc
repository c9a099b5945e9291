#include "protocol/protocol.h"

#include <poll.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fmt/format.h"
#include "mojoup/internal/bounded_json.h"

namespace mojoup::service {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;
using Value = rapidjson::Value;

void Strings(Writer& w, const char* key, const std::vector<std::string>& items) {
  w.Key(key);
  w.StartArray();
  for (const std::string& item : items) w.String(item);
  w.EndArray();
}

void StringMap(Writer& w, const char* key, const std::map<std::string, std::string>& items) {
  w.Key(key);
  w.StartObject();
  for (const auto& [name, value] : items) {
    w.Key(name.c_str());
    w.String(value);
  }
  w.EndObject();
}

absl::Status Bad(std::string_view field, std::string_view expected) {
  return absl::InvalidArgumentError(
      fmt::format("the start request's \"{}\": expected {}", field, expected));
}

// Reads the fields of `object` into the out-parameters, each checked.
class Fields {
 public:
  explicit Fields(const Value& object) : object_(object) {}
  absl::Status String(const char* key, std::string& out) {
    if (!object_.HasMember(key)) return absl::OkStatus();
    const Value& v = object_[key];
    if (!v.IsString()) return Bad(key, "a string");
    out.assign(v.GetString(), v.GetStringLength());
    return absl::OkStatus();
  }
  absl::Status Bool(const char* key, bool& out) {
    if (!object_.HasMember(key)) return absl::OkStatus();
    if (!object_[key].IsBool()) return Bad(key, "true or false");
    out = object_[key].GetBool();
    return absl::OkStatus();
  }
  absl::Status Short(const char* key, unsigned short& out) {
    if (!object_.HasMember(key)) return absl::OkStatus();
    const Value& v = object_[key];
    if (!v.IsUint() || v.GetUint() > 65535) return Bad(key, "a number from 0 to 65535");
    out = static_cast<unsigned short>(v.GetUint());
    return absl::OkStatus();
  }
  absl::Status Strings(const char* key, std::vector<std::string>& out) {
    if (!object_.HasMember(key)) return absl::OkStatus();
    const Value& v = object_[key];
    if (!v.IsArray()) return Bad(key, "an array of strings");
    for (const Value& item : v.GetArray()) {
      if (!item.IsString()) return Bad(key, "an array of strings");
      out.emplace_back(item.GetString(), item.GetStringLength());
    }
    return absl::OkStatus();
  }
  absl::Status Map(const char* key, std::map<std::string, std::string>& out) {
    if (!object_.HasMember(key)) return absl::OkStatus();
    const Value& v = object_[key];
    if (!v.IsObject()) return Bad(key, "an object of strings");
    for (const auto& member : v.GetObject()) {
      if (!member.value.IsString()) return Bad(key, "an object of strings");
      out[member.name.GetString()] = member.value.GetString();
    }
    return absl::OkStatus();
  }

 private:
  const Value& object_;
};

absl::StatusOr<rapidjson::Document> ParseObject(std::string_view json, std::string_view what,
                                                std::string_view schema) {
  rapidjson::Document doc;
  if (absl::Status parsed = internal::ParseBoundedJson(
          json, doc, what, {.max_bytes = kMaxRequestBody, .utf8 = false});
      !parsed.ok()) {
    return parsed;
  }
  if (!doc.IsObject()) {
    return absl::InvalidArgumentError(fmt::format("{}: expected a JSON object", what));
  }
  if (!doc.HasMember("schema") || !doc["schema"].IsString() ||
      doc["schema"].GetString() != schema) {
    return absl::InvalidArgumentError(fmt::format("{}: expected \"schema\": \"{}\"", what, schema));
  }
  return doc;
}

constexpr std::string_view kStartSchema = "mojoup.service.start/v1";

void WriteStart(Writer& w, const WorkerStart& start, bool service_fields) {
  const RunRequest& r = start.request;
  w.StartObject();
  w.Key("schema");
  w.String(kStartSchema.data());
  w.Key("workdir");
  w.String(r.workdir);
  w.Key("tool");
  w.String(r.tool);
  Strings(w, "command", r.command);
  Strings(w, "credentials", r.credentials);
  Strings(w, "resolve", r.resolve);
  w.Key("upstream_ca");
  w.String(r.upstream_ca);
  w.Key("audit_file");
  w.String(r.audit_file);
  w.Key("accept_policy");
  w.Bool(r.accept_policy);
  w.Key("terminal");
  w.Bool(r.terminal);
  w.Key("terminal_input");
  w.Bool(r.terminal_input);
  StringMap(w, "environment", r.environment);
  StringMap(w, "secrets", start.secrets);
  w.Key("detach");
  w.Bool(start.options.detach);
  w.Key("rows");
  w.Uint(start.options.rows);
  w.Key("columns");
  w.Uint(start.options.columns);
  if (service_fields) {
    w.Key("session_id");
    w.String(r.session_id);
    w.Key("config_path");
    w.String(start.config_path);
    w.Key("config_named");
    w.Bool(start.config_named);
  }
  w.EndObject();
}

}  // namespace

std::string EncodeFrame(FrameType type, std::string_view data) {
  std::string frame(kFrameHeader, '\0');
  frame[0] = static_cast<char>(type);
  const auto size = static_cast<std::uint32_t>(data.size());
  for (int i = 0; i < 4; ++i) frame[4 + i] = static_cast<char>((size >> (24 - 8 * i)) & 0xff);
  frame.append(data);
  return frame;
}

absl::StatusOr<std::optional<std::pair<FrameType, std::string>>> FrameReader::Next() {
  if (buffer_.size() < kFrameHeader) return std::nullopt;
  const auto type = static_cast<std::uint8_t>(buffer_[0]);
  if (type > static_cast<std::uint8_t>(FrameType::kDetach)) {
    return absl::InvalidArgumentError(fmt::format("attach stream: unknown frame type {}", type));
  }
  std::uint32_t size = 0;
  for (int i = 0; i < 4; ++i) size = (size << 8) | static_cast<std::uint8_t>(buffer_[4 + i]);
  if (size > kMaxFrame) {
    return absl::InvalidArgumentError(
        fmt::format("attach stream: a frame of {} bytes; expected at most {}", size, kMaxFrame));
  }
  if (buffer_.size() < kFrameHeader + size) return std::nullopt;
  std::pair<FrameType, std::string> frame{static_cast<FrameType>(type),
                                          buffer_.substr(kFrameHeader, size)};
  buffer_.erase(0, kFrameHeader + size);
  return frame;
}

std::string StartRequestJson(const RunRequest& request, const StartOptions& options,
                             const std::map<std::string, std::string>& secrets) {
  WorkerStart start;
  start.request = request;
  start.options = options;
  start.secrets = secrets;
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  WriteStart(w, start, false);
  return buffer.GetString();
}

std::string WorkerStartJson(const WorkerStart& start) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  WriteStart(w, start, true);
  return buffer.GetString();
}

static absl::Status CheckClientFields(const rapidjson::Document& doc, const WorkerStart& start) {
  for (const char* own : {"session_id", "config_path", "config_named"}) {
    if (doc.HasMember(own)) {
      return absl::InvalidArgumentError(
          fmt::format("the start request: \"{}\" is the service's to set", own));
    }
  }
  for (const auto& [name, value] : start.request.environment) {
    if (name != "TERM" && name != "COLORTERM") {
      return Bad("environment", "only TERM and COLORTERM");
    }
  }
  for (const auto& secret : start.secrets) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one.
    const std::string& name = secret.first;
    const bool named =
        std::any_of(start.request.credentials.begin(), start.request.credentials.end(),
                    [&name](const std::string& credential) {
                      return credential.substr(0, credential.find('=')) == name;
                    });
    const bool word = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    });
    if (!named || !word || name.rfind("LD_", 0) == 0 || name.rfind("MOJOUP_", 0) == 0 ||
        name == "PATH" || name == "HOME") {
      return Bad("secrets", "the values of the credentials the request names, by NAME");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<WorkerStart> ParseStartRequest(std::string_view json, bool from_client) {
  auto doc = ParseObject(json, "the start request", kStartSchema);
  if (!doc.ok()) return doc.status();
  static const char* const kKnown[] = {
      "schema",         "workdir",     "tool",        "command",       "credentials",
      "resolve",        "upstream_ca", "audit_file",  "accept_policy", "terminal",
      "terminal_input", "environment", "secrets",     "detach",        "rows",
      "columns",        "session_id",  "config_path", "config_named"};
  for (const auto& member : doc->GetObject()) {
    const std::string_view name = member.name.GetString();
    if (std::find(std::begin(kKnown), std::end(kKnown), name) == std::end(kKnown)) {
      return absl::InvalidArgumentError(
          fmt::format("the start request: unknown field \"{}\"", name));
    }
  }
  WorkerStart start;
  RunRequest& r = start.request;
  Fields f(*doc);
  for (absl::Status s :
       {f.String("workdir", r.workdir), f.String("tool", r.tool), f.Strings("command", r.command),
        f.Strings("credentials", r.credentials), f.Strings("resolve", r.resolve),
        f.String("upstream_ca", r.upstream_ca), f.String("audit_file", r.audit_file),
        f.Bool("accept_policy", r.accept_policy), f.Bool("terminal", r.terminal),
        f.Bool("terminal_input", r.terminal_input), f.Map("environment", r.environment),
        f.Map("secrets", start.secrets), f.Bool("detach", start.options.detach),
        f.Short("rows", start.options.rows), f.Short("columns", start.options.columns),
        f.String("session_id", r.session_id), f.String("config_path", start.config_path),
        f.Bool("config_named", start.config_named)}) {
    if (!s.ok()) return s;
  }
  if (from_client) {
    if (absl::Status client = CheckClientFields(*doc, start); !client.ok()) return client;
  }
  if (r.command.empty()) return Bad("command", "the command to run, one or more words");
  if (r.workdir.empty() || r.workdir.front() != '/') {
    return Bad("workdir", "an absolute path inside the repository");
  }
  for (const std::string* path : {&r.upstream_ca, &r.audit_file}) {
    if (!path->empty() && path->front() != '/') {
      return Bad(path == &r.upstream_ca ? "upstream_ca" : "audit_file", "an absolute path");
    }
  }
  return start;
}

std::string SessionJson(const ServiceSession& s) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  w.Key("schema");
  w.String("mojoup.service.session/v1");
  for (const auto& [key, value] : {std::pair{"id", &s.id},
                                   {"user", &s.user},
                                   {"repo", &s.repo},
                                   {"tool", &s.tool},
                                   {"runtime", &s.runtime},
                                   {"state", &s.state},
                                   {"started_at", &s.started_at}}) {
    w.Key(key);
    w.String(*value);
  }
  w.Key("uid");
  w.Uint(s.uid);
  w.Key("terminal");
  w.Bool(s.terminal);
  w.Key("detached");
  w.Bool(s.detached);
  w.Key("exit_code");
  if (s.exit_code) {
    w.Int(*s.exit_code);
  } else {
    w.Null();
  }
  w.EndObject();
  return buffer.GetString();
}

absl::StatusOr<ServiceSession> ParseSession(std::string_view json) {
  auto doc = ParseObject(json, "the service's session", "mojoup.service.session/v1");
  if (!doc.ok()) return doc.status();
  ServiceSession s;
  Fields f(*doc);
  for (absl::Status status :
       {f.String("id", s.id), f.String("user", s.user), f.String("repo", s.repo),
        f.String("tool", s.tool), f.String("runtime", s.runtime), f.String("state", s.state),
        f.String("started_at", s.started_at), f.Bool("terminal", s.terminal),
        f.Bool("detached", s.detached)}) {
    if (!status.ok()) return status;
  }
  if (doc->HasMember("uid") && (*doc)["uid"].IsUint()) s.uid = (*doc)["uid"].GetUint();
  if (doc->HasMember("exit_code") && (*doc)["exit_code"].IsInt()) {
    s.exit_code = (*doc)["exit_code"].GetInt();
  }
  return s;
}

std::string ErrorJson(std::string_view sentence, Reason reason) {
  const std::string_view word = ReasonName(reason);
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  w.Key("schema");
  w.String("mojoup.service.error/v1");
  w.Key("error");
  w.String(sentence.data(), static_cast<rapidjson::SizeType>(sentence.size()));
  w.Key("reason");
  w.String(word.data(), static_cast<rapidjson::SizeType>(word.size()));
  w.EndObject();
  return buffer.GetString();
}

absl::Status SendPacket(int fd, std::string_view data, int pass) {
  iovec iov{const_cast<char*>(data.data()), data.size()};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (pass >= 0) {
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &pass, sizeof(int));
  }
  for (;;) {
    if (::sendmsg(fd, &message, MSG_NOSIGNAL) >= 0) return absl::OkStatus();
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {
      pollfd wait{fd, POLLOUT, 0};
      if (::poll(&wait, 1, 5000) > 0) continue;
    }
    return absl::UnavailableError(fmt::format("cannot send: {}", std::strerror(errno)));
  }
}

absl::StatusOr<std::string> ReceivePacket(int fd, std::chrono::milliseconds timeout, int* passed) {
  if (passed != nullptr) *passed = -1;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd wait{fd, POLLIN, 0};
    const int ready = ::poll(&wait, 1, static_cast<int>(std::max<long long>(0, left.count())));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return absl::DeadlineExceededError("no answer in time");
    std::string data(kMaxFrame, '\0');
    iovec iov{data.data(), data.size()};
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    const ssize_t got = ::recvmsg(fd, &message, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got < 0)
      return absl::UnavailableError(fmt::format("cannot read: {}", std::strerror(errno)));
    for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
         header = CMSG_NXTHDR(&message, header)) {
      if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
      int fd_passed = -1;
      std::memcpy(&fd_passed, CMSG_DATA(header), sizeof(int));
      if (passed != nullptr && *passed < 0) {
        *passed = fd_passed;
      } else {
        ::close(fd_passed);
      }
    }
    if (got == 0) return absl::NotFoundError("the peer closed");
    if ((message.msg_flags & MSG_TRUNC) != 0) {
      return absl::InvalidArgumentError("a packet over 1 MiB");
    }
    data.resize(static_cast<std::size_t>(got));
    return data;
  }
}

namespace {

absl::StatusOr<sockaddr_un> UnixAddress(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    return absl::InvalidArgumentError(
        fmt::format("{}: a socket path this long cannot be used", path));
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

}  // namespace

absl::StatusOr<int> ConnectUnix(const std::string& path, int type) {
  auto address = UnixAddress(path);
  if (!address.ok()) return address.status();
  const int fd = ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(fmt::format("socket: {}", std::strerror(errno)));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&*address), sizeof *address) != 0) {
    const int error = errno;
    ::close(fd);
    return absl::UnavailableError(fmt::format("{}: {}", path, std::strerror(error)));
  }
  return fd;
}

absl::StatusOr<int> ListenUnix(const std::string& path, int type, mode_t mode) {
  auto address = UnixAddress(path);
  if (!address.ok()) return address.status();
  const int fd = ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(fmt::format("socket: {}", std::strerror(errno)));
  ::unlink(path.c_str());
  // Bound with the mode already right: nobody connects before it is.
  const mode_t before = ::umask(0777 & ~mode);
  const int bound = ::bind(fd, reinterpret_cast<sockaddr*>(&*address), sizeof *address);
  ::umask(before);
  if (bound != 0 || ::listen(fd, SOMAXCONN) != 0) {
    const int error = errno;
    ::close(fd);
    return absl::FailedPreconditionError(
        fmt::format("cannot listen on {}: {}", path, std::strerror(error)));
  }
  return fd;
}

std::string WorkerEntryJson(const WorkerEntry& e) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  w.Key("schema");
  w.String("mojoup.service.worker/v1");
  for (const auto& [key, value] : {std::pair{"id", &e.id},
                                   {"user", &e.user},
                                   {"repo", &e.repo},
                                   {"tool", &e.tool},
                                   {"started_at", &e.started_at}}) {
    w.Key(key);
    w.String(*value);
  }
  w.Key("uid");
  w.Uint(e.uid);
  w.Key("pid");
  w.Int(e.pid);
  w.Key("pid_start");
  w.Uint64(e.pid_start);
  w.Key("terminal");
  w.Bool(e.terminal);
  w.Key("detached");
  w.Bool(e.detached);
  w.EndObject();
  return buffer.GetString();
}

absl::StatusOr<WorkerEntry> ParseWorkerEntry(std::string_view json) {
  auto doc = ParseObject(json, "a worker entry", "mojoup.service.worker/v1");
  if (!doc.ok()) return doc.status();
  WorkerEntry e;
  Fields f(*doc);
  for (absl::Status status :
       {f.String("id", e.id), f.String("user", e.user), f.String("repo", e.repo),
        f.String("tool", e.tool), f.String("started_at", e.started_at),
        f.Bool("terminal", e.terminal), f.Bool("detached", e.detached)}) {
    if (!status.ok()) return status;
  }
  const Value& d = *doc;
  if (!d.HasMember("uid") || !d["uid"].IsUint() || !d.HasMember("pid") || !d["pid"].IsInt() ||
      d["pid"].GetInt() <= 1 || !d.HasMember("pid_start") || !d["pid_start"].IsUint64()) {
    return absl::InvalidArgumentError("a worker entry: expected uid, pid and pid_start numbers");
  }
  e.uid = d["uid"].GetUint();
  e.pid = d["pid"].GetInt();
  e.pid_start = d["pid_start"].GetUint64();
  return e;
}

}  // namespace mojoup::service

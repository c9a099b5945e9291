#include <arpa/inet.h>
#include <pwd.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "common/file_util.h"
#include "fmt/format.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/policy/tool_profiles.h"
#include "mojoup/sandbox/policy_watch.h"
#include "mojoup/sandbox/session.h"
#include "guard/repository.h"

namespace mojoup::sandbox {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kSessionLabel = "mojoup.session";
constexpr std::string_view kStateLabel = "mojoup.state";

// Field 22 of /proc/<pid>/stat: when the process started, in clock ticks
// since boot. With the pid it names a process for good (pids are reused).
// A zombie (state Z: killed, not yet reaped by a parent that is busy or
// never reaps) or a dead process (X) has run its course: nullopt, as for a
// process that is gone.
std::optional<std::uint64_t> ProcStartTime(int pid) {
  std::ifstream file(fmt::format("/proc/{}/stat", pid));
  std::string stat;
  if (!std::getline(file, stat)) return std::nullopt;
  // The command name (field 2) may hold spaces and parentheses: skip to its end.
  std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  for (int index = 3; index <= 22 && fields >> field; ++index) {
    if (index == 3 && (field == "Z" || field == "X" || field == "x")) return std::nullopt;
    if (index == 22) {
      try {
        return std::stoull(field);
      } catch (...) {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

// A record's string fields by their JSON names, for writing and reading alike.
template <class Record>
auto StringFields(Record& record) {
  using Field = std::pair<const char*, decltype(&record.id)>;
  return std::array<Field, 9>{Field{"id", &record.id},      {"user", &record.user},
                              {"repo", &record.repo},       {"tool", &record.tool},
                              {"runtime", &record.runtime}, {"sandbox", &record.sandbox},
                              {"state", &record.state},     {"started_at", &record.started_at},
                              {"dir", &record.dir}};
}

std::string RecordToJson(const SessionRecord& record) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("schema");
  w.String("mojoup.session/v1");
  for (const auto& [key, value] : StringFields(record)) {
    w.Key(key);
    w.String(*value);
  }
  w.Key("pid");
  w.Int(record.pid);
  w.Key("pid_start");
  w.Uint64(record.pid_start);
  if (!record.problem.empty()) {
    w.Key("problem");
    w.String(record.problem);
  }
  w.Key("started_ns");
  w.Int64(record.started_ns);
  w.Key("repo_had_git");
  w.Bool(record.repo_had_git);
  if (record.sign_in) {
    w.Key("sign_in");
    std::string staging = SignInStagingToJson(*record.sign_in);
    w.RawValue(staging.data(), staging.size(), rapidjson::kObjectType);
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

// What a record may hold. A record is read back by later runs, by `status`
// and `stop`, and by the reaper: data, never instructions. Every value must
// be one the node itself would have written.
struct RecordContext {
  std::string sessions_dir;  // <state>/sessions
  std::string home;          // the user's home on the host
  const Getenv* getenv = nullptr;
};

// Letters, digits and `extra`, 1 to `max` of them, not starting with a
// punctuation mark.
bool Plain(std::string_view text, std::string_view extra, std::size_t max) {
  if (text.empty() || text.size() > max || std::isalnum(static_cast<unsigned char>(text[0])) == 0) {
    return false;
  }
  return std::all_of(text.begin(), text.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           extra.find(c) != std::string_view::npos;
  });
}

// An absolute path as the node derives them: no empty, "." or ".."
// component, no control character, not "/" itself.
bool PlainPath(std::string_view path) {
  if (path.size() < 2 || path.front() != '/' || path.back() == '/' || path.size() > 4096)
    return false;
  if (std::any_of(path.begin(), path.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    return false;
  }
  for (std::string_view bad : {"//", "/./", "/../"}) {
    if (path.find(bad) != std::string_view::npos) return false;
  }
  return !path.ends_with("/.") && !path.ends_with("/..");
}

absl::Status CheckSignIn(const SessionRecord& record, const RecordContext& context) {
  const SignInStaging& staging = *record.sign_in;
  if (staging.tool != record.tool) return absl::DataLossError("its sign-in is of another tool");
  if (staging.home != record.dir + "/home") {
    return absl::DataLossError("its sign-in staging is not the session's own");
  }
  // Only the places the node itself finds a tool's sign-in files may be
  // written back to or kept aside beside.
  std::vector<SignInLocation> known;
  if (!staging.tool.empty()) {
    auto located = LocateSignIn(staging.tool, context.home, *context.getenv);
    if (!located.ok()) return absl::DataLossError(std::string(located.status().message()));
    known = *std::move(located);
  }
  for (const SignInFile& file : staging.files) {
    const bool derived = std::any_of(known.begin(), known.end(), [&](const SignInLocation& at) {
      return at.home_relative == file.home_relative && at.host_path == file.host_path;
    });
    if (!derived || file.staged_path != staging.home + "/" + file.home_relative) {
      return absl::DataLossError(
          fmt::format("its sign-in file {} is not one the node stages", file.home_relative));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRecord(const SessionRecord& record, const std::string& file_name,
                         const RecordContext& context) {
  auto bad = [](std::string_view what) { return absl::DataLossError(std::string(what)); };
  if (!Plain(record.id, "._-", 64) || file_name != record.id + ".json") {
    return bad("its id is not a session id, or not its file's name");
  }
  if (record.dir != context.sessions_dir + "/" + record.id) {
    return bad("its directory is not the session's own");
  }
  if (!PlainPath(record.repo)) return bad("its repository is not an absolute path");
  if (!record.sandbox.empty() && !Plain(record.sandbox, "._-", 128)) {
    return bad("its sandbox is not a container id or sandbox name");
  }
  if (!Plain(record.runtime, "._-", 32)) return bad("its runtime is not a runtime's name");
  if (!record.tool.empty() && policy::FindToolProfile(record.tool) == nullptr) {
    return bad("its tool is not a known tool");
  }
  if (!record.user.empty() && !Plain(record.user, "._-@$", 64)) {
    return bad("its user is not a user name");
  }
  static const std::set<std::string> kStates = {"starting", "running", "stopping", "leftover"};
  if (kStates.count(record.state) == 0) return bad("its state is not one a session has");
  if (record.pid <= 0) return bad("its pid is not a process id");
  if (record.sign_in) return CheckSignIn(record, context);
  return absl::OkStatus();
}

absl::StatusOr<SessionRecord> RecordFromJson(const std::string& path, const std::string& text,
                                             const RecordContext& context) {
  rapidjson::Document doc;
  doc.Parse(text.c_str(), text.size());
  auto bad = [&](std::string_view what) {
    return absl::DataLossError(fmt::format("{}: {}", path, what));
  };
  if (doc.HasParseError() || !doc.IsObject()) return bad("not a JSON object");
  SessionRecord record;
  for (const auto& [key, value] : StringFields(record)) {
    if (!doc.HasMember(key) || !doc[key].IsString()) {
      return bad(fmt::format("\"{}\" is missing or not a string", key));
    }
    *value = std::string(doc[key].GetString(), doc[key].GetStringLength());
  }
  if (!doc.HasMember("pid") || !doc["pid"].IsInt()) return bad("\"pid\" is not a number");
  if (!doc.HasMember("pid_start") || !doc["pid_start"].IsUint64()) {
    return bad("\"pid_start\" is not a number");
  }
  record.pid = doc["pid"].GetInt();
  record.pid_start = doc["pid_start"].GetUint64();
  if (doc.HasMember("problem") && doc["problem"].IsString())
    record.problem = doc["problem"].GetString();
  if (doc.HasMember("started_ns") && doc["started_ns"].IsInt64()) {
    record.started_ns = doc["started_ns"].GetInt64();
  }
  // Records written before this field knew nothing of it: leave the
  // repository as it is.
  record.repo_had_git = !doc.HasMember("repo_had_git") || !doc["repo_had_git"].IsBool() ||
                        doc["repo_had_git"].GetBool();
  if (doc.HasMember("sign_in")) {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    doc["sign_in"].Accept(w);
    auto staging = SignInStagingFromJson(buffer.GetString());
    if (!staging.ok()) return bad(std::string(staging.status().message()));
    record.sign_in = std::move(*staging);
  }
  const std::string file_name = fs::path(path).filename().string();
  if (absl::Status checked = CheckRecord(record, file_name, context); !checked.ok()) {
    return bad(std::string(checked.message()));
  }
  return record;
}

// A record is small; anything larger was not written by the node.
constexpr std::size_t kMaxRecordBytes = 256 * 1024;

constexpr std::string_view kStateWhat = "the node's state directory";

// Docker creates a mount point that does not exist as root, and the
// repository (or the state directory) lies under the home more often than
// not, so its mount point would be made inside the staging home, which the
// user could then not remove. Each is made first, as the user's own.
absl::Status MakeMountPoints(const std::string& staging, const std::string& home,
                             const std::vector<BindMount>& mounts) {
  for (const BindMount& mount : mounts) {
    if (mount.target == home || mount.target.rfind(home + "/", 0) != 0) continue;
    const fs::path point = fs::path(staging) / mount.target.substr(home.size() + 1);
    std::error_code ec;
    if (fs::exists(point, ec)) continue;
    const bool directory = fs::is_directory(mount.source, ec);
    fs::create_directories(directory ? point : point.parent_path(), ec);
    if (!directory && !ec) std::ofstream(point.string(), std::ios::app);
    if (ec || !fs::exists(point)) {
      return absl::PermissionDeniedError(
          fmt::format("cannot make the mount point {} in the session's home: {}", point.string(),
                      ec ? ec.message() : "not created"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

// --- Session -----------------------------------------------------------------

Session::Session(SessionManager& manager, SessionRecord record)
    : manager_(manager), record_(std::move(record)) {}

Session::~Session() { Close(); }

absl::StatusOr<int> Session::Run(const Stdio& stdio) {
  return manager_.options_.backend->Run(record_.sandbox, stdio);
}

absl::Status Session::Signal(int signal) {
  return manager_.options_.backend->Signal(record_.sandbox, signal);
}

absl::Status Session::Resize(unsigned short rows, unsigned short columns) {
  return manager_.options_.backend->Resize(record_.sandbox, rows, columns);
}

CloseReport Session::Close() {
  if (closed_) return {};
  closed_ = true;
  CloseReport report = manager_.CleanUp(record_);
  proxy_.reset();
  return report;
}

// --- SessionManager ----------------------------------------------------------

SessionManager::SessionManager(SessionManagerOptions options) : options_(std::move(options)) {
  if (!options_.now) options_.now = [] { return std::chrono::system_clock::now(); };
  if (!options_.new_id) options_.new_id = RandomHex;
  if (!options_.process_start) options_.process_start = ProcStartTime;
  if (!options_.getenv) options_.getenv = SystemGetenv();
  if (options_.home.empty()) options_.home = UserHome();
}

absl::Status SessionManager::CheckStateDir() const {
  return internal::CheckPrivateDir(options_.state_dir, kStateWhat);
}

std::string SessionManager::RecordPath(const std::string& id) const {
  return options_.state_dir + "/sessions/" + id + ".json";
}

absl::Status SessionManager::WriteRecord(const SessionRecord& record) {
  // A reader sees the old record or the new one, never half of one.
  return ReplaceAtomically(RecordPath(record.id), RecordToJson(record), 0600);
}

bool SessionManager::OwnerAlive(const SessionRecord& record) const {
  auto start = options_.process_start(record.pid);
  return start.has_value() && *start == record.pid_start;
}

absl::StatusOr<std::unique_ptr<Session>> SessionManager::Start(SessionSpec spec) {
  if (options_.backend == nullptr) return absl::InvalidArgumentError("no sandbox backend");
  if (spec.command.empty()) return absl::InvalidArgumentError("no command to run");
  if (spec.repo.empty() || spec.repo.front() != '/') {
    return absl::InvalidArgumentError(
        fmt::format("the repository path {} is not absolute", spec.repo));
  }
  if (spec.home.empty() || spec.home.front() != '/') {
    return absl::InvalidArgumentError(fmt::format("the home path {} is not absolute", spec.home));
  }
  if (spec.home == "/") {
    return absl::InvalidArgumentError("the home directory is /; set HOME to the user's home");
  }
  if (spec.repo == "/" || IsWithin(spec.home, spec.repo)) {
    // The staging home is mounted at the home's path: it must not cover the
    // repository, nor the repository it.
    return absl::InvalidArgumentError(
        fmt::format("the repository {} holds the home directory {}; run from a repository below it",
                    spec.repo, spec.home));
  }
  if (IsWithin(options_.state_dir, spec.repo) || IsWithin(spec.repo, options_.state_dir)) {
    // The session could then write its own record, its staging and other
    // sessions' sign-ins.
    return absl::InvalidArgumentError(fmt::format(
        "the node's state directory {} lies in the repository {}; set MOJOUP_STATE_DIR outside it",
        options_.state_dir, spec.repo));
  }
  if (spec.workdir.empty()) spec.workdir = spec.repo;
  // What of the repository the host trusts is checked and protected before
  // anything exists, so a refusal leaves nothing behind.
  auto repository = GuardRepository(
      {.repo = spec.repo, .uid = spec.uid, .home = spec.home, .state_dir = options_.state_dir});
  if (!repository.ok()) return repository.status();
  for (const std::string& sentence : repository->notices) {
    if (spec.notice) spec.notice(sentence);
  }
  if (absl::Status made = internal::MakePrivateDir(options_.state_dir, kStateWhat); !made.ok()) {
    return made;
  }
  if (absl::Status made = internal::MakePrivateDir(options_.state_dir + "/sessions", kStateWhat);
      !made.ok()) {
    return made;
  }

  SessionRecord record;
  record.id = options_.new_id();
  record.user = spec.user;
  record.repo = spec.repo;
  record.tool = spec.tool;
  record.runtime = std::string(options_.backend->name());
  record.state = "starting";
  const auto started = options_.now();
  record.started_at = Rfc3339(started);
  record.started_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(started.time_since_epoch()).count();
  record.pid = static_cast<int>(getpid());
  record.pid_start = options_.process_start(record.pid).value_or(0);
  record.dir = options_.state_dir + "/sessions/" + record.id;
  record.repo_had_git = repository->has_git;
  // The record comes first: from here on a crash leaves something Reap finds.
  if (absl::Status written = WriteRecord(record); !written.ok()) return written;
  std::unique_ptr<Session> session(new Session(*this, record));
  auto fail = [&](absl::Status status) -> absl::StatusOr<std::unique_ptr<Session>> {
    session->Close();
    return status;
  };
  // Without the window on record, a policy the session plants would be
  // trusted by the next run: no window, no session.
  if (absl::Status watched =
          PolicyWatch(options_.state_dir).SessionStarted(spec.repo, record.id, started);
      !watched.ok()) {
    return fail(watched);
  }

  if (absl::Status made = internal::MakePrivateDir(record.dir, "the session's directory");
      !made.ok()) {
    return fail(made);
  }
  auto staging = StageSignIn(spec.tool, spec.home, options_.getenv, record.dir + "/home");
  if (!staging.ok()) return fail(staging.status());
  session->record_.sign_in = *staging;

  const policy::NetworkRules rules = spec.proxy.rules;  // the proxy takes its own copy
  credproxy::ProxyOptions proxy_options = std::move(spec.proxy);
  proxy_options.session = record.id;
  // The tool's own credential headers join whatever the caller listed.
  for (const std::string& name : credproxy::CredentialHeaders(spec.tool)) {
    auto& names = proxy_options.credential_headers;
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  proxy_options.listen = options_.backend->ProxyListen();
  proxy_options.socket = proxy_options.listen.empty() ? record.dir + "/proxy.sock" : "";
  proxy_options.ca_dir = record.dir + "/ca";
  // The backend gets the real values too: one may place them itself.
  std::vector<SandboxCredential> credentials;
  for (const credproxy::Credential& credential : proxy_options.vault.credentials()) {
    if (credential.hosts.empty()) continue;
    if (auto real = proxy_options.vault.RealValue(credential.stand_in, credential.hosts[0])) {
      credentials.push_back({credential.name, *real, credential.hosts});
    }
  }
  auto proxy = credproxy::Proxy::Start(std::move(proxy_options));
  if (!proxy.ok()) return fail(proxy.status());
  session->proxy_ = std::move(*proxy);

  SandboxSpec sandbox;
  sandbox.session = record.id;
  sandbox.labels = {{std::string(kStateLabel), options_.state_dir}};
  sandbox.image = spec.image;
  sandbox.uid = spec.uid;
  sandbox.gid = spec.gid;
  sandbox.workdir = spec.workdir;
  sandbox.command = spec.command;
  sandbox.tty = spec.tty;
  sandbox.notice = spec.notice;
  sandbox.credentials = std::move(credentials);
  sandbox.supervisor = options_.supervisor;
  sandbox.proxy_socket = session->proxy_->socket_path();
  sandbox.proxy_address = session->proxy_->tcp_address();
  sandbox.session_dir = record.dir;
  sandbox.tool = spec.tool;
  sandbox.rules = &rules;
  sandbox.mounts = {{staging->home, spec.home, false}};
  sandbox.mounts.insert(sandbox.mounts.end(), repository->mounts.begin(), repository->mounts.end());
  sandbox.mounts.push_back({record.dir + "/ca", record.dir + "/ca", true});
  sandbox.writable = {spec.repo, spec.home, "/tmp"};
  sandbox.writable.insert(sandbox.writable.end(), repository->writable.begin(),
                          repository->writable.end());
  if (absl::Status made = MakeMountPoints(staging->home, spec.home, sandbox.mounts); !made.ok()) {
    return fail(made);
  }
  sandbox.cpus = spec.cpus;
  std::map<std::string, std::string> env = {
      {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
      {"HOME", spec.home},
      {"USER", spec.user},
      {"LOGNAME", spec.user},
      {"MOJOUP_SESSION", record.id},
  };
  for (const auto& [name, value] : spec.environment) env[name] = value;
  for (const auto& [name, value] : session->proxy_->Environment()) env[name] = value;
  sandbox.environment = env;
  session->environment_ = std::move(env);

  auto created = options_.backend->Create(sandbox);
  if (!created.ok()) {
    // A create that failed half-way may still have left a container.
    session->record_.state = "stopping";
    return fail(created.status());
  }
  session->record_.sandbox = *created;
  session->record_.state = "running";
  if (absl::Status written = WriteRecord(session->record_); !written.ok()) return fail(written);
  return session;
}

CloseReport SessionManager::CleanUp(const SessionRecord& record) {
  CloseReport report;
  // The sandbox goes first, so nothing uses the staging while it is written
  // back and removed. A sandbox whose creation was cut short has no id on
  // record: it is found by its session label.
  std::vector<std::string> sandboxes;
  if (!record.sandbox.empty()) {
    sandboxes.push_back(record.sandbox);
  } else if (auto labelled = options_.backend->List({{std::string(kSessionLabel), record.id}});
             labelled.ok()) {
    for (const SandboxInfo& info : *labelled) sandboxes.push_back(info.id);
  } else {
    report.errors.emplace_back(labelled.status().message());
  }
  for (const std::string& sandbox : sandboxes) {
    if (absl::Status removed = options_.backend->Remove(sandbox); !removed.ok()) {
      report.errors.emplace_back(removed.message());
    }
  }
  // The window in which the session could write the repository closes
  // once its sandbox is surely gone, whatever fails after this.
  const bool sandbox_gone = report.errors.empty();
  if (record.sign_in) report.sign_in = WriteBackSignIn(*record.sign_in, record.id);
  std::error_code ec;
  if (absl::Status removed = internal::RemoveTree(record.dir); !removed.ok()) {
    report.errors.push_back(
        fmt::format("the session's directory {} is not all removed ({}); remove it yourself (`sudo "
                    "rm -rf {}`), "
                    "then run `mojoup-node status`",
                    record.dir, std::string(removed.message()), record.dir));
  }
  if (!record.repo.empty() && sandbox_gone) {
    MoveAsidePlantedRepositories(record.repo, record.repo_had_git, record.started_ns, record.id,
                                 report.notices, report.errors);
    ClearSetIdBits(record.repo, report.notices, report.errors);
  }
  if (!record.repo.empty() && sandbox_gone) {
    if (absl::Status ended =
            PolicyWatch(options_.state_dir).SessionEnded(record.repo, record.id, options_.now());
        !ended.ok()) {
      report.errors.emplace_back(ended.message());
    }
  }
  // The record goes last, and only when the sandbox is surely gone: else
  // the next Reap tries again.
  if (report.errors.empty()) fs::remove(RecordPath(record.id), ec);
  return report;
}

absl::StatusOr<std::vector<SessionRecord>> SessionManager::List() {
  std::vector<SessionRecord> records;
  std::error_code ec;
  const std::string dir = options_.state_dir + "/sessions";
  if (!fs::exists(options_.state_dir, ec) && !fs::is_symlink(options_.state_dir, ec)) {
    return records;
  }
  if (absl::Status checked = CheckStateDir(); !checked.ok()) return checked;
  if (absl::Status checked = internal::CheckPrivateDir(dir, kStateWhat); !checked.ok()) {
    if (absl::IsNotFound(checked)) return records;
    return checked;
  }
  const RecordContext context{dir, options_.home, &options_.getenv};
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".json") continue;
    auto text = internal::ReadRegularFile(path, kMaxRecordBytes);
    if (!text.ok()) continue;  // not a record the node wrote
    auto record = RecordFromJson(path, text->bytes, context);
    if (!record.ok()) continue;  // being written, or not ours: Reap leaves it alone
    records.push_back(std::move(*record));
  }
  if (ec)
    return absl::PermissionDeniedError(
        fmt::format("cannot read {}: {}", dir, std::string(ec.message())));
  std::sort(records.begin(), records.end(), [](const SessionRecord& a, const SessionRecord& b) {
    return std::tie(a.started_at, a.id) < std::tie(b.started_at, b.id);
  });
  return records;
}

ReapReport SessionManager::Reap() {
  ReapReport report;
  auto records = List();
  if (!records.ok()) {
    report.errors.emplace_back(records.status().message());
    return report;
  }
  std::set<std::string> recorded;
  for (const SessionRecord& record : *records) {
    recorded.insert(record.id);
    if (OwnerAlive(record)) continue;
    CloseReport closed = CleanUp(record);
    report.sign_in.push_back(std::move(closed.sign_in));
    report.notices.insert(report.notices.end(), closed.notices.begin(), closed.notices.end());
    if (closed.errors.empty()) {
      report.sessions.push_back(record.id);
      continue;
    }
    // What could not be removed is said once, with the fix; the record
    // stays, as a leftover (not running), and later reaps try again quietly.
    std::string problem;
    for (const std::string& error : closed.errors) problem += (problem.empty() ? "" : "; ") + error;
    if (record.problem == problem && record.state == "leftover") continue;
    report.errors.push_back(fmt::format("session {}, whose owner is gone, is not fully removed: {}",
                                        record.id, problem));
    SessionRecord leftover = record;
    leftover.state = "leftover";
    leftover.problem = problem;
    if (absl::Status written = WriteRecord(leftover); !written.ok()) {
      report.errors.emplace_back(written.message());
    }
  }
  // Sandboxes of this state directory that no record knows.
  auto sandboxes = options_.backend->List({{std::string(kStateLabel), options_.state_dir}});
  if (!sandboxes.ok()) {
    (absl::IsUnavailable(sandboxes.status()) ? report.unreachable : report.errors.emplace_back()) =
        std::string(sandboxes.status().message());
    return report;
  }
  for (const SandboxInfo& info : *sandboxes) {
    if (recorded.count(info.session) > 0) continue;
    // A record may have appeared since the listing: look again.
    if (fs::exists(RecordPath(info.session))) continue;
    if (absl::Status removed = options_.backend->Remove(info.id); removed.ok()) {
      report.sandboxes.push_back(info.id);
    } else {
      report.errors.emplace_back(removed.message());
    }
  }
  return report;
}

absl::StatusOr<CloseReport> SessionManager::Stop(const std::string& id) {
  auto find = [&]() -> std::optional<SessionRecord> {
    auto records = List();
    if (!records.ok()) return std::nullopt;
    for (SessionRecord& record : *records) {
      if (record.id == id) return std::move(record);
    }
    return std::nullopt;
  };
  if (absl::Status checked = CheckStateDir(); !checked.ok() && !absl::IsNotFound(checked)) {
    return checked;
  }
  std::optional<SessionRecord> record = find();
  if (!record) return absl::NotFoundError(fmt::format("no session {} on this node", id));
  if (!OwnerAlive(*record)) return CleanUp(*record);

  // The owner ends the session itself once the command is gone; give the
  // command the grace period to stop, then take the sandbox away.
  auto wait_for_owner = [&](std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!fs::exists(RecordPath(id))) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return !fs::exists(RecordPath(id));
  };
  if (!record->sandbox.empty()) options_.backend->Signal(record->sandbox, SIGTERM).IgnoreError();
  if (wait_for_owner(options_.stop_grace)) return CloseReport{};
  if (!record->sandbox.empty()) options_.backend->Remove(record->sandbox).IgnoreError();
  if (wait_for_owner(std::chrono::seconds(5))) return CloseReport{};
  // The owner is alive but not ending it: end it here.
  record = find();
  if (!record) return CloseReport{};
  return CleanUp(*record);
}

// --- helpers -----------------------------------------------------------------

std::string UserHome() {
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') return home;
  if (const passwd* entry = getpwuid(geteuid()); entry != nullptr && entry->pw_dir != nullptr) {
    return entry->pw_dir;
  }
  return "/";
}

std::string DefaultStateDir() {
  if (const char* dir = std::getenv("MOJOUP_STATE_DIR"); dir != nullptr && *dir == '/') return dir;
  if (geteuid() == 0) return "/var/lib/mojoup";
  if (const char* state = std::getenv("XDG_STATE_HOME"); state != nullptr && *state == '/') {
    return std::string(state) + "/mojoup";
  }
  return UserHome() + "/.local/state/mojoup";
}

std::string FindSupervisor(const std::string& program) {
  std::error_code ec;
  fs::path self = fs::canonical(program, ec);
  if (ec) return {};
  for (const fs::path& candidate :
       {self.parent_path() / "mojoup-sandbox-init",
        self.parent_path().parent_path() / "libexec" / "mojoup" / "mojoup-sandbox-init"}) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return {};
}

absl::Status AddCredential(const std::string& spec, const policy::NodeConfig& config,
                           const Getenv& getenv, credproxy::Vault& vault) {
  const std::size_t equals = spec.find('=');
  const std::string name = spec.substr(0, equals);
  std::vector<std::string> hosts;
  if (equals != std::string::npos) {
    hosts = policy::SplitConfigList(spec.substr(equals + 1));
  } else if (auto bound = config.Get("node.sandbox.credential_hosts." + name)) {
    hosts = policy::SplitConfigList(*bound);
  } else {
    hosts = credproxy::DefaultBinding(name);
  }
  if (hosts.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("--credential {0} has no built-in binding; name its hosts as --credential "
                    "{0}=HOST[,HOST...] or set node.sandbox.credential_hosts.{0}",
                    name));
  }
  std::optional<std::string> value = getenv(name);
  if (!value || value->empty()) {
    return absl::InvalidArgumentError(
        fmt::format("--credential {0}: {0} is not set in this process's environment", name));
  }
  auto stand_in = vault.Add(name, *value, hosts);
  return stand_in.ok() ? absl::OkStatus() : stand_in.status();
}

absl::Status AddPin(const std::string& spec, std::map<std::string, std::string>& pins) {
  // HOST:PORT:ADDR, ADDR possibly IPv6 (with or without brackets).
  const std::size_t first = spec.find(':');
  const std::size_t second = first == std::string::npos ? first : spec.find(':', first + 1);
  std::string address = second == std::string::npos ? "" : spec.substr(second + 1);
  if (address.size() > 2 && address.front() == '[') address = address.substr(1, address.size() - 2);
  unsigned char bytes[16];
  if (second == std::string::npos || (inet_pton(AF_INET, address.c_str(), bytes) != 1 &&
                                      inet_pton(AF_INET6, address.c_str(), bytes) != 1)) {
    return absl::InvalidArgumentError(
        fmt::format("--resolve {}: expected HOST:PORT:ADDRESS", spec));
  }
  // Keyed by the spelling the proxy looks requested hosts up by, so that
  // "API.test." meets the pin for "api.test".
  auto host = policy::CanonicalHost(spec.substr(0, first));
  if (!host) {
    return absl::InvalidArgumentError(
        fmt::format("--resolve {}: \"{}\" is not a host name", spec, spec.substr(0, first)));
  }
  pins[*host + spec.substr(first, second - first)] = address;
  return absl::OkStatus();
}

}  // namespace mojoup::sandbox

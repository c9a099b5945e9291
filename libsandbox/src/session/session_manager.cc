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

#include "audit/audit_end.h"
#include "fileinfo/file_info.h"
#include "fmt/format.h"
#include "guard/repository.h"
#include "mojoup/internal/atomic_file.h"
#include "mojoup/internal/rfc3339.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/internal/session_id.h"
#include "mojoup/internal/sha256.h"
#include "mojoup/policy/tool_profiles.h"
#include "mojoup/sandbox/policy_watch.h"
#include "mojoup/sandbox/session.h"
#include "session/audit_files.h"
#include "session/close_notices.h"
#include "session/record.h"
#include "session/runtime_ask.h"
#include "staging/signin_keeper.h"

namespace mojoup::sandbox {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kStateLabel = "mojoup.state";

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

// A spec the node can start: a command, and a repository and home whose
// mounts cannot cover each other or the node's state.
absl::Status CheckSpec(const SessionSpec& spec, const std::string& state_dir) {
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
  if (IsWithin(state_dir, spec.repo) || IsWithin(spec.repo, state_dir)) {
    // The session could then write its own record, its staging and other
    // sessions' sign-ins.
    return absl::InvalidArgumentError(fmt::format(
        "the node's state directory {} lies in the repository {}; set MOJOUP_STATE_DIR outside it",
        state_dir, spec.repo));
  }
  return absl::OkStatus();
}

// The session's proxy options: the caller's, with the tool's own credential
// headers, listening where the runtime reaches it. `credentials` gets the
// real values too: a runtime may place them itself.
credproxy::ProxyOptions SessionProxyOptions(SessionSpec& spec, const SessionRecord& record,
                                            const Backend& backend,
                                            std::vector<SandboxCredential>& credentials) {
  credproxy::ProxyOptions proxy_options = std::move(spec.proxy);
  proxy_options.session = record.id;
  for (const std::string& name : credproxy::CredentialHeaders(spec.tool)) {
    auto& names = proxy_options.credential_headers;
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  proxy_options.listen = backend.ProxyListen();
  // Where its sandboxes reach the proxy is the runtime's to say, and whether
  // they are told at all.
  proxy_options.sandbox_address = backend.ProxyAddressInside();
  proxy_options.proxy_variables = !proxy_options.sandbox_address.empty();
  proxy_options.socket = proxy_options.listen.empty() ? record.dir + "/proxy.sock" : "";
  proxy_options.ca_dir = record.dir + "/ca";
  if (spec.ask) {
    credproxy::ApprovalsOptions ask = *spec.ask;
    ask.session = record.id;
    proxy_options.approvals = std::make_shared<credproxy::Approvals>(std::move(ask));
    proxy_options.control_socket = ControlSocketIn(record.dir);
  }
  for (const credproxy::Credential& credential : proxy_options.vault.credentials()) {
    // A sign-in's tokens are the proxy's alone: it renews them.
    if (credential.hosts.empty() || !credential.sign_in.empty()) continue;
    if (auto real = proxy_options.vault.RealValue(credential.stand_in, credential.hosts[0])) {
      credentials.push_back({credential.name, *real, credential.hosts});
    }
  }
  return proxy_options;
}

// What the sandbox's processes start with: a plain PATH and the user's
// names, the caller's variables, then the proxy's (which win).
std::map<std::string, std::string> SessionEnvironment(const SessionSpec& spec,
                                                      const std::string& id,
                                                      const credproxy::Proxy& proxy) {
  std::map<std::string, std::string> env = {
      {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
      {"HOME", spec.home},
      {"USER", spec.user},
      {"LOGNAME", spec.user},
      {"MOJOUP_SESSION", id},
  };
  for (const auto& [name, value] : spec.environment) env[name] = value;
  for (const auto& [name, value] : proxy.Environment()) env[name] = value;
  return env;
}

// The record of a session starting now, owned by this process.
SessionRecord NewRecord(const SessionSpec& spec, bool repo_had_git,
                        const SessionManagerOptions& options) {
  SessionRecord record;
  record.id = spec.id.empty() ? options.new_id() : spec.id;
  record.user = spec.user;
  record.repo = spec.repo;
  record.tool = spec.tool;
  record.runtime = std::string(options.backend->name());
  record.state = "starting";
  const auto started = options.now();
  record.started_at = internal::Rfc3339(started);
  record.started_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(started.time_since_epoch()).count();
  record.pid = static_cast<int>(getpid());
  record.pid_start = options.process_start(record.pid).value_or(0);
  record.dir = options.state_dir + "/sessions/" + record.id;
  record.repo_had_git = repo_had_git;
  return record;
}

// What the runtime creates: the staging home at the home's path, the
// repository with what the host trusts read-only, the session CA, and the
// places the command may write.
absl::StatusOr<SandboxSpec> SandboxFor(const SessionSpec& spec, const SessionRecord& record,
                                       const credproxy::Proxy& proxy,
                                       const std::map<std::string, std::string>& environment,
                                       const RepositoryMounts& repository,
                                       const policy::NetworkRules& rules,
                                       std::vector<SandboxCredential> credentials,
                                       const SessionManagerOptions& options) {
  SandboxSpec sandbox;
  sandbox.session = record.id;
  sandbox.labels = {{std::string(kStateLabel), options.state_dir},
                    {std::string(kNodeLabel), options.node_id}};
  sandbox.image = spec.image;
  sandbox.uid = spec.uid;
  sandbox.gid = spec.gid;
  sandbox.workdir = spec.workdir;
  sandbox.command = spec.command;
  sandbox.tty = spec.tty;
  sandbox.notice = spec.notice;
  sandbox.credentials = std::move(credentials);
  sandbox.supervisor = options.supervisor;
  sandbox.proxy_socket = proxy.socket_path();
  sandbox.proxy_address = proxy.tcp_address();
  sandbox.session_dir = record.dir;
  sandbox.returns_dir = options.state_dir + "/returns/" + record.id;
  sandbox.tool = spec.tool;
  sandbox.rules = &rules;
  sandbox.mounts = {{record.sign_in->home, spec.home, false}};
  sandbox.mounts.insert(sandbox.mounts.end(), repository.mounts.begin(), repository.mounts.end());
  sandbox.mounts.push_back({record.dir + "/ca", record.dir + "/ca", true});
  sandbox.repo = spec.repo;
  sandbox.home = spec.home;
  sandbox.writable = {spec.repo, spec.home, "/tmp"};
  sandbox.writable.insert(sandbox.writable.end(), repository.writable.begin(),
                          repository.writable.end());
  if (absl::Status made = MakeMountPoints(record.sign_in->home, spec.home, sandbox.mounts);
      !made.ok()) {
    return made;
  }
  sandbox.cpus = spec.cpus;
  sandbox.environment = environment;
  return sandbox;
}

// What the session's repository held before it: next to its record.
std::string PlacesPath(const std::string& state_dir, const std::string& id) {
  return state_dir + "/sessions/" + id + ".places";
}

GitPlaces PlacesBefore(const std::string& state_dir, const SessionRecord& record,
                       std::vector<std::string>& errors) {
  auto read = internal::ReadRegularFile(PlacesPath(state_dir, record.id), kMaxGitPlacesBytes);
  absl::StatusOr<GitPlaces> places =
      read.ok() ? GitPlacesFromText(read->bytes) : absl::StatusOr<GitPlaces>(read.status());
  if (places.ok()) return *std::move(places);
  // Without what was there before, every repository but the repository's
  // own .git counts as the session's.
  if (!absl::IsNotFound(places.status())) {
    errors.push_back(
        fmt::format("{} cannot be read ({}); every repository in {} but its own is "
                    "taken as the session's",
                    PlacesPath(state_dir, record.id), Message(places.status()), record.repo));
  }
  GitPlaces own;
  struct stat info {};
  if (record.repo_had_git && ::lstat((record.repo + "/.git").c_str(), &info) == 0) {
    own.places.push_back(
        {.path = ".git", .dev = info.st_dev, .ino = info.st_ino, .dot_git = true, .guarded = true});
  }
  return own;
}

// An approval asked for or decided, as its audit line.
credproxy::AuditEvent ApprovalEvent(const credproxy::Approval& approval) {
  credproxy::AuditEvent event;
  const bool asked = approval.state == credproxy::ApprovalState::kPending;
  event.event = asked ? "approval.request" : "approval.decision";
  event.approval = approval.id;
  event.host = approval.host;
  event.port = approval.port;
  event.method = approval.method;
  if (asked) {
    event.expires = internal::Rfc3339(approval.expires);
    return event;
  }
  event.state = std::string(credproxy::ApprovalStateName(approval.state));
  if (approval.state == credproxy::ApprovalState::kApproved) {
    event.scope = std::string(credproxy::ApprovalScopeName(approval.scope));
  }
  event.by = approval.by;
  event.reason = approval.reason;
  return event;
}

// Every approval asked for and decided goes to the audit, then to the
// runtime's own ask (which applies a grant), then to the caller (run's
// notice).
void AuditApprovals(SessionSpec& spec, const std::shared_ptr<credproxy::AuditLog>& audit,
                    std::weak_ptr<RuntimeAsk> runtime) {
  if (!spec.ask) return;
  spec.ask->on_change =
      [audit, runtime, tell = std::move(spec.ask->on_change)](const credproxy::Approval& approval) {
        if (audit) audit->Write(ApprovalEvent(approval));
        if (auto ask = runtime.lock()) ask->Approved(approval);
        if (tell) tell(approval);
      };
}

// Ask where the runtime's own proxy refuses a request outside the list at
// once (RuntimeAsk): nothing is held, and a grant, which the runtime
// applies to the sandbox's policy, cannot be limited to one request.
std::shared_ptr<RuntimeAsk> RuntimeAskFor(SessionSpec& spec, Backend& backend,
                                          const std::shared_ptr<credproxy::AuditLog>& audit) {
  if (!spec.ask || !backend.RefusesEgressItself()) return nullptr;
  spec.ask->once_refused = fmt::format(
      "the {} runtime's own proxy applies a grant to the sandbox's policy, which cannot let "
      "a single request through: approve with --scope session, which lasts until the session "
      "ends",
      backend.name());
  return std::make_shared<RuntimeAsk>(RuntimeAskOptions{.backend = &backend,
                                                        .rules = spec.proxy.rules,
                                                        .pins = spec.proxy.pins,
                                                        .audit = audit,
                                                        .tell = spec.notice});
}

// The audit's last lines: what ending the session did, then its end line.
void EndAudit(credproxy::AuditLog& audit, const CloseReport& report, std::optional<int> exit_code) {
  for (const CloseNotice& notice : CloseNotices(report)) {
    credproxy::AuditEvent event;
    event.event = "notice";
    event.kind = std::string(notice.kind);
    event.message = notice.message;
    audit.Write(std::move(event));
  }
  credproxy::AuditEvent end;
  end.event = "session.end";
  end.exit_code = exit_code;
  audit.Write(std::move(end));
  audit.Close();
}

// The audit of a session whose owner is gone gets the end line the owner
// never wrote; why it cannot goes to `notices`.
void EndAuditOfDeadOwner(const std::string& state_dir, const SessionRecord& record,
                         std::chrono::system_clock::time_point now,
                         std::vector<std::string>& notices) {
  auto ended = EndOrphanedAudit(
      {.dir = state_dir + "/audit",
       .session = record.id,
       .owner = ::geteuid(),
       .detail =
           fmt::format("its owner, process {}, was gone; the node cleaned up after it", record.pid),
       .now = now});
  if (ended.ok() || absl::IsNotFound(ended.status())) return;
  notices.push_back(fmt::format("session {}: its audit is left without an end line: {}", record.id,
                                std::string(ended.status().message())));
}

}  // namespace

// --- Session -----------------------------------------------------------------

Session::Session(SessionManager& manager, SessionRecord record)
    : manager_(manager), record_(std::move(record)) {}

Session::~Session() { Close(); }

absl::StatusOr<int> Session::Run(const Stdio& stdio) {
  absl::StatusOr<int> code = manager_.options_.backend->Run(record_.sandbox, stdio);
  if (code.ok()) exit_code_ = *code;
  return code;
}

absl::Status Session::Signal(int signal) {
  return manager_.options_.backend->Signal(record_.sandbox, signal);
}

absl::Status Session::Resize(unsigned short rows, unsigned short columns) {
  return manager_.options_.backend->Resize(record_.sandbox, rows, columns);
}

SessionTally Session::Tally() const {
  SessionTally tally;
  if (counted_) tally.egress = counted_->counts();
  if (approvals_) tally.approvals = approvals_->Count();
  return tally;
}

CloseReport Session::Close() {
  if (closed_) return {};
  closed_ = true;
  // The runtime's refusals are read no more, and no grant is applied.
  if (runtime_ask_) runtime_ask_->Stop();
  // Nothing held is granted by the end: what is pending expires.
  if (approvals_) approvals_->EndSession();
  CloseReport report = manager_.CleanUp(record_, keeper_.get());
  // The proxy's last lines go before the end line.
  proxy_.reset();
  if (audit_) {
    EndAudit(*audit_, report, exit_code_);
    audit_.reset();
  }
  return report;
}

// --- SessionManager ----------------------------------------------------------

SessionManager::SessionManager(SessionManagerOptions options) : options_(std::move(options)) {
  if (!options_.now) options_.now = [] { return std::chrono::system_clock::now(); };
  if (!options_.new_id) options_.new_id = internal::RandomHex;
  if (!options_.process_start) options_.process_start = ProcStartTime;
  if (!options_.getenv) options_.getenv = SystemGetenv();
  if (options_.home.empty()) options_.home = UserHome();
  if (options_.node_id.empty()) options_.node_id = NodeId();
}

absl::Status SessionManager::CheckStateDir() const {
  return internal::CheckPrivateDir(options_.state_dir, kStateWhat);
}

std::string SessionManager::RecordPath(const std::string& id) const {
  return options_.state_dir + "/sessions/" + id + ".json";
}

absl::Status SessionManager::WriteRecord(const SessionRecord& record) {
  // A reader sees the old record or the new one, never half of one.
  return internal::ReplaceAtomically(RecordPath(record.id), RecordToJson(record), 0600);
}

bool SessionManager::OwnerAlive(const SessionRecord& record) const {
  auto start = options_.process_start(record.pid);
  return start.has_value() && *start == record.pid_start;
}

absl::Status SessionManager::StartAudit(SessionSpec& spec, Session& session) {
  if (absl::Status made =
          internal::MakePrivateDir(options_.state_dir + "/audit", "the node's audit directory");
      !made.ok()) {
    return made;
  }
  credproxy::AuditOptions options = spec.audit;
  options.path = AuditPath(options_.state_dir, session.record_.id);
  options.session = session.record_.id;
  auto audit = credproxy::AuditLog::Open(std::move(options));
  if (!audit.ok()) return audit.status();
  credproxy::AuditEvent start;
  start.event = "session.start";
  start.user = spec.user;
  start.uid = static_cast<std::uint32_t>(spec.uid);
  start.repo = spec.repo;
  start.tool = spec.tool;
  start.runtime = session.record_.runtime;
  start.image = spec.image;
  start.ask = spec.ask.has_value();
  (*audit)->Write(std::move(start));
  // The proxy's decisions go into the same log, between start and end.
  spec.proxy.audit = *audit;
  session.counted_ = *audit;
  session.audit_ = *std::move(audit);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Session>> SessionManager::Start(SessionSpec spec) {
  if (options_.backend == nullptr) return absl::InvalidArgumentError("no sandbox backend");
  if (absl::Status checked = CheckSpec(spec, options_.state_dir); !checked.ok()) return checked;
  if (spec.workdir.empty()) spec.workdir = spec.repo;
  // What of the repository the host trusts is checked and protected before
  // anything exists, so a refusal leaves nothing behind.
  auto repository = GuardRepository(
      {.repo = spec.repo, .uid = spec.uid, .home = spec.home, .state_dir = options_.state_dir});
  if (!repository.ok()) return repository.status();
  for (const std::string& sentence : repository->notices) {
    if (spec.notice) spec.notice(sentence);
  }
  // Where git would find a repository now: after the session, any that is
  // new or not as it was is disarmed.
  auto places = NoteGitPlaces(spec.repo, *repository);
  if (!places.ok()) return places.status();
  for (const std::string& dir : {options_.state_dir, options_.state_dir + "/sessions"}) {
    if (absl::Status made = internal::MakePrivateDir(dir, kStateWhat); !made.ok()) return made;
  }

  // The record comes first: from here on a crash leaves something Reap finds.
  SessionRecord record = NewRecord(spec, repository->has_git, options_);
  // What the repository held goes first: a record never lacks it (a places
  // file without a record is removed by List).
  const std::string places_path = PlacesPath(options_.state_dir, record.id);
  if (absl::Status written =
          internal::ReplaceAtomically(places_path, GitPlacesToText(*places), 0600);
      !written.ok()) {
    return written;
  }
  if (absl::Status written = WriteRecord(record); !written.ok()) {
    std::error_code ec;
    fs::remove(places_path, ec);
    return written;
  }
  std::unique_ptr<Session> session(new Session(*this, record));
  auto fail = [&](absl::Status status) -> absl::StatusOr<std::unique_ptr<Session>> {
    session->Close();
    return status;
  };
  if (absl::Status audited = StartAudit(spec, *session); !audited.ok()) return fail(audited);
  // Without the window on record, a policy the session plants would be
  // trusted by the next run: no window, no session.
  if (absl::Status watched = PolicyWatch(options_.state_dir)
                                 .SessionStarted(spec.repo, record.id,
                                                 std::chrono::system_clock::time_point(
                                                     std::chrono::nanoseconds(record.started_ns)));
      !watched.ok()) {
    return fail(watched);
  }
  if (absl::Status made = internal::MakePrivateDir(record.dir, "the session's directory");
      !made.ok()) {
    return fail(made);
  }
  auto staging =
      StageSignIn(spec.tool, spec.home, options_.getenv, record.dir + "/home", spec.proxy.vault);
  if (!staging.ok()) return fail(staging.status());
  for (const std::string& sentence : staging->notices) {
    if (spec.notice) spec.notice(sentence);
  }
  session->record_.sign_in = *staging;
  // The proxy tells the keeper of every refresh it sees, and asks it
  // whether the user's own copy changed.
  session->keeper_ = std::make_shared<SignInKeeper>(*staging, options_.now);
  spec.proxy.on_refresh = [keeper = session->keeper_](const credproxy::TokenRefresh& refresh) {
    keeper->Refreshed(refresh);
  };
  spec.proxy.check_sign_in = [keeper = session->keeper_](const std::string& sign_in) {
    return keeper->Check(sign_in);
  };

  session->runtime_ask_ = RuntimeAskFor(spec, *options_.backend, session->audit_);
  AuditApprovals(spec, session->audit_, session->runtime_ask_);
  const policy::NetworkRules rules = spec.proxy.rules;  // the proxy takes its own copy
  std::vector<SandboxCredential> credentials;
  credproxy::ProxyOptions proxy_options =
      SessionProxyOptions(spec, session->record_, *options_.backend, credentials);
  session->approvals_ = proxy_options.approvals;
  auto proxy = credproxy::Proxy::Start(std::move(proxy_options));
  if (!proxy.ok()) return fail(proxy.status());
  session->proxy_ = std::move(*proxy);
  session->environment_ = SessionEnvironment(spec, record.id, *session->proxy_);

  auto sandbox = SandboxFor(spec, session->record_, *session->proxy_, session->environment_,
                            *repository, rules, std::move(credentials), options_);
  if (!sandbox.ok()) return fail(sandbox.status());
  auto created = options_.backend->Create(*sandbox);
  if (!created.ok()) {
    // A create that failed half-way may still have left a container.
    session->record_.state = "stopping";
    return fail(created.status());
  }
  session->record_.sandbox = *created;
  session->record_.state = "running";
  if (absl::Status written = WriteRecord(session->record_); !written.ok()) return fail(written);
  if (session->runtime_ask_) session->runtime_ask_->Start(*created, session->approvals_);
  return session;
}

CloseReport SessionManager::CleanUp(const SessionRecord& record, SignInKeeper* keeper) {
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
    // A copy's work comes back first; when it cannot, the sandbox stays so
    // the work is not lost, and the record with it.
    auto back = options_.backend->BringBack(sandbox);
    if (!back.ok()) {
      report.errors.push_back(fmt::format(
          "{}; the sandbox {} is kept with the session's work (remove it with `mojoup-node stop "
          "{}`, which then does not try again)",
          Message(back.status()), sandbox, record.id));
      continue;
    }
    if (!back->empty()) report.notices.push_back(*back);
    if (absl::Status removed = options_.backend->Remove(sandbox); !removed.ok()) {
      report.errors.emplace_back(removed.message());
    }
  }
  // The window in which the session could write the repository closes
  // once its sandbox is surely gone, whatever fails after this.
  const bool sandbox_gone = report.errors.empty();
  if (record.sign_in) report.sign_in = WriteBackSignIn(*record.sign_in, record.id);
  if (keeper != nullptr) {
    WriteBackReport kept = keeper->Finish();
    auto& into = report.sign_in;
    into.written.insert(into.written.end(), kept.written.begin(), kept.written.end());
    into.errors.insert(into.errors.end(), kept.errors.begin(), kept.errors.end());
    into.notices.insert(into.notices.end(), kept.notices.begin(), kept.notices.end());
  }
  std::error_code ec;
  if (absl::Status removed = internal::RemoveTree(record.dir); !removed.ok()) {
    report.errors.push_back(
        fmt::format("the session's directory {} is not all removed ({}); remove it yourself (`sudo "
                    "rm -rf {}`), "
                    "then run `mojoup-node status`",
                    record.dir, std::string(removed.message()), record.dir));
  }
  if (!record.repo.empty() && sandbox_gone) {
    MoveAsidePlantedRepositories(record.repo,
                                 PlacesBefore(options_.state_dir, record, report.errors),
                                 record.started_ns, record.id, report.notices, report.errors);
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
  if (report.errors.empty()) {
    fs::remove(RecordPath(record.id), ec);
    fs::remove(PlacesPath(options_.state_dir, record.id), ec);
  }
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
    // What a session's repository held, once its record is gone (a crash
    // between the two removals): nothing reads it any more.
    if (entry.path().extension() == ".places" &&
        !fs::exists(fs::path(path).replace_extension(".json"), ec)) {
      fs::remove(path, ec);
    }
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
    EndAuditOfDeadOwner(options_.state_dir, record, options_.now(), closed.notices);
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
  // Ended sessions' audits beyond the node's count and age.
  AuditPruning pruning{
      .keep = options_.audit_keep, .max_age = options_.audit_max_age, .now = options_.now()};
  pruning.live = recorded;
  report.audits = PruneAudits(options_.state_dir + "/audit", pruning, report.errors);
  // Sandboxes of this state directory that no record knows.
  auto sandboxes = options_.backend->List({{std::string(kStateLabel), options_.state_dir}});
  if (!sandboxes.ok()) {
    (absl::IsUnavailable(sandboxes.status()) ? report.unreachable : report.errors.emplace_back()) =
        std::string(sandboxes.status().message());
    return report;
  }
  for (const SandboxInfo& info : *sandboxes) {
    if (recorded.count(info.session) > 0) continue;
    // Another machine's, on a gateway both use, whose state directory has
    // the same path as ours. (A sandbox from before the label has none.)
    if (auto node = info.labels.find(std::string(kNodeLabel));
        node != info.labels.end() && node->second != options_.node_id) {
      continue;
    }
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
  if (!OwnerAlive(*record)) {
    CloseReport closed = CleanUp(*record);
    EndAuditOfDeadOwner(options_.state_dir, *record, options_.now(), closed.notices);
    return closed;
  }

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

std::string NodeId() {
  // machine-id(5): 32 hex digits and a newline, the same for every user.
  std::string seed;
  if (auto read = internal::ReadRegularFile("/etc/machine-id", 4096); read.ok()) {
    seed = read->bytes;
  }
  while (!seed.empty() && (seed.back() == '\n' || seed.back() == ' ')) seed.pop_back();
  if (seed.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof(host) - 1) == 0) seed = std::string("host:") + host;
  }
  return internal::Sha256Hex(seed).substr(0, 16);
}

}  // namespace mojoup::sandbox

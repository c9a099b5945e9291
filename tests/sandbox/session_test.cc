// The session lifecycle against InMemoryBackend: what a sandbox is built
// from, and that nothing of a session outlives it, even when its owner dies.
#include "mojoup/sandbox/session.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "../support/signin_files.h"
#include "../support/test_support.h"
#include "fmt/format.h"
#include "mojoup/policy/network_rules.h"
#include "mojoup/sandbox/audit_reader.h"
#include "mojoup/sandbox/testing/in_memory_backend.h"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using mojoup::sandbox::BindMount;
using mojoup::sandbox::SessionManager;
using mojoup::sandbox::SessionManagerOptions;
using mojoup::sandbox::SessionSpec;
using mojoup::sandbox::Stdio;
using mojoup::sandbox::testing::InMemoryBackend;
using mojoup::test::Slurp;
using mojoup::test::TempDir;

// A node's state directory, a user's home and repository, and a manager
// whose owners are alive unless the test says otherwise.
struct Fixture {
  TempDir dir;
  InMemoryBackend backend;
  std::set<int> dead;
  int ids = 0;
  std::map<std::string, std::string> env;

  std::string state() const { return dir / "state"; }
  std::string home() const { return dir / "home"; }
  std::string repo() const { return dir / "home/src/repo"; }

  Fixture() { mojoup::test::MakeGitDir(repo() + "/.git"); }

  SessionManagerOptions Options() {
    SessionManagerOptions options;
    options.state_dir = state();
    options.backend = &backend;
    options.supervisor = "/usr/libexec/mojoup/mojoup-sandbox-init";
    options.new_id = [this] { return "s" + std::to_string(++ids); };
    options.process_start = [this](int pid) -> std::optional<std::uint64_t> {
      if (dead.count(pid) > 0) return std::nullopt;
      return 42;
    };
    options.getenv = [this](std::string_view name) -> std::optional<std::string> {
      auto it = env.find(std::string(name));
      if (it == env.end()) return std::nullopt;
      return it->second;
    };
    options.stop_grace = std::chrono::milliseconds(100);
    options.home = home();
    return options;
  }

  SessionSpec Spec(std::string tool = "") {
    SessionSpec spec;
    spec.user = "ada";
    spec.uid = getuid();  // the owner of the repository the fixture makes
    spec.gid = getgid();
    spec.home = home();
    spec.repo = repo();
    spec.tool = std::move(tool);
    spec.command = {"claude", "--resume"};
    spec.image = "sandbox:1";
    return spec;
  }

  // Nothing of any session is left: no sandbox, no record, no directory.
  void RequireNothingLeft() {
    REQUIRE(backend.sandboxes().empty());
    std::vector<std::string> left;
    if (fs::exists(state() + "/sessions")) {
      for (const auto& entry : fs::directory_iterator(state() + "/sessions")) {
        left.push_back(entry.path().string());
      }
    }
    INFO(left.size() << " left, first: " << (left.empty() ? "" : left[0]));
    REQUIRE(left.empty());
  }
};

bool HasMount(const std::vector<BindMount>& mounts, const std::string& source,
              const std::string& target, bool read_only) {
  for (const BindMount& mount : mounts) {
    if (mount.source == source && mount.target == target && mount.read_only == read_only) {
      return true;
    }
  }
  return false;
}

TEST_CASE("a session's sandbox: repository at its own path, proxy, stand-ins", "[session]") {
  Fixture f;
  SessionManager manager(f.Options());
  SessionSpec spec = f.Spec();
  const std::string real_key = "sk-ant-api03-" + std::string(80, 'R') + "AA";
  REQUIRE(spec.proxy.vault.Add("ANTHROPIC_API_KEY", real_key, {"api.anthropic.com"}).ok());
  auto session = manager.Start(std::move(spec));
  REQUIRE(session.ok());
  const auto& record = (*session)->record();
  REQUIRE(record.state == "running");
  REQUIRE(record.pid == getpid());
  REQUIRE(record.pid_start == 42);
  REQUIRE(record.runtime == "memory");

  auto sandboxes = f.backend.sandboxes();
  REQUIRE(sandboxes.size() == 1);
  const auto& built = sandboxes.begin()->second.spec;
  REQUIRE(sandboxes.begin()->first == record.sandbox);
  REQUIRE(built.workdir == f.repo());
  REQUIRE(built.uid == getuid());
  REQUIRE(built.command == std::vector<std::string>{"claude", "--resume"});
  REQUIRE(HasMount(built.mounts, f.repo(), f.repo(), false));
  REQUIRE(HasMount(built.mounts, record.dir + "/home", f.home(), false));
  REQUIRE(built.writable == std::vector<std::string>{f.repo(), f.home(), "/tmp"});
  REQUIRE(built.labels.at("mojoup.state") == f.state());
  REQUIRE(fs::is_socket(built.proxy_socket));
  REQUIRE(built.environment.at("HOME") == f.home());
  REQUIRE(built.environment.at("HTTPS_PROXY") == "http://127.0.0.1:3128");
  const std::string stand_in = built.environment.at("ANTHROPIC_API_KEY");
  REQUIRE(stand_in.size() == real_key.size());
  REQUIRE(stand_in != real_key);
  for (const auto& [name, value] : built.environment) REQUIRE_THAT(value, !Contains(real_key));
  REQUIRE(fs::exists(built.environment.at("SSL_CERT_FILE")));

  // The record on disk names the session for `status` and the reaper.
  const std::string on_disk = Slurp(f.state() + "/sessions/" + record.id + ".json");
  REQUIRE_THAT(on_disk, Contains("\"repo\":\"" + f.repo() + "\""));
  REQUIRE_THAT(on_disk, !Contains(real_key));
  auto listed = manager.List();
  REQUIRE(listed.ok());
  REQUIRE(listed->size() == 1);
  REQUIRE(listed->front().sandbox == record.sandbox);

  auto code = (*session)->Run(Stdio{});
  REQUIRE(code.ok());
  REQUIRE(*code == 0);
  auto closed = (*session)->Close();
  REQUIRE(closed.errors.empty());
  f.RequireNothingLeft();
}

TEST_CASE("a session's exit code comes back from Run", "[session]") {
  Fixture f;
  f.backend.SetScript([](const mojoup::sandbox::SandboxSpec&, const Stdio&) { return 7; });
  SessionManager manager(f.Options());
  auto session = manager.Start(f.Spec());
  REQUIRE(session.ok());
  REQUIRE(*(*session)->Run(Stdio{}) == 7);
  session->reset();  // the destructor closes it too
  f.RequireNothingLeft();
}

TEST_CASE("a sandbox that cannot be built leaves nothing behind", "[session]") {
  Fixture f;
  f.backend.FailNext("create", absl::FailedPreconditionError("no such image"));
  SessionManager manager(f.Options());
  auto session = manager.Start(f.Spec());
  REQUIRE_FALSE(session.ok());
  REQUIRE_THAT(std::string(session.status().message()), Contains("no such image"));
  f.RequireNothingLeft();
}

TEST_CASE("a sandbox left by a create that was cut short is found by its label", "[session]") {
  Fixture f;
  mojoup::sandbox::SandboxSpec half;
  half.session = "s1";  // the id the manager hands out first
  f.backend.Adopt(half);
  f.backend.FailNext("create", absl::DeadlineExceededError("Docker did not answer"));
  SessionManager manager(f.Options());
  REQUIRE_FALSE(manager.Start(f.Spec()).ok());
  f.RequireNothingLeft();
}

TEST_CASE("Reap cleans up after an owner that was killed", "[session][reap]") {
  Fixture f;
  SessionManager manager(f.Options());
  auto session = manager.Start(f.Spec());
  REQUIRE(session.ok());
  const std::string id = (*session)->record().id;

  SECTION("a live owner's session is left alone") {
    auto reap = manager.Reap();
    REQUIRE(reap.sessions.empty());
    REQUIRE(f.backend.sandboxes().size() == 1);
    REQUIRE(fs::exists(f.state() + "/sessions/" + id + ".json"));
  }
  SECTION("a dead owner's sandbox, staging and record go") {
    f.dead.insert(getpid());  // as if this process had been SIGKILLed
    SessionManager next(f.Options());
    auto reap = next.Reap();
    REQUIRE(reap.sessions == std::vector<std::string>{id});
    REQUIRE(reap.errors.empty());
    f.RequireNothingLeft();
  }
  SECTION("a pid reused by another process is not the owner") {
    SessionManagerOptions options = f.Options();
    options.process_start = [](int) -> std::optional<std::uint64_t> { return 43; };
    SessionManager next(options);
    REQUIRE(next.Reap().sessions == std::vector<std::string>{id});
    f.RequireNothingLeft();
  }
  SECTION("when the sandbox cannot be removed, the record stays for the next try") {
    f.dead.insert(getpid());
    f.backend.FailNext("remove", absl::UnavailableError("Docker is down"));
    SessionManager next(f.Options());
    auto reap = next.Reap();
    REQUIRE(reap.errors.size() == 1);
    REQUIRE_THAT(reap.errors[0], Contains("session " + id +
                                          ", whose owner is gone, is not fully "
                                          "removed: Docker is down"));
    REQUIRE(reap.sessions.empty());  // not claimed as cleaned up
    REQUIRE(fs::exists(f.state() + "/sessions/" + id + ".json"));
    // It is listed as what it is: a leftover, not a running session.
    auto listed = next.List();
    REQUIRE(listed.ok());
    REQUIRE(listed->size() == 1);
    REQUIRE(listed->front().state == "leftover");
    REQUIRE_THAT(listed->front().problem, Contains("Docker is down"));
    // The next try succeeds, and says so.
    auto again = next.Reap();
    REQUIRE(again.errors.empty());
    REQUIRE(again.sessions == std::vector<std::string>{id});
    f.RequireNothingLeft();
  }
  SECTION("what cannot be removed is said once, and stop says it did not stop") {
    f.dead.insert(getpid());
    SessionManager next(f.Options());
    f.backend.FailNext("remove", absl::UnavailableError("Docker is down"));
    REQUIRE(next.Reap().errors.size() == 1);
    f.backend.FailNext("remove", absl::UnavailableError("Docker is down"));
    REQUIRE(next.Reap().errors.empty());  // the same problem, already said
    f.backend.FailNext("remove", absl::UnavailableError("Docker is down"));
    auto stopped = next.Stop(id);
    REQUIRE(stopped.ok());
    REQUIRE_FALSE(stopped->errors.empty());
    REQUIRE(next.Reap().sessions == std::vector<std::string>{id});
    f.RequireNothingLeft();
  }
  (*session)->Close();
}

TEST_CASE("an owner that is a zombie is gone", "[session][reap]") {
  // A child that exits and is not waited for stays a zombie (state Z) with
  // its /proc entry: as a killed `mojoup-node run` under a parent that does
  // not reap.
  pid_t child = fork();
  if (child == 0) _exit(0);
  REQUIRE(child > 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(fs::exists("/proc/" + std::to_string(child)));
  Fixture f;
  SessionManagerOptions options = f.Options();
  options.process_start = nullptr;  // the real /proc reading
  SessionManager manager(options);
  auto session = manager.Start(f.Spec());
  REQUIRE(session.ok());
  // The record names the zombie as its owner.
  mojoup::sandbox::SessionRecord record = (*session)->record();
  const std::string path = f.state() + "/sessions/" + record.id + ".json";
  std::string text = Slurp(path);
  const std::string pid_field = "\"pid\":" + std::to_string(getpid());
  REQUIRE(text.find(pid_field) != std::string::npos);
  text.replace(text.find(pid_field), pid_field.size(), "\"pid\":" + std::to_string(child));
  // ... and its true start time, so that only its state can tell it is gone.
  std::string stat = Slurp("/proc/" + std::to_string(child) + "/stat");
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field, child_start;
  for (int index = 3; index <= 22 && fields >> field; ++index) {
    if (index == 3) REQUIRE(field == "Z");
    if (index == 22) child_start = field;
  }
  const std::string start_field = "\"pid_start\":" + std::to_string(record.pid_start);
  REQUIRE(text.find(start_field) != std::string::npos);
  text.replace(text.find(start_field), start_field.size(), "\"pid_start\":" + child_start);
  std::ofstream(path, std::ios::trunc) << text;
  auto reap = manager.Reap();
  REQUIRE(reap.sessions == std::vector<std::string>{record.id});
  waitpid(child, nullptr, 0);
  f.RequireNothingLeft();
  (*session)->Close();
}

TEST_CASE("Reap removes this node's sandboxes that have no record", "[session][reap]") {
  Fixture f;
  mojoup::sandbox::SandboxSpec ours;
  ours.session = "lost";
  ours.labels = {{"mojoup.state", f.state()}};
  mojoup::sandbox::SandboxSpec theirs;
  theirs.session = "other";
  theirs.labels = {{"mojoup.state", "/run/user/1000/mojoup"}};
  f.backend.Adopt(ours);
  const std::string other = f.backend.Adopt(theirs);
  SessionManager manager(f.Options());
  auto reap = manager.Reap();
  REQUIRE(reap.sandboxes.size() == 1);
  auto left = f.backend.sandboxes();
  REQUIRE(left.size() == 1);
  REQUIRE(left.begin()->first == other);  // another state directory's: not ours to judge
}

TEST_CASE("Stop asks the command to end, then takes the sandbox away", "[session][stop]") {
  Fixture f;
  SessionManager manager(f.Options());
  auto session = manager.Start(f.Spec());
  REQUIRE(session.ok());
  const std::string id = (*session)->record().id;
  const std::string sandbox = (*session)->record().sandbox;

  SECTION("an unknown id is NotFound") {
    auto stopped = manager.Stop("nope");
    REQUIRE(absl::IsNotFound(stopped.status()));
    REQUIRE_THAT(std::string(stopped.status().message()), Contains("no session nope"));
  }
  SECTION("an owner that does not end it in time: it is ended for it") {
    auto stopped = manager.Stop(id);
    REQUIRE(stopped.ok());
    f.RequireNothingLeft();
  }
  SECTION("an owner that ends it itself") {
    std::thread owner([&] {
      while (f.backend.sandboxes().count(sandbox) > 0 &&
             f.backend.sandboxes().at(sandbox).signals.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      (*session)->Close();
    });
    auto stopped = manager.Stop(id);
    owner.join();
    REQUIRE(stopped.ok());
    f.RequireNothingLeft();
  }
  SECTION("a session whose owner is gone is cleaned up at once") {
    f.dead.insert(getpid());
    SessionManager other(f.Options());
    REQUIRE(other.Stop(id).ok());
    f.RequireNothingLeft();
  }
  (*session)->Close();
}

TEST_CASE("sign-in files are staged with stand-ins, and the sandbox's copy never comes back",
          "[session][signin]") {
  Fixture f;
  fs::create_directories(f.home() + "/.codex");
  const std::string mine = mojoup::test::CodexAuth("ada", 1);
  std::ofstream(f.home() + "/.codex/auth.json") << mine;
  chmod((f.home() + "/.codex/auth.json").c_str(), 0600);
  SessionManager manager(f.Options());
  auto session = manager.Start(f.Spec("codex"));
  REQUIRE(session.ok());
  const std::string staged = (*session)->record().dir + "/home/.codex/auth.json";
  const std::string copy = Slurp(staged);
  CHECK(copy != mine);
  CHECK(copy.find("rt_ada-1\"") == std::string::npos);
  CHECK(copy.find(R"("account_id":"acct-ada")") != std::string::npos);
  struct stat info {};
  REQUIRE(stat(((*session)->record().dir + "/home").c_str(), &info) == 0);
  REQUIRE((info.st_mode & 0777) == 0700);
  // The record says which secrets the sandbox has stand-ins for, never their values.
  REQUIRE((*session)->record().sign_in.has_value());
  CHECK((*session)->record().sign_in->secrets.size() == 3);
  CHECK(Slurp(f.state() + "/sessions/" + (*session)->record().id + ".json").find("rt_ada-1") ==
        std::string::npos);

  // The agent writes a "refresh" of its own making into its copy.
  std::ofstream(staged, std::ios::trunc) << mojoup::test::CodexAuth("ada", 2);
  const std::string id = (*session)->record().id;
  auto closed = (*session)->Close();
  CHECK(closed.sign_in.written.empty());
  CHECK(closed.sign_in.kept_aside.empty());
  CHECK(closed.sign_in.errors.empty());
  CHECK(Slurp(f.home() + "/.codex/auth.json") == mine);
  CHECK(!fs::exists(f.home() + "/.codex/auth.json.sandbox-" + id));
  f.RequireNothingLeft();
}

TEST_CASE("a sign-in's copy in the sandbox stays there even after the owner was killed",
          "[session][signin][reap]") {
  Fixture f;
  fs::create_directories(f.home() + "/.claude");
  const std::string mine = mojoup::test::ClaudeCredentials("ada", 1);
  std::ofstream(f.home() + "/.claude/.credentials.json") << mine;
  SessionManager manager(f.Options());
  auto session = manager.Start(f.Spec("claude-code"));
  REQUIRE(session.ok());
  const std::string id = (*session)->record().id;
  const std::string staged = (*session)->record().dir + "/home/.claude/.credentials.json";
  std::ofstream(staged, std::ios::trunc)
      << mojoup::test::ClaudeCredentials("eve", 2, "pro", "default_claude_pro");
  f.dead.insert(getpid());
  SessionManager next(f.Options());
  auto reap = next.Reap();
  REQUIRE(reap.sign_in.size() == 1);
  CHECK(reap.sign_in[0].written.empty());
  CHECK(reap.sign_in[0].kept_aside.empty());
  CHECK(Slurp(f.home() + "/.claude/.credentials.json") == mine);
  CHECK(!fs::exists(f.home() + "/.claude/.credentials.json.sandbox-" + id));
  f.RequireNothingLeft();
}

// A linked worktree at home/src/feature of a repository at main/, as
// `git worktree add` leaves them.
struct Worktree {
  std::string main_git;
  std::string entry;
  std::string path;
};

Worktree MakeWorktree(const Fixture& f) {
  Worktree w{f.dir / "main/.git", f.dir / "main/.git/worktrees/feature",
             f.dir / "home/src/feature"};
  mojoup::test::MakeGitDir(w.main_git);
  fs::create_directories(w.main_git + "/logs");
  fs::create_directories(w.entry);
  fs::create_directories(w.path);
  std::ofstream(w.entry + "/commondir") << "../..\n";
  std::ofstream(w.entry + "/gitdir") << w.path << "/.git\n";
  std::ofstream(w.entry + "/HEAD") << "ref: refs/heads/feature\n";
  std::ofstream(w.path + "/.git") << "gitdir: " << w.entry << "\n";
  return w;
}

TEST_CASE("a git worktree: the main git directory read-only, what commits write writable",
          "[session][git]") {
  Fixture f;
  Worktree w = MakeWorktree(f);
  SessionSpec spec = f.Spec();
  spec.repo = w.path;
  SessionManager manager(f.Options());
  auto session = manager.Start(std::move(spec));
  REQUIRE(session.ok());
  const auto sandboxes = f.backend.sandboxes();
  const auto& built = sandboxes.begin()->second.spec;
  auto writable = [&](const std::string& path) {
    return std::find(built.writable.begin(), built.writable.end(), path) != built.writable.end();
  };
  REQUIRE(HasMount(built.mounts, w.main_git, w.main_git, true));
  REQUIRE(HasMount(built.mounts, w.path + "/.git", w.path + "/.git", true));
  REQUIRE(HasMount(built.mounts, w.entry + "/commondir", w.entry + "/commondir", true));
  REQUIRE(HasMount(built.mounts, w.entry + "/gitdir", w.entry + "/gitdir", true));
  for (const std::string& path :
       {w.main_git + "/objects", w.main_git + "/refs", w.main_git + "/logs", w.entry}) {
    INFO(path);
    REQUIRE(HasMount(built.mounts, path, path, false));
    REQUIRE(writable(path));
  }
  REQUIRE_FALSE(writable(w.main_git));
  (*session)->Close();
}

TEST_CASE("a repository's git directory: pinned, config and hooks read-only", "[session][git]") {
  Fixture f;
  SessionManager manager(f.Options());
  auto session = manager.Start(f.Spec());
  REQUIRE(session.ok());
  const auto sandboxes = f.backend.sandboxes();
  const auto& built = sandboxes.begin()->second.spec;
  const std::string git = f.repo() + "/.git";
  REQUIRE(HasMount(built.mounts, git, git, false));
  for (const char* name : {"config", "config.worktree", "commondir", "hooks", "info/attributes",
                           "info/sparse-checkout", "modules", "worktrees", "remotes", "branches",
                           "objects/info/alternates", "objects/info/http-alternates"}) {
    INFO(name);
    REQUIRE(HasMount(built.mounts, git + "/" + name, git + "/" + name, true));
  }
  // Made in advance as git takes their absence: empty, and commondir naming
  // the git directory itself.
  REQUIRE(Slurp(git + "/commondir") == ".\n");
  REQUIRE(fs::is_empty(git + "/remotes"));
  REQUIRE(fs::file_size(git + "/objects/info/alternates") == 0);
  (*session)->Close();
}

TEST_CASE("a trusted git entry that is a symbolic link refuses the session, mounting nothing",
          "[session][git]") {
  Fixture f;
  SessionManager manager(f.Options());
  fs::create_directories(f.dir / "elsewhere");
  fs::remove_all(f.repo() + "/.git/remotes");
  fs::create_symlink(f.dir / "elsewhere", f.repo() + "/.git/remotes");
  auto session = manager.Start(f.Spec());
  REQUIRE(absl::IsFailedPrecondition(session.status()));
  REQUIRE_THAT(std::string(session.status().message()),
               Contains(f.repo() + "/.git/remotes is a symbolic link"));
  REQUIRE(f.backend.sandboxes().empty());
}

TEST_CASE(
    "after a session: what it planted in the git directory is quarantined, set-ID bits "
    "cleared",
    "[session][git]") {
  Fixture f;
  SessionManager manager(f.Options());
  auto session = manager.Start(f.Spec());
  REQUIRE(session.ok());
  const std::string git = f.repo() + "/.git";
  // As the session would, through its writable mounts.
  fs::create_directories(git + "/rebase-merge");
  std::ofstream(git + "/rebase-merge/git-rebase-todo") << "exec touch ~/pwned\n";
  fs::create_symlink("/etc/passwd", git + "/logs-link");
  std::ofstream(git + "/HEAD", std::ios::trunc) << "ref: refs/heads/main\n";
  std::ofstream(f.repo() + "/tool") << "#!/bin/sh\n";
  REQUIRE(::chmod((f.repo() + "/tool").c_str(), 04755) == 0);
  auto closed = (*session)->Close();
  INFO(closed.errors.size());
  REQUIRE(closed.errors.empty());
  REQUIRE_FALSE(fs::exists(git + "/rebase-merge"));
  REQUIRE_FALSE(fs::exists(fs::symlink_status(git + "/logs-link")));
  REQUIRE(Slurp(git + "/HEAD") == "ref: refs/heads/main\n");  // a plain ref stays
  struct stat info {};
  REQUIRE(::stat((f.repo() + "/tool").c_str(), &info) == 0);
  REQUIRE((info.st_mode & 07777) == 0755);
  std::string said;
  for (const std::string& notice : closed.notices) said += notice + "\n";
  REQUIRE_THAT(said, Contains("rebase-merge, which git on this host would obey"));
  REQUIRE_THAT(said, Contains("moved aside to " + git + "/rebase-merge.sandbox-"));
  REQUIRE_THAT(said, Contains("set-user-ID"));
  f.RequireNothingLeft();
}

TEST_CASE("after a session: a repository it made anywhere in the tree is quarantined",
          "[session][git]") {
  Fixture f;
  SessionManager manager(f.Options());
  // Made before the session: the user's own nested repository stays.
  mojoup::test::MakeGitDir(f.repo() + "/vendor/own/.git");
  auto session = manager.Start(f.Spec());
  REQUIRE(session.ok());
  // Not a gitlink yet; one later `git add .` would make it one.
  mojoup::test::MakeGitDir(f.repo() + "/deep/planted/.git");
  std::ofstream(f.repo() + "/deep/planted/.git/config", std::ios::app)
      << "[core]\n\tfsmonitor = touch ~/pwned\n";
  auto closed = (*session)->Close();
  REQUIRE(closed.errors.empty());
  REQUIRE_FALSE(fs::exists(f.repo() + "/deep/planted/.git"));
  REQUIRE(fs::exists(f.repo() + "/vendor/own/.git/config"));
  REQUIRE(fs::exists(f.repo() + "/vendor/own/.git/HEAD"));
  std::string said;
  for (const std::string& notice : closed.notices) said += notice + "\n";
  REQUIRE_THAT(said,
               Contains("made a repository git would find at " + f.repo() + "/deep/planted/.git"));
  f.RequireNothingLeft();
}

TEST_CASE("a forged record is not taken: its paths are not the node's own", "[session][reap]") {
  Fixture f;
  const std::string keep = f.dir / "important/keep";
  fs::create_directories(f.dir / "important");
  std::ofstream(keep) << "mine";
  fs::create_directories(f.state() + "/sessions");
  ::chmod(f.state().c_str(), 0700);
  ::chmod((f.state() + "/sessions").c_str(), 0700);
  for (const auto& [id, dir, sandbox] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"s1", f.dir / "important", ""},
           {"s2", f.state() + "/sessions/s2", "x\r\nPOST /containers/create HTTP/1.1"},
           {"s3", f.state() + "/sessions/s3", "../../x"}}) {
    std::ofstream(f.state() + "/sessions/" + id + ".json")
        << "{\"schema\":\"mojoup.session/v1\",\"id\":\"" << id << "\",\"user\":\"ada\",\"repo\":\""
        << f.repo() << "\",\"tool\":\"\",\"runtime\":\"memory\",\"sandbox\":\"" << sandbox
        << "\",\"state\":\"running\",\"started_at\":\"x\",\"dir\":\"" << dir
        << "\",\"pid\":1,\"pid_start\":1}";
  }
  f.dead.insert(1);
  SessionManager manager(f.Options());
  auto listed = manager.List();
  REQUIRE(listed.ok());
  REQUIRE(listed->empty());
  manager.Reap();
  REQUIRE(fs::exists(keep));
}

TEST_CASE("the state directory must be the user's alone", "[session][state]") {
  Fixture f;
  fs::create_directories(f.state());
  REQUIRE(::chmod(f.state().c_str(), 0777) == 0);
  SessionManager manager(f.Options());
  auto session = manager.Start(f.Spec());
  REQUIRE(absl::IsFailedPrecondition(session.status()));
  REQUIRE_THAT(std::string(session.status().message()), Contains("writable by others"));
  REQUIRE(absl::IsFailedPrecondition(manager.List().status()));
  ::chmod(f.state().c_str(), 0700);
}

TEST_CASE("a repository of / or holding the home, or holding the state, is refused",
          "[session][state]") {
  Fixture f;
  SessionManager manager(f.Options());
  SessionSpec root = f.Spec();
  root.repo = "/";
  REQUIRE(absl::IsInvalidArgument(manager.Start(root).status()));
  SessionSpec home = f.Spec();
  home.repo = f.home();
  REQUIRE(absl::IsInvalidArgument(manager.Start(home).status()));
  SessionManagerOptions inside = f.Options();
  inside.state_dir = f.repo() + "/.state";
  SessionManager in_repo(inside);
  auto refused = in_repo.Start(f.Spec());
  REQUIRE(absl::IsInvalidArgument(refused.status()));
  REQUIRE_THAT(std::string(refused.status().message()), Contains("lies in the repository"));
  REQUIRE_FALSE(fs::exists(f.repo() + "/.state"));
}

TEST_CASE("a .git that does not lead to the user's own repository is refused before anything",
          "[session][git]") {
  Fixture f;
  SessionManager manager(f.Options());
  Worktree w = MakeWorktree(f);
  struct Case {
    std::string dot_git;  // the worktree's .git file
    std::string said;
  };
  const std::vector<Case> cases = {
      {"gitdir: /etc", "not a linked worktree's entry"},
      {"gitdir: " + f.home(), "not a linked worktree's entry"},
      {"gitdir: " + w.main_git, "not a linked worktree's entry"},
      {"nonsense", "does not say \"gitdir: PATH\""},
  };
  for (const Case& c : cases) {
    std::ofstream(w.path + "/.git", std::ios::trunc) << c.dot_git << "\n";
    SessionSpec spec = f.Spec();
    spec.repo = w.path;
    auto session = manager.Start(std::move(spec));
    INFO(c.dot_git);
    REQUIRE(absl::IsFailedPrecondition(session.status()));
    REQUIRE_THAT(std::string(session.status().message()), Contains(c.said));
  }
  // The entry's own commondir pointing elsewhere.
  std::ofstream(w.path + "/.git", std::ios::trunc) << "gitdir: " << w.entry << "\n";
  std::ofstream(w.entry + "/commondir", std::ios::trunc) << f.home() << "\n";
  SessionSpec spec = f.Spec();
  spec.repo = w.path;
  REQUIRE_THAT(std::string(manager.Start(spec).status().message()),
               Contains("commondir does not lead back"));
  // A .git that is a symbolic link.
  fs::remove_all(f.repo() + "/.git");
  fs::create_directory_symlink(w.main_git, f.repo() + "/.git");
  REQUIRE_THAT(std::string(manager.Start(f.Spec()).status().message()),
               Contains("is a symbolic link"));
  f.RequireNothingLeft();
}

TEST_CASE("Start refuses a spec it cannot honour", "[session]") {
  Fixture f;
  SessionManager manager(f.Options());
  SessionSpec spec = f.Spec();
  spec.repo = "relative/path";
  REQUIRE(absl::IsInvalidArgument(manager.Start(spec).status()));
  spec = f.Spec();
  spec.command.clear();
  REQUIRE(absl::IsInvalidArgument(manager.Start(spec).status()));
  spec = f.Spec();
  spec.repo = f.home();  // the staging home would cover the repository
  REQUIRE_THAT(std::string(manager.Start(spec).status().message()), Contains("holds the home"));
  spec = f.Spec("no-such-tool");
  REQUIRE_FALSE(manager.Start(spec).ok());
  f.RequireNothingLeft();
}

// The proxy finds a pin by the host's canonical spelling
// (tests/credproxy/proxy_test.cc): --resolve's pins are keyed by it.
TEST_CASE("a --resolve pin is keyed by the host's canonical spelling, and no host is refused",
          "[session]") {
  std::map<std::string, std::string> pins;
  REQUIRE(mojoup::sandbox::AddPin("Echo.Test.:8443:127.0.0.1", pins).ok());
  REQUIRE(pins == std::map<std::string, std::string>{{"echo.test:8443", "127.0.0.1"}});
  REQUIRE_FALSE(mojoup::sandbox::AddPin("echo..test:443:127.0.0.1", pins).ok());
  REQUIRE(pins.size() == 1);
}

TEST_CASE("a session's audit: its start, its end with the exit code, no gap, a mirror",
          "[session][audit]") {
  Fixture f;
  f.backend.SetScript([](const mojoup::sandbox::SandboxSpec&, const Stdio&) { return 7; });
  SessionManager manager(f.Options());
  SessionSpec spec = f.Spec("claude-code");
  spec.audit.mirror = f.dir / "mirror.jsonl";
  auto session = manager.Start(std::move(spec));
  REQUIRE(session.ok());
  const std::string id = (*session)->record().id;
  const std::string path = mojoup::sandbox::AuditPath(f.state(), id);
  REQUIRE(*(*session)->Run(Stdio{}) == 7);
  (*session)->Close();
  auto lines = mojoup::sandbox::ReadAudit(path);  // every seq checked, from 1 up
  REQUIRE(lines.ok());
  REQUIRE(lines->size() >= 2);
  const auto& start = lines->front();
  CHECK(start.event == "session.start");
  CHECK(start.session == id);
  CHECK(start.user == "ada");
  CHECK(start.uid == getuid());
  CHECK(start.repo == f.repo());
  CHECK(start.tool == "claude-code");
  CHECK(start.runtime == "memory");
  CHECK(start.image == "sandbox:1");
  CHECK(start.ask == false);  // no approvals: nothing is asked
  CHECK(lines->back().event == "session.end");
  CHECK(lines->back().exit_code == 7);
  CHECK(Slurp(f.dir / "mirror.jsonl") == Slurp(path));
  struct stat info {};
  REQUIRE(::stat(path.c_str(), &info) == 0);
  CHECK((info.st_mode & 07777) == 0600);
  REQUIRE(::stat((f.state() + "/audit").c_str(), &info) == 0);
  CHECK((info.st_mode & 07777) == 0700);
}

TEST_CASE("a session that fails to start still ends its audit", "[session][audit]") {
  Fixture f;
  f.backend.FailNext("create", absl::FailedPreconditionError("no such image"));
  SessionManager manager(f.Options());
  REQUIRE_FALSE(manager.Start(f.Spec()).ok());
  auto lines = mojoup::sandbox::ReadAudit(mojoup::sandbox::AuditPath(f.state(), "s1"));
  REQUIRE(lines.ok());
  REQUIRE(lines->size() == 2);
  CHECK((*lines)[0].event == "session.start");
  CHECK((*lines)[1].event == "session.end");
  CHECK_FALSE((*lines)[1].exit_code.has_value());
}

// A session whose owner is then "killed", and another manager's Reap;
// `tamper` gets the audit's path first. The session object stays, unclosed,
// as a killed owner's would.
struct Killed {
  std::unique_ptr<SessionManager> manager;
  std::unique_ptr<mojoup::sandbox::Session> session;
  std::string id;
  std::string audit;
  mojoup::sandbox::ReapReport reap;
};

Killed StartKillReap(Fixture& f, const std::function<void(const std::string&)>& tamper = {}) {
  Killed killed;
  killed.manager = std::make_unique<SessionManager>(f.Options());
  auto session = killed.manager->Start(f.Spec());
  REQUIRE(session.ok());
  killed.session = *std::move(session);
  killed.id = killed.session->record().id;
  killed.audit = mojoup::sandbox::AuditPath(f.state(), killed.id);
  if (tamper) tamper(killed.audit);
  f.dead.insert(getpid());  // as if this process had been SIGKILLed
  SessionManager next(f.Options());
  killed.reap = next.Reap();
  REQUIRE(killed.reap.sessions == std::vector<std::string>{killed.id});
  return killed;
}

TEST_CASE("a killed owner's audit ends with the cleanup's end line, seq unbroken",
          "[session][audit][reap]") {
  Fixture f;
  Killed killed = StartKillReap(f);
  CHECK(killed.reap.notices.empty());
  auto lines = mojoup::sandbox::ReadAudit(killed.audit);
  REQUIRE(lines.ok());  // every seq checked, from 1 up
  REQUIRE(lines->size() == 2);
  CHECK((*lines)[0].event == "session.start");
  CHECK((*lines)[1].event == "session.end");
  CHECK((*lines)[1].reason == "owner-gone");
  CHECK_THAT((*lines)[1].detail,
             Contains(fmt::format("its owner, process {}, was gone", getpid())));
  CHECK_FALSE((*lines)[1].exit_code.has_value());
}

TEST_CASE("a killed owner's audit with a forged last line is left alone, and said so",
          "[session][audit][reap]") {
  Fixture f;
  std::string before;
  Killed killed = StartKillReap(f, [&](const std::string& path) {
    { std::ofstream(path, std::ios::app) << "{\"seq\": 99}\n"; }
    before = Slurp(path);
  });
  REQUIRE(killed.reap.notices.size() == 1);
  CHECK_THAT(killed.reap.notices[0],
             Contains("session " + killed.id + ": its audit is left without an end line: " +
                      killed.audit + ": its last line does not pass"));
  CHECK(Slurp(killed.audit) == before);
}

TEST_CASE("Reap removes ended sessions' old audits by count, never a live one's",
          "[session][audit]") {
  Fixture f;
  SessionManagerOptions options = f.Options();
  options.audit_keep = 1;
  // Only names as the node makes them count as audits.
  options.new_id = [n = 0]() mutable { return fmt::format("{:016x}", ++n); };
  SessionManager manager(options);
  for (int i = 0; i < 2; ++i) {
    auto ended = manager.Start(f.Spec());
    REQUIRE(ended.ok());
    (*ended)->Close();
  }
  auto live = manager.Start(f.Spec());
  REQUIRE(live.ok());
  auto reaped = manager.Reap();
  std::sort(reaped.audits.begin(), reaped.audits.end());
  CHECK(reaped.audits == std::vector<std::string>{"0000000000000001", "0000000000000002"});
  CHECK(fs::exists(mojoup::sandbox::AuditPath(f.state(), "0000000000000003")));
  CHECK_FALSE(fs::exists(mojoup::sandbox::AuditPath(f.state(), "0000000000000001")));
  (*live)->Close();
  CHECK(manager.Reap().audits.empty());  // the newest is kept
}

}  // namespace

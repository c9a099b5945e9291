// The session commands of docs/sessions.md as node operators run them: a normal user in
// the docker group, the repository under their $HOME, the programs installed
// in a directory of theirs.
#include <rapidjson/document.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "../support/background_process.h"
#include "../support/real_user.h"
#include "../support/sandbox_image.h"
#include "../support/test_support.h"

namespace {

using mojoup::test::WaitFor;

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using mojoup::test::BackgroundProcess;
using mojoup::test::RealUser;
using mojoup::test::Run;
using mojoup::test::Slurp;
using mojoup::test::UserNode;

std::size_t RunningRecords(const UserNode& node) {
  std::size_t running = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(node.state + "/sessions", ec)) {
    if (entry.path().extension() == ".json" &&
        Slurp(entry.path().string()).find("\"state\":\"running\"") != std::string::npos) {
      ++running;
    }
  }
  return running;
}

// stderr holds nothing but the decision line and the reaper's own notes.
void RequireNoErrorLines(const Run& run) {
  std::istringstream lines(run.result.err);
  for (std::string line; std::getline(lines, line);) {
    INFO(run.result.err);
    const bool expected = line.rfind("mojoup-node: Sandboxed: ", 0) == 0 ||
                          line.rfind("mojoup-node: cleaned up session ", 0) == 0;
    CHECK(expected);
  }
}

// `status --json` as the user: exit 0, no error lines; its sessions.
rapidjson::Document StatusJson(const UserNode& node) {
  Run status = node.Cli({"status", "--json"});
  INFO(status.result.err);
  REQUIRE(status.result.exit_code == 0);
  RequireNoErrorLines(status);
  rapidjson::Document doc;
  doc.Parse(status.result.out.c_str());
  REQUIRE(doc.IsObject());
  return doc;
}

std::vector<std::string> RunArgv(const UserNode& node, const std::vector<std::string>& command) {
  std::vector<std::string> argv = node.user.Prefix(node.env, node.repo);
  argv.insert(argv.end(), {node.user.bin + "/mojoup-node", "run", "--"});
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

TEST_CASE("user paths: run, status, stop, a SIGKILLed session and a second run leave nothing",
          "[user]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);

  Run first = node.Cli({"run", "--", "/bin/sh", "-c", "echo hi > file; cat file; pwd"});
  INFO(first.result.err);
  REQUIRE(first.result.exit_code == 0);
  REQUIRE(first.result.out == "hi\n" + node.repo + "\n");
  RequireNoErrorLines(first);
  struct stat info {};
  REQUIRE(stat((node.repo + "/file").c_str(), &info) == 0);
  REQUIRE(info.st_uid == user->uid);
  REQUIRE(node.Leftovers() == 0);

  // A running session: status lists it, stop ends it.
  auto running = std::make_unique<BackgroundProcess>(std::vector<std::string>{},
                                                     RunArgv(node, {"sleep", "600"}));
  REQUIRE(WaitFor([&] { return RunningRecords(node) == 1; }, std::chrono::seconds(60)));
  rapidjson::Document doc = StatusJson(node);
  REQUIRE(doc["sessions"].Size() == 1);
  const std::string id = doc["sessions"][0]["id"].GetString();
  REQUIRE(std::string(doc["sessions"][0]["state"].GetString()) == "running");
  REQUIRE(std::string(doc["sessions"][0]["user"].GetString()) == user->name);
  REQUIRE(doc["sessions"][0]["pid"].GetInt() == running->pid());
  Run stop = node.Cli({"stop", id});
  INFO(stop.result.err);
  REQUIRE(stop.result.exit_code == 0);
  REQUIRE(stop.result.out == "stopped " + id + "\n");
  int exit_status = running->Stop(std::chrono::seconds(20));
  REQUIRE(WIFEXITED(exit_status));
  REQUIRE(WEXITSTATUS(exit_status) == 128 + SIGTERM);
  REQUIRE(node.Leftovers() == 0);

  // SIGKILL mid-session, then status: cleaned up, said once.
  auto killed = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{},
      RunArgv(node, {"/bin/sh", "-c", "echo x > $HOME/in-home; sleep 600"}));
  REQUIRE(WaitFor([&] { return RunningRecords(node) == 1; }, std::chrono::seconds(60)));
  kill(killed->pid(), SIGKILL);
  killed->Stop();
  Run after = node.Cli({"status", "--json"});
  INFO(after.result.err);
  REQUIRE(after.result.exit_code == 0);
  RequireNoErrorLines(after);
  REQUIRE_THAT(after.result.err, Contains("cleaned up session"));
  doc.Parse(after.result.out.c_str());
  REQUIRE(doc["sessions"].Size() == 0);
  REQUIRE(node.Leftovers() == 0);

  Run second = node.Cli({"run", "--", "true"});
  INFO(second.result.err);
  REQUIRE(second.result.exit_code == 0);
  RequireNoErrorLines(second);
  REQUIRE_THAT(second.result.err, !Contains("cleaned up"));
  REQUIRE(node.Leftovers() == 0);
}

// The pids of `parent`'s children.
std::vector<pid_t> Children(pid_t parent) {
  std::vector<pid_t> children;
  std::istringstream list(
      Slurp("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) + "/children"));
  for (pid_t pid; list >> pid;) children.push_back(pid);
  return children;
}

char ProcessState(pid_t pid) {
  const std::string stat = Slurp("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

TEST_CASE("user paths: twenty sessions SIGKILLed, under a parent that reaps and one that does not",
          "[user][reap]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  constexpr std::size_t kSessions = 20;

  SECTION("the parent reaps them") {
    std::vector<std::unique_ptr<BackgroundProcess>> sessions;
    for (std::size_t i = 0; i < kSessions; ++i) {
      sessions.push_back(std::make_unique<BackgroundProcess>(std::vector<std::string>{},
                                                             RunArgv(node, {"sleep", "600"})));
    }
    REQUIRE(WaitFor([&] { return RunningRecords(node) == kSessions; }, std::chrono::seconds(120)));
    for (auto& session : sessions) kill(session->pid(), SIGKILL);
    for (auto& session : sessions) session->Stop();
  }
  SECTION("the parent never reaps them: they stay zombies") {
    std::vector<std::string> argv = user->Prefix(node.env, node.repo);
    argv.insert(argv.end(),
                {"/bin/sh", "-c",
                 "i=0; while [ $i -lt " + std::to_string(kSessions) + " ]; do " + user->bin +
                     "/mojoup-node run -- sleep 600 & i=$((i+1)); done; "
                     "exec sleep 600"});
    BackgroundProcess parent({}, argv);
    REQUIRE(WaitFor([&] { return RunningRecords(node) == kSessions; }, std::chrono::seconds(120)));
    std::vector<pid_t> runs = Children(parent.pid());
    REQUIRE(runs.size() == kSessions);
    for (pid_t run : runs) kill(run, SIGKILL);
    REQUIRE(WaitFor(
        [&] {
          return std::all_of(runs.begin(), runs.end(),
                             [](pid_t run) { return ProcessState(run) == 'Z'; });
        },
        std::chrono::seconds(10)));
    REQUIRE(StatusJson(node)["sessions"].Size() == 0);
    REQUIRE(node.Leftovers() == 0);
    // The zombies are still there: the reaper did not need them gone.
    REQUIRE(ProcessState(runs.front()) == 'Z');
    parent.Stop();
    return;
  }
  REQUIRE(StatusJson(node)["sessions"].Size() == 0);
  REQUIRE(node.Leftovers() == 0);
}

}  // namespace

namespace {

TEST_CASE("user paths: a commit in the session carries the user's git identity", "[user]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  // The user's own config, and the repository's, as git reads them on the host.
  user->Write(user->home + "/.gitconfig",
              "[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n"
              "[credential]\n\thelper = store\n");
  REQUIRE(node.Git({"config", "user.email", "ada@work.example"}).result.exit_code == 0);
  node.Git({"config", "--unset", "user.name"});  // the fixture's; the user's then applies
  Run commit = node.Sh(
      "echo x > from-session && git add from-session && git commit -qm 'from the session' && "
      "git log -1 --format='%an <%ae> | %cn <%ce>'; git config --get credential.helper || "
      "echo no-helper");
  std::remove((user->home + "/.gitconfig").c_str());
  INFO(commit.result.err);
  REQUIRE(commit.result.exit_code == 0);
  // The repository's email over the user's, the user's name; nothing else of
  // ~/.gitconfig (its credential helper) reaches the session.
  CHECK(commit.result.out ==
        "Ada Lovelace <ada@work.example> | Ada Lovelace <ada@work.example>\nno-helper\n");
  Run log = node.Git({"log", "-1", "--format=%s|%an"});
  CHECK(log.result.out == "from the session|Ada Lovelace\n");
  CHECK(node.Leftovers() == 0);
}

}  // namespace

namespace {

// The audit's lines, each checked to follow the last by one in seq; their
// events, and the last line.
std::vector<std::string> AuditEvents(const std::string& audit, rapidjson::Document& last) {
  std::istringstream lines(audit);
  std::uint64_t seq = 0;
  std::vector<std::string> events;
  for (std::string line; std::getline(lines, line);) {
    last.Parse(line.c_str());
    REQUIRE_FALSE(last.HasParseError());
    REQUIRE(last["seq"].GetUint64() == ++seq);
    events.emplace_back(last["event"].GetString());
  }
  return events;
}

TEST_CASE("user paths: a SIGKILLed session's audit ends with the cleanup's end line, no gap",
          "[user][reap][audit]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  auto killed = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{},
      RunArgv(node, {"/bin/sh", "-c", "curl -s -o /dev/null http://denied.test/; sleep 600"}));
  REQUIRE(WaitFor([&] { return RunningRecords(node) == 1; }, std::chrono::seconds(60)));
  const std::string id = StatusJson(node)["sessions"][0]["id"].GetString();
  // The proxy's refusal is in the audit before the owner is killed.
  REQUIRE(WaitFor(
      [&] {
        return node.Cli({"audit", id}).result.out.find("\"event\":\"egress\"") != std::string::npos;
      },
      std::chrono::seconds(60)));
  kill(killed->pid(), SIGKILL);
  killed->Stop();
  REQUIRE(StatusJson(node)["sessions"].Size() == 0);  // cleaned up

  Run audit = node.Cli({"audit", id});  // every line checked, seq from 1 up
  INFO(mojoup::test::Described(audit));
  REQUIRE(audit.result.exit_code == 0);
  rapidjson::Document last;
  const std::vector<std::string> events = AuditEvents(audit.result.out, last);
  REQUIRE(events.front() == "session.start");
  REQUIRE(std::count(events.begin(), events.end(), "egress") == 1);
  REQUIRE(std::count(events.begin(), events.end(), "session.end") == 1);
  REQUIRE(events.back() == "session.end");
  REQUIRE(std::string(last["reason"].GetString()) == "owner-gone");
  REQUIRE(std::string(last["session"].GetString()) == id);
  REQUIRE_FALSE(last.HasMember("exit_code"));
  // Ended once: the next cleanup adds nothing.
  REQUIRE(StatusJson(node)["sessions"].Size() == 0);
  REQUIRE(node.Cli({"audit", id}).result.out == audit.result.out);
  // The OCSF view ends it too: Process Activity, Terminate.
  Run ocsf = node.Cli({"audit", id, "--ocsf"});
  REQUIRE(ocsf.result.exit_code == 0);
  REQUIRE(std::count(ocsf.result.out.begin(), ocsf.result.out.end(), '\n') ==
          static_cast<std::ptrdiff_t>(events.size()));
  REQUIRE_THAT(ocsf.result.out, Contains("\"activity_name\":\"Terminate\""));
  REQUIRE(node.Leftovers() == 0);
}

}  // namespace

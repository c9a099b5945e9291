// Ask as a node operator meets it: a normal user's session on the real
// dockerd asks for hosts outside its list; the user approves and denies from
// another "window" (the CLI), and the agent's curl gets the answers.
#include <rapidjson/document.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "../support/background_process.h"
#include "../support/echo_server.h"
#include "../support/real_user.h"
#include "../support/test_support.h"

namespace {

using Catch::Matchers::Contains;
using mojoup::test::BackgroundProcess;
using mojoup::test::Described;
using mojoup::test::EchoServer;
using mojoup::test::RealUser;
using mojoup::test::Run;
using mojoup::test::UserNode;
using mojoup::test::WaitFor;
using std::chrono::seconds;

struct Asked {
  std::string session;
  std::string id;
};

// The pending approval for `host`, once the session has asked for it.
std::optional<Asked> PendingFor(const UserNode& node, const std::string& host) {
  std::optional<Asked> found;
  WaitFor(
      [&] {
        Run list = node.Cli({"approvals", "--json"});
        if (list.result.exit_code != 0) return false;
        rapidjson::Document doc;
        doc.Parse(list.result.out.c_str());
        if (doc.HasParseError() || !doc.IsObject()) return false;
        for (const auto& a : doc["approvals"].GetArray()) {
          if (a["host"].GetString() == host && std::string(a["state"].GetString()) == "pending") {
            found = Asked{a["session"].GetString(), a["id"].GetString()};
            return true;
          }
        }
        return false;
      },
      seconds(60));
  return found;
}

// The next line of the session's output that contains `marker`.
std::string LineWith(BackgroundProcess& run, const std::string& marker) {
  for (int i = 0; i < 50; ++i) {
    std::optional<std::string> line = run.ReadLine(std::chrono::seconds(60));
    if (!line) break;
    if (line->find(marker) != std::string::npos) return *line;
  }
  FAIL("no line with " << marker << "; stderr: " << run.Stderr());
  return "";
}

// The approval lines of an audit, "EVENT HOST [STATE]" each; every line's
// seq must follow the last.
std::vector<std::string> ApprovalLines(const std::string& audit) {
  std::istringstream lines(audit);
  std::uint64_t seq = 0;
  std::vector<std::string> approvals;
  for (std::string line; std::getline(lines, line);) {
    rapidjson::Document doc;
    doc.Parse(line.c_str());
    REQUIRE_FALSE(doc.HasParseError());
    REQUIRE(doc["seq"].GetUint64() == ++seq);
    const std::string event = doc["event"].GetString();
    if (event.rfind("approval.", 0) != 0) continue;
    std::string what = event + " " + doc["host"].GetString();
    if (doc.HasMember("state")) what += std::string(" ") + doc["state"].GetString();
    approvals.push_back(what);
  }
  return approvals;
}

// A second local user tries the session's control socket directly.
void OutsiderCannotDecide(const UserNode& node, const Asked& asked) {
  std::string why;
  const RealUser* outsider = RealUser::Outsider(why);
  if (outsider == nullptr) {
    WARN("no second local user: " << why);
    return;
  }
  const std::string socket = node.state + "/sessions/" + asked.session + "/control.sock";
  Run peek = outsider->As({"curl", "-s", "--max-time", "5", "--unix-socket", socket, "-X", "POST",
                           "-d", "{\"decision\":\"approve\"}",
                           "http://x/v1/approvals/" + asked.id});
  INFO(Described(peek));
  REQUIRE(peek.result.exit_code != 0);
}

// `policy explain --session` while the session runs: late.test's grant and
// no.test's denial, each with its source, not held.test's "once" grant (used
// up); late.test allowed by its grant. A session that is not there, or not
// the caller's: one sentence, exit 2.
void ExplainShowsAnswers(const UserNode& node, const Asked& late, const Asked& no,
                         const std::string& port) {
  const std::vector<std::string> explain{"policy",     "explain", "--session",
                                         late.session, "--host",  "late.test:" + port};
  Run text = node.Cli(explain);
  INFO(Described(text));
  REQUIRE(text.result.exit_code == 0);
  const std::string& out = text.result.out;
  const std::string grant =
      "session grant: approval " + late.id + ", approved by " + node.user.name + " at ";
  REQUIRE_THAT(out, Contains("session " + late.session +
                             " (its grants live in the session only):\n  allow late.test:" + port +
                             "  (" + grant));
  REQUIRE_THAT(out, Contains("  deny  no.test:" + port + "  (session denial: approval " + no.id +
                             ", denied by " + node.user.name + " at "));
  REQUIRE_THAT(out, Contains(": not for this project)\n"));
  REQUIRE_THAT(out, !Contains("allow held.test"));
  REQUIRE_THAT(out, Contains("\nlate.test:" + port + ": allowed, by " + grant));
  std::vector<std::string> as_json = explain;
  as_json.push_back("--json");
  Run json = node.Cli(as_json);
  INFO(Described(json));
  REQUIRE(json.result.exit_code == 0);
  rapidjson::Document doc;
  doc.Parse(json.result.out.c_str());
  REQUIRE(doc.IsObject());
  REQUIRE(std::string(doc["session"]["id"].GetString()) == late.session);
  REQUIRE(doc["session"]["grants"].Size() == 1);
  REQUIRE(std::string(doc["session"]["grants"][0]["approval"].GetString()) == late.id);
  REQUIRE(std::string(doc["session"]["grants"][0]["scope"].GetString()) == "session");
  REQUIRE(doc["session"]["denials"].Size() == 1);
  REQUIRE(doc["host_check"]["allowed"].GetBool());
  REQUIRE(std::string(doc["host_check"]["approval"].GetString()) == late.id);
  Run none = node.Cli({"policy", "explain", "--session", "0000000000000000"});
  REQUIRE(none.result.exit_code == 2);
  REQUIRE_THAT(none.result.err, Contains("no session 0000000000000000 on this node"));
  std::string why;
  const RealUser* second = RealUser::Second(why);
  if (second == nullptr) {
    WARN("no second local user: " << why);
    return;
  }
  // Another user, pointed at this user's state directory: not theirs.
  Run other =
      second->As({second->bin + "/mojoup-node", "policy", "explain", "--session", late.session},
                 {"MOJOUP_STATE_DIR=" + node.state});
  INFO(Described(other));
  REQUIRE(other.result.exit_code == 2);
  REQUIRE(std::count(other.result.err.begin(), other.result.err.end(), '\n') == 1);
}

// `mojoup-node run` as the user, its sandbox asking for four hosts, all at
// the upstream's port on this host: held.test (approved while held),
// no.test (denied), blocked.test (a rule denies it), late.test (left to the
// hold's end, then retried once the file "go" appears in the repository).
std::vector<std::string> AskingRun(const UserNode& node, const std::string& port) {
  auto url = [&](const std::string& host, const std::string& path) {
    return "http://" + host + ":" + port + path;
  };
  std::vector<std::string> argv = node.user.Prefix(node.env, node.repo);
  argv.insert(argv.end(), {node.user.bin + "/mojoup-node", "run"});
  for (const char* host : {"held.test", "no.test", "blocked.test", "late.test"}) {
    argv.insert(argv.end(), {"--resolve", std::string(host) + ":" + port + ":127.0.0.1"});
  }
  const std::string script =
      "curl -s -o /dev/null -w 'held:%{http_code}\\n' " + url("held.test", "/one") +
      "; curl -s -w '\\nno:%{http_code}\\n' " + url("no.test", "/two") +
      "; curl -s -o /dev/null -w 'blocked:%{http_code}\\n' " + url("blocked.test", "/") +
      "; curl -s -w '\\nlate:%{http_code}\\n' " + url("late.test", "/three?token=x") +
      "; while [ ! -e go ]; do sleep 0.1; done"
      "; curl -s -o /dev/null -w 'retry:%{http_code}\\n' " +
      url("late.test", "/three");
  argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
  return argv;
}

}  // namespace

TEST_CASE("ask: held requests are approved, denied or retried as the operator answers",
          "[ask][user]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"node.proxy.ask", "on"}, {"node.proxy.ask_hold", "5"}}) {
    Run set = node.Cli({"config", "set", key, value});
    INFO(Described(set));
    REQUIRE(set.result.exit_code == 0);
  }
  node.Policy(R"({"agents": {"network": {"ask": true, "deny": [{"host": "blocked.test"}]}}})");
  EchoServer upstream;
  const std::string port = std::to_string(upstream.port());
  BackgroundProcess run({}, AskingRun(node, port));

  // Approved while held: the request goes on.
  std::optional<Asked> held = PendingFor(node, "held.test");
  REQUIRE(held);
  Run approve = node.Cli({"approve", held->session, held->id});
  INFO(Described(approve));
  REQUIRE(approve.result.exit_code == 0);
  REQUIRE(approve.result.out == "approved approval " + held->id + " of session " + held->session +
                                    ": held.test:" + port + " (once)\n");
  REQUIRE(LineWith(run, "held:") == "held:200");

  // Denied: the agent gets the denial and the operator's reason.
  std::optional<Asked> no = PendingFor(node, "no.test");
  REQUIRE(no);
  Run deny = node.Cli({"deny", no->session, no->id, "--reason", "not for this project"});
  INFO(Described(deny));
  REQUIRE(deny.result.exit_code == 0);
  const std::string denied = LineWith(run, "approval-denied");
  REQUIRE_THAT(denied, Contains("not for this project"));
  REQUIRE(LineWith(run, "no:") == "no:403");

  // A host a rule denies is never asked.
  REQUIRE(LineWith(run, "blocked:") == "blocked:403");

  // Left to the hold's end: pending, named; approved after, the retry passes.
  const std::string pending = LineWith(run, "approval-pending");
  REQUIRE_THAT(pending, Contains("Retry this same request later"));
  REQUIRE(LineWith(run, "late:") == "late:403");
  std::optional<Asked> late = PendingFor(node, "late.test");
  REQUIRE(late);
  REQUIRE_THAT(pending, Contains("(approval " + late->id + ")"));

  // Another local user can neither see nor decide it.
  OutsiderCannotDecide(node, *late);
  Run listed = node.Cli({"approvals", late->session});
  REQUIRE_THAT(listed.result.out, Contains("pending"));
  REQUIRE(node.Cli({"approve", late->session, late->id, "--scope", "session"}).result.exit_code ==
          0);
  ExplainShowsAnswers(node, *late, *no, port);
  // What to commit to keep the grants: both approved hosts, not the denied.
  Run proposed = node.Cli({"approvals", late->session, "--propose"});
  INFO(Described(proposed));
  REQUIRE_THAT(proposed.result.out, Contains("\"host\": \"held.test\""));
  REQUIRE_THAT(proposed.result.out, Contains("\"host\": \"late.test\""));
  REQUIRE_THAT(proposed.result.out, !Contains("no.test"));
  user->Write(node.repo + "/go", "");
  REQUIRE(LineWith(run, "retry:") == "retry:200");

  std::optional<int> status = run.Wait(seconds(60));
  REQUIRE(status);
  const std::string err = run.Stderr();
  INFO(err);
  REQUIRE(WIFEXITED(*status));
  REQUIRE(WEXITSTATUS(*status) == 0);
  REQUIRE_THAT(err, Contains("the agent asks to reach held.test:" + port + " (approval " +
                             held->id + "); answer with `mojoup-node approve " + held->session));
  std::vector<std::string> targets;
  for (const auto& seen : upstream.seen()) targets.push_back(seen.target);
  REQUIRE(targets == std::vector<std::string>{"/one", "/three"});
  // The session ended: its approvals went with it.
  Run after = node.Cli({"approve", late->session, late->id});
  REQUIRE(after.result.exit_code == 1);
  REQUIRE_THAT(after.result.err, Contains("no session " + late->session));
  REQUIRE(node.Leftovers() == 0);

  // The session's audit holds every approval, asked and decided, with no
  // gap in seq.
  Run audit = node.Cli({"audit", late->session});
  INFO(Described(audit));
  REQUIRE(audit.result.exit_code == 0);
  REQUIRE(ApprovalLines(audit.result.out) ==
          std::vector<std::string>{
              "approval.request held.test", "approval.decision held.test approved",
              "approval.request no.test", "approval.decision no.test denied",
              "approval.request late.test", "approval.decision late.test approved"});
}

// Ask: the approvals registry on its own (with a clock of the test's), and
// the proxy holding requests to a destination no rule decided while the
// operator answers on the control socket.
#include <arpa/inet.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <future>
#include <sstream>

#include "../support/echo_server.h"
#include "../support/proxy_inputs.h"
#include "../support/raw_socket.h"
#include "../support/test_support.h"
#include "mojoup/credproxy/approvals.h"
#include "mojoup/credproxy/audit.h"
#include "mojoup/credproxy/proxy.h"

using namespace mojoup::credproxy;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using mojoup::test::TempDir;
using Clock = std::chrono::system_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

struct TestClock {
  Clock::time_point now = Clock::time_point(seconds(1'800'000'000));
  std::function<Clock::time_point()> Fn() {
    return [this] { return now; };
  }
};

Approvals::Decision Approve(ApprovalScope scope = ApprovalScope::kOnce) {
  return {true, scope, "alice", ""};
}

Approvals::Decision Deny(std::string reason) {
  return {false, ApprovalScope::kOnce, "alice", reason};
}

std::string MyName() {
  passwd* entry = getpwuid(geteuid());
  return entry != nullptr ? entry->pw_name : "uid " + std::to_string(geteuid());
}

}  // namespace

TEST_CASE("approvals are asked once per host and port, and capped", "[ask]") {
  TestClock clock;
  std::vector<std::string> changes;
  Approvals approvals(
      {.session = "s1", .max_pending = 2, .now = clock.Fn(), .on_change = [&](const Approval& a) {
         changes.push_back(a.id + " " + std::string(ApprovalStateName(a.state)));
       }});
  auto first = approvals.Ask("pypi.org", 443, "CONNECT");
  REQUIRE(first.outcome == Approvals::Asked::Outcome::kPending);
  REQUIRE(first.approval.id == "1");
  REQUIRE(first.approval.expires == clock.now + std::chrono::hours(1));
  auto again = approvals.Ask("pypi.org", 443, "CONNECT");
  REQUIRE(again.outcome == Approvals::Asked::Outcome::kPending);
  REQUIRE(again.approval.id == "1");
  REQUIRE(approvals.Ask("pypi.org", 80, "GET").approval.id == "2");
  REQUIRE(approvals.Ask("example.org", 443, "CONNECT").outcome == Approvals::Asked::Outcome::kFull);
  REQUIRE(approvals.List().size() == 2);
  REQUIRE(changes == std::vector<std::string>{"1 pending", "2 pending"});
}

TEST_CASE("a once grant lets one request through, a session grant every one", "[ask]") {
  Approvals approvals({.session = "s1"});
  const std::string once = approvals.Ask("a.example", 443, "CONNECT").approval.id;
  const std::string session = approvals.Ask("b.example", 443, "CONNECT").approval.id;
  REQUIRE(approvals.Decide(once, Approve()).ok());
  REQUIRE(approvals.Decide(session, Approve(ApprovalScope::kSession)).ok());
  REQUIRE(approvals.Grants() ==
          std::vector<std::string>{"allow a.example:443 (approval 1 by alice, scope once)",
                                   "allow b.example:443 (approval 2 by alice, scope session)"});

  auto used = approvals.Ask("a.example", 443, "CONNECT");
  REQUIRE(used.outcome == Approvals::Asked::Outcome::kGranted);
  REQUIRE(used.approval.id == once);
  // Used up: the next request asks anew.
  auto next = approvals.Ask("a.example", 443, "CONNECT");
  REQUIRE(next.outcome == Approvals::Asked::Outcome::kPending);
  REQUIRE(next.approval.id == "3");
  for (int i = 0; i < 3; ++i) {
    REQUIRE(approvals.Ask("b.example", 443, "CONNECT").outcome ==
            Approvals::Asked::Outcome::kGranted);
  }
  REQUIRE(approvals.Grants().size() == 1);
}

TEST_CASE("a once grant's JSON says when it is used up, and only then", "[ask]") {
  Approvals approvals({.session = "s1"});
  const std::string id = approvals.Ask("a.example", 443, "CONNECT").approval.id;
  REQUIRE(approvals.Decide(id, Approve()).ok());
  const std::string fresh = ApprovalJson(InfoOf(approvals.List()[0]));
  REQUIRE_THAT(fresh, !Contains("\"used\""));
  REQUIRE(approvals.Ask("a.example", 443, "CONNECT").outcome ==
          Approvals::Asked::Outcome::kGranted);
  const std::string used = ApprovalJson(InfoOf(approvals.List()[0]));
  REQUIRE_THAT(used, Contains("\"used\":true"));
  auto read = ParseApprovalJson(used);
  REQUIRE(read.ok());
  REQUIRE(read->used);
  REQUIRE_FALSE(ParseApprovalJson(fresh)->used);
}

TEST_CASE("a denial stands, and a decided approval cannot be decided again", "[ask]") {
  Approvals approvals({.session = "s1"});
  const std::string id = approvals.Ask("c.example", 443, "CONNECT").approval.id;
  auto denied = approvals.Decide(id, Deny("not on this project"));
  REQUIRE(denied.ok());
  REQUIRE(denied->state == ApprovalState::kDenied);
  auto asked = approvals.Ask("c.example", 443, "CONNECT");
  REQUIRE(asked.outcome == Approvals::Asked::Outcome::kDenied);
  REQUIRE(asked.approval.reason == "not on this project");
  auto twice = approvals.Decide(id, Approve());
  REQUIRE(twice.status().code() == absl::StatusCode::kFailedPrecondition);
  REQUIRE(mojoup::test::Message(twice.status()) ==
          "approval 1 for c.example:443 was already denied by alice");
  REQUIRE(approvals.Decide("9", Approve()).status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("where a grant cannot be for one request, once is refused and nothing is decided",
          "[ask]") {
  Approvals approvals({.session = "s1", .once_refused = "approve with --scope session"});
  const std::string id = approvals.Ask("d.example", 443, "CONNECT").approval.id;
  auto once = approvals.Decide(id, Approve());
  REQUIRE(once.status().code() == absl::StatusCode::kInvalidArgument);
  REQUIRE(mojoup::test::Message(once.status()) ==
          "approval 1 for d.example:443 is still pending: approve with --scope session");
  REQUIRE(approvals.List().front().state == ApprovalState::kPending);
  auto approved = approvals.Decide(id, Approve(ApprovalScope::kSession));
  REQUIRE(approved.ok());
  REQUIRE(approved->scope == ApprovalScope::kSession);
  // A denial needs no scope.
  const std::string other = approvals.Ask("e.example", 443, "CONNECT").approval.id;
  REQUIRE(approvals.Decide(other, Deny("no")).ok());
}

TEST_CASE("a pending approval expires, a timeout never grants, and the session's end expires all",
          "[ask]") {
  TestClock clock;
  Approvals approvals({.session = "s1", .expiry = seconds(60), .now = clock.Fn()});
  const std::string id = approvals.Ask("d.example", 443, "CONNECT").approval.id;
  clock.now += seconds(61);
  auto late = approvals.Decide(id, Approve());
  REQUIRE(late.status().code() == absl::StatusCode::kFailedPrecondition);
  REQUIRE_THAT(mojoup::test::Message(late.status()),
               StartsWith("approval 1 for d.example:443 expired at "));
  REQUIRE(approvals.List()[0].state == ApprovalState::kExpired);
  REQUIRE(approvals.List()[0].by == "timeout");
  // The next request asks again: a new approval, pending.
  auto asked = approvals.Ask("d.example", 443, "CONNECT");
  REQUIRE(asked.outcome == Approvals::Asked::Outcome::kPending);
  REQUIRE(asked.approval.id == "2");
  CHECK(approvals.Count().pending == 1);
  approvals.EndSession();
  REQUIRE(approvals.List()[1].state == ApprovalState::kExpired);
  REQUIRE(approvals.List()[1].by == "session end");
  CHECK(approvals.Count().pending == 0);
  CHECK(approvals.Count().expired == 2);
}

TEST_CASE("the approvals are counted by state, a lapsed one as expired", "[ask]") {
  TestClock clock;
  Approvals approvals({.session = "s1", .expiry = seconds(60), .now = clock.Fn()});
  for (const char* host : {"a.example", "b.example", "c.example", "d.example"}) {
    approvals.Ask(host, 443, "CONNECT");
  }
  REQUIRE(approvals.Decide("1", Approve()).ok());
  REQUIRE(approvals.Decide("2", Deny("no")).ok());
  Approvals::Counts counts = approvals.Count();
  CHECK(counts.pending == 2);
  CHECK(counts.approved == 1);
  CHECK(counts.denied == 1);
  CHECK(counts.expired == 0);
  // Counting expires what lapsed, and says so to whoever listens.
  clock.now += seconds(61);
  counts = approvals.Count();
  CHECK(counts.pending == 0);
  CHECK(counts.expired == 2);
  CHECK(approvals.List()[3].by == "timeout");
}

TEST_CASE("a change wakes what waits for it, once", "[ask]") {
  Approvals approvals({.session = "s1"});
  int woken = 0;
  const std::uint64_t before = approvals.version();
  approvals.OnNextChange([&] { ++woken; });
  const std::uint64_t cancelled = approvals.OnNextChange([&] { woken += 100; });
  approvals.CancelWake(cancelled);
  approvals.Ask("e.example", 443, "CONNECT");
  approvals.Ask("e.example", 443, "CONNECT");  // no change: deduplicated
  REQUIRE(woken == 1);
  REQUIRE(approvals.version() == before + 1);
}

TEST_CASE("the approvals' JSON reads back, and odd JSON is refused", "[ask]") {
  TestClock clock;
  Approvals approvals({.session = "0123456789abcdef", .now = clock.Fn()});
  const std::string id = approvals.Ask("f.example", 8443, "GET").approval.id;
  REQUIRE(approvals.Decide(id, Approve(ApprovalScope::kSession)).ok());
  ApprovalList list{approvals.version(), {}};
  for (const Approval& a : approvals.List()) list.approvals.push_back(InfoOf(a));
  const std::string text = ApprovalsJson(list);
  REQUIRE(
      text ==
      R"({"schema":"mojoup.approvals/v1","version":2,"approvals":[{"session":"0123456789abcdef",)"
      R"("id":"1","host":"f.example","port":8443,"method":"GET","state":"approved",)"
      R"("scope":"session","by":"alice","requested":"2027-01-15T08:00:00Z",)"
      R"("expires":"2027-01-15T09:00:00Z","decided":"2027-01-15T08:00:00Z"}]})");
  auto back = ParseApprovalsJson(text);
  REQUIRE(back.ok());
  REQUIRE(back->approvals.size() == 1);
  REQUIRE(back->approvals[0].scope == "session");
  REQUIRE(back->approvals[0].port == 8443);
  auto bad =
      ParseApprovalsJson(R"({"schema":"mojoup.approvals/v1","version":1,"approvals":[{"id":1}]})");
  REQUIRE_FALSE(bad.ok());
  REQUIRE_FALSE(ParseApprovalsJson(R"({"schema":"other/v1","version":1,"approvals":[]})").ok());
}

TEST_CASE("a decision reads back, and one that is not approve or deny, once or session is refused",
          "[ask]") {
  const std::string text = ApprovalDecisionJson({true, ApprovalScope::kSession, "", "bob"});
  REQUIRE(text == R"({"decision":"approve","scope":"session","on_behalf_of":"bob"})");
  auto back = ParseApprovalDecision(text);
  REQUIRE(back.ok());
  CHECK(back->approve);
  CHECK(back->scope == ApprovalScope::kSession);
  CHECK(back->on_behalf_of == "bob");
  auto deny = ParseApprovalDecision(R"({"decision":"deny","reason":"not this one"})");
  REQUIRE(deny.ok());
  CHECK_FALSE(deny->approve);
  CHECK(deny->scope == ApprovalScope::kOnce);
  CHECK(deny->reason == "not this one");
  auto refused = [](std::string_view body) {
    auto parsed = ParseApprovalDecision(body);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument);
    return std::string(parsed.status().message());
  };
  CHECK(refused(R"({"decision":"maybe"})") ==
        "the decision must be approve or deny, not \"maybe\"");
  CHECK(refused(R"({"decision":"approve","scope":"forever"})") ==
        "the scope must be once or session, not \"forever\"");
  CHECK(refused(R"({"decision":"deny","reason":")" + std::string(501, 'x') + R"("})") ==
        "the reason is longer than 500 bytes");
  CHECK_THAT(refused(R"({"decision":"approve","colour":"red"})"), Contains("colour"));
  CHECK_THAT(refused(R"({"scope":"once"})"), Contains("decision"));
}

TEST_CASE("what was approved is proposed as a policy's allow rules, hosts merged", "[ask]") {
  auto info = [](std::string host, std::uint16_t port, std::string state) {
    ApprovalInfo a;
    a.host = std::move(host);
    a.port = port;
    a.state = std::move(state);
    return a;
  };
  REQUIRE(ProposedPolicy({info("pypi.org", 443, "approved"), info("evil.test", 443, "denied"),
                          info("files.example", 443, "pending"), info("pypi.org", 80, "approved"),
                          info("pypi.org", 443, "approved")}) ==
          R"({
  "agents": {
    "network": {
      "allow": [
        {
          "host": "pypi.org",
          "ports": [
            443,
            80
          ]
        }
      ]
    }
  }
})");
  REQUIRE(ProposedPolicy({}) == R"({
  "agents": {
    "network": {
      "allow": []
    }
  }
})");
}

namespace {

// A proxy whose rules allow nothing but deny deny.test, asking for the rest,
// with echo.test pinned to the echo server.
struct AskingProxy {
  explicit AskingProxy(milliseconds hold, std::size_t max_pending = 8) {
    ProxyOptions options;
    options.listen = "127.0.0.1:0";
    options.ca_dir = dir / "ca";
    options.rules = mojoup::test::Rules(
        R"({"agents": {"network": {"allow": [], "deny": [{"host": "deny.test"}]}}})");
    options.pins[Echo()] = "127.0.0.1";
    options.pins["deny.test:" + std::to_string(echo.port())] = "127.0.0.1";
    options.pins["other.test:" + std::to_string(echo.port())] = "127.0.0.1";
    approvals = std::make_shared<Approvals>(ApprovalsOptions{
        .session = "s1", .hold = hold, .max_pending = max_pending, .now = clock.Fn()});
    options.approvals = approvals;
    options.control_socket = dir / "control.sock";
    auto log = AuditLog::Open({.path = dir / "audit.jsonl", .session = "s1"});
    REQUIRE(log.ok());
    audit = *log;
    options.audit = audit;
    auto started = Proxy::Start(std::move(options));
    REQUIRE(started.ok());
    proxy = *std::move(started);
  }
  std::string Echo() const { return "echo.test:" + std::to_string(echo.port()); }
  std::string Control() const { return dir / "control.sock"; }

  // An absolute-form GET through the proxy; the whole answer.
  std::string Get(const std::string& authority) const {
    int fd = mojoup::test::Dial(proxy->tcp_address(), seconds(30));
    mojoup::test::Send(fd, "GET http://" + authority + "/x?q=1 HTTP/1.1\r\nHost: " + authority +
                               "\r\nConnection: close\r\n\r\n");
    return mojoup::test::ReadToClose(fd);
  }

  // Waits (long polls) until an approval is pending; its id.
  std::string AwaitPending() const {
    std::uint64_t after = 0;
    for (int round = 0; round < 20; ++round) {
      auto list = FetchApprovals(Control(), after, milliseconds(5000));
      REQUIRE(list.ok());
      for (const ApprovalInfo& a : list->approvals) {
        if (a.state == "pending") return a.id;
      }
      after = list->version;
    }
    FAIL("no approval was asked for");
    return "";
  }

  TempDir dir;
  TestClock clock;
  mojoup::test::EchoServer echo;
  std::shared_ptr<Approvals> approvals;
  std::shared_ptr<AuditLog> audit;
  std::unique_ptr<Proxy> proxy;

  // The audit's egress lines so far: "DECISION REASON APPROVAL SOURCE".
  std::vector<std::string> Egress() const {
    std::vector<std::string> out;
    std::istringstream lines(mojoup::test::Slurp(dir / "audit.jsonl"));
    for (std::string line; std::getline(lines, line);) {
      auto event = ParseAuditLine(line);
      REQUIRE(event.ok());
      if (event->event != "egress") continue;
      out.push_back(event->decision + " " + event->reason + " " + event->approval + " " +
                    event->source);
    }
    return out;
  }
};

}  // namespace

TEST_CASE("approved during the hold, the held request goes on", "[ask][proxy]") {
  AskingProxy ask(seconds(30));
  auto answer = std::async(std::launch::async, [&] { return ask.Get(ask.Echo()); });
  const std::string id = ask.AwaitPending();
  auto decided = SendDecision(ask.Control(), id, true, ApprovalScope::kOnce, "");
  REQUIRE(decided.ok());
  REQUIRE(decided->state == "approved");
  REQUIRE(decided->by == MyName());
  REQUIRE_THAT(answer.get(), StartsWith("HTTP/1.1 200"));
  REQUIRE(ask.echo.seen().size() == 1);
  // Once: the next request asks again.
  auto second = std::async(std::launch::async, [&] { return ask.Get(ask.Echo()); });
  const std::string next = ask.AwaitPending();
  REQUIRE(next != id);
  REQUIRE(SendDecision(ask.Control(), next, false, ApprovalScope::kOnce, "enough").ok());
  const std::string refused = second.get();
  REQUIRE_THAT(refused, StartsWith("HTTP/1.1 403"));
  REQUIRE_THAT(refused, Contains("X-Mojoup-Proxy-Error: approval-denied"));
  REQUIRE_THAT(refused, Contains(": enough"));
  REQUIRE(ask.echo.seen().size() == 1);
}

TEST_CASE("left undecided, the agent is told to retry, and its retry passes once approved",
          "[ask][proxy]") {
  AskingProxy ask(milliseconds(200));
  const std::string pending = ask.Get(ask.Echo());
  REQUIRE_THAT(pending, StartsWith("HTTP/1.1 403"));
  REQUIRE_THAT(pending, Contains("X-Mojoup-Proxy-Error: approval-pending"));
  REQUIRE_THAT(pending, Contains("(approval 1)"));
  REQUIRE_THAT(pending, Contains("Retry this same request later"));
  auto list = FetchApprovals(ask.Control());
  REQUIRE(list.ok());
  REQUIRE(list->approvals.size() == 1);
  REQUIRE(list->approvals[0].state == "pending");
  REQUIRE(list->approvals[0].method == "GET");
  REQUIRE(SendDecision(ask.Control(), "1", true, ApprovalScope::kSession, "").ok());
  REQUIRE_THAT(ask.Get(ask.Echo()), StartsWith("HTTP/1.1 200"));
  REQUIRE_THAT(ask.Get(ask.Echo()), StartsWith("HTTP/1.1 200"));
  REQUIRE(ask.echo.seen().size() == 2);
  // The audit names the approval that decided each request.
  REQUIRE(ask.Egress() == std::vector<std::string>{"deny approval-pending 1 approval 1",
                                                   "allow  1 approval 1", "allow  1 approval 1"});
  // The audit counts the answer "pending" among the denials, and apart.
  const AuditCounts counts = ask.audit->counts();
  CHECK(counts.allowed == 2);
  CHECK(counts.denied == 1);
  CHECK(counts.asked == 1);
}

TEST_CASE("an expired approval is refused with a clear error, and the next request asks again",
          "[ask][proxy]") {
  AskingProxy ask(milliseconds(100));
  REQUIRE_THAT(ask.Get(ask.Echo()), Contains("approval-pending"));
  ask.clock.now += std::chrono::hours(2);
  auto late = SendDecision(ask.Control(), "1", true, ApprovalScope::kOnce, "");
  REQUIRE(late.status().code() == absl::StatusCode::kFailedPrecondition);
  REQUIRE_THAT(mojoup::test::Message(late.status()), Contains("expired at"));
  REQUIRE_THAT(ask.Get(ask.Echo()), Contains("(approval 2)"));
}

TEST_CASE("a denied host and a blocked address are never asked", "[ask][proxy]") {
  AskingProxy ask(seconds(30));
  // Denied on ports 443 and 80: on this port too, no one is asked.
  const std::string denied = ask.Get("deny.test:" + std::to_string(ask.echo.port()));
  REQUIRE_THAT(denied, Contains("X-Mojoup-Proxy-Error: blocked-by-policy"));
  REQUIRE_THAT(denied, Contains("deny deny.test:443,80 (repo: p.json)"));
  const std::string blocked = ask.Get("10.0.0.7:80");
  REQUIRE_THAT(blocked, Contains("X-Mojoup-Proxy-Error: blocked-address"));
  REQUIRE(ask.approvals->List().empty());
}

TEST_CASE("past the pending cap a request is refused without asking", "[ask][proxy]") {
  AskingProxy ask(milliseconds(50), 1);
  REQUIRE_THAT(ask.Get(ask.Echo()), Contains("approval-pending"));
  const std::string full = ask.Get("other.test:" + std::to_string(ask.echo.port()));
  REQUIRE_THAT(full, Contains("X-Mojoup-Proxy-Error: approval-limit"));
  REQUIRE_THAT(full, Contains("waiting for approval are at their limit (1)"));
  REQUIRE(ask.approvals->List().size() == 1);
}

TEST_CASE("the control socket answers its user and root only, and refuses bad calls",
          "[ask][proxy]") {
  AskingProxy ask(seconds(30));
  auto bad_id = SendDecision(ask.Control(), "../1", true, ApprovalScope::kOnce, "");
  REQUIRE(bad_id.status().code() == absl::StatusCode::kInvalidArgument);
  auto unknown = SendDecision(ask.Control(), "7", true, ApprovalScope::kOnce, "");
  REQUIRE(unknown.status().code() == absl::StatusCode::kNotFound);
  REQUIRE(mojoup::test::Message(unknown.status()) == "session s1 has no approval 7");
  if (geteuid() != 0) {
    WARN("not root: another user's refusal is checked where the tests run as root (CI)");
    return;
  }
  // Another user, with the socket's directory opened to it.
  REQUIRE(chmod(ask.dir.path().c_str(), 0755) == 0);
  REQUIRE(chmod(ask.Control().c_str(), 0666) == 0);
  pid_t child = fork();
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    auto list = FetchApprovals(ask.Control());
    _exit(list.status().code() == absl::StatusCode::kPermissionDenied ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}

TEST_CASE("a control socket another user serves is refused before anything is sent",
          "[ask][proxy]") {
  AskingProxy ask(seconds(30));
  const std::string id = ask.approvals->Ask("pypi.org", 443, "CONNECT").approval.id;
  // A link where the caller expects its own session's socket, to one that
  // another user's session serves (here: one this process serves, while the
  // caller requires the other user's uid).
  TempDir elsewhere;
  const std::string link = elsewhere / "control.sock";
  REQUIRE(symlink(ask.Control().c_str(), link.c_str()) == 0);
  const uid_t other = geteuid() == 65534 ? 65533 : 65534;
  auto decided =
      SendDecision(link, id, true, ApprovalScope::kSession, "", "mallory", std::optional(other));
  REQUIRE(decided.status().code() == absl::StatusCode::kPermissionDenied);
  passwd* entry = getpwuid(other);
  const std::string name = entry != nullptr ? entry->pw_name : "uid " + std::to_string(other);
  REQUIRE(mojoup::test::Message(decided.status()) ==
          "the control socket " + link + " is not served by " + name + "'s session");
  auto listed = FetchApprovals(link, std::nullopt, {}, other);
  REQUIRE(listed.status().code() == absl::StatusCode::kPermissionDenied);
  // Nothing was decided, and the socket's own user is still answered.
  REQUIRE(ask.approvals->List().at(0).state == ApprovalState::kPending);
  REQUIRE(ask.approvals->Grants().empty());
  auto own = SendDecision(link, id, false, ApprovalScope::kOnce, "no", "", geteuid());
  REQUIRE(own.ok());
  REQUIRE(own->state == "denied");
}

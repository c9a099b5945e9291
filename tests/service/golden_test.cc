// The service's wire formats, byte for byte: each message the service, its
// workers and its clients write, encoded from fixed values and compared with
// the files under tests/golden/service/, which hold the bytes the service
// wrote before its messages had codecs. The schemas are versioned: a change
// here is a new schema, never an edit of a golden file.
#include "../support/golden.h"

#include <catch2/catch.hpp>
#include <string>

#include "protocol/protocol.h"

using namespace mojoup;
using namespace mojoup::service;

namespace {

// The bytes of tests/golden/service/NAME.
std::string Golden(const std::string& name) {
  return mojoup::testing::ReadGolden("service/" + name);
}

WorkerStart Start() {
  WorkerStart start;
  RunRequest& r = start.request;
  r.workdir = "/home/me/src/app \"quoted\"";
  r.tool = "claude-code";
  r.command = {"sh", "-c", "echo \xc3\xa9t\xc3\xa9 \t\x01 done"};
  r.credentials = {"ANTHROPIC_API_KEY=api.anthropic.com"};
  r.resolve = {"api.anthropic.com:443:127.0.0.1"};
  r.upstream_ca = "/etc/ssl/extra.pem";
  r.audit_file = "";
  r.accept_policy = true;
  r.terminal = true;
  r.terminal_input = false;
  r.environment = {{"TERM", "xterm-256color"}, {"COLORTERM", "truecolor"}};
  r.session_id = "0123456789abcdef";
  start.secrets = {{"ANTHROPIC_API_KEY", "sk-ant-real"}};
  start.options.detach = true;
  start.options.rows = 50;
  start.options.columns = 132;
  start.config_path = "/etc/mojoup/node.toml";
  start.config_named = true;
  return start;
}

ServiceSession Session(std::optional<int> exit_code) {
  ServiceSession s;
  s.id = "0123456789abcdef";
  s.user = "alice";
  s.uid = 1001;
  s.repo = "/home/alice/src/app";
  s.tool = "";
  s.runtime = "native";
  s.state = exit_code ? "ended" : "running";
  s.started_at = "2026-12-04T10:00:00Z";
  s.terminal = false;
  s.detached = true;
  s.exit_code = exit_code;
  return s;
}

}  // namespace

TEST_CASE("the start request a client sends is byte for byte mojoup.service.start/v1",
          "[service][golden]") {
  const WorkerStart start = Start();
  CHECK_GOLDEN("service/start_client.json",
               StartRequestJson(start.request, start.options, start.secrets));
  CHECK_GOLDEN("service/start_worker.json", WorkerStartJson(start));
}

TEST_CASE("a start request read back is the one written", "[service][golden]") {
  auto read = ParseStartRequest(Golden("start_worker.json"));
  REQUIRE(read.ok());
  CHECK_GOLDEN("service/start_worker.json", WorkerStartJson(*read));
}

TEST_CASE("a session is byte for byte mojoup.service.session/v1", "[service][golden]") {
  CHECK_GOLDEN("service/session_running.json", SessionJson(Session(std::nullopt)));
  CHECK_GOLDEN("service/session_ended.json", SessionJson(Session(3)));
  auto read = ParseSession(Golden("session_ended.json"));
  REQUIRE(read.ok());
  CHECK_GOLDEN("service/session_ended.json", SessionJson(*read));
}

TEST_CASE("an error is byte for byte mojoup.service.error/v1", "[service][golden]") {
  CHECK_GOLDEN("service/error.json",
               ErrorJson("no session 0123456789abcdef of yours", Reason::kNotFound));
}

TEST_CASE("a worker's entry is byte for byte mojoup.service.worker/v1", "[service][golden]") {
  WorkerEntry entry;
  entry.id = "0123456789abcdef";
  entry.uid = 1001;
  entry.user = "alice";
  entry.pid = 4242;
  entry.pid_start = 123456789012ULL;
  entry.repo = "/home/alice/src/app";
  entry.tool = "codex";
  entry.started_at = "2026-12-04T10:00:00Z";
  entry.terminal = true;
  entry.detached = false;
  CHECK_GOLDEN("service/worker_entry.json", WorkerEntryJson(entry));
  auto read = ParseWorkerEntry(Golden("worker_entry.json"));
  REQUIRE(read.ok());
  CHECK_GOLDEN("service/worker_entry.json", WorkerEntryJson(*read));
}

TEST_CASE("the answers to a start are byte for byte what they were", "[service][golden]") {
  StartAnswer started;
  started.id = "0123456789abcdef";
  started.terminal = true;
  started.notices = {"Agents run in a sandbox."};
  CHECK_GOLDEN("service/start_answer_started.json", StartAnswerJson(started));
  StartAnswer refused;
  refused.answered = false;
  refused.error = "this repository's policy refuses the session";
  refused.reason = Reason::kRefused;
  CHECK_GOLDEN("service/start_answer_refused.json", StartAnswerJson(refused));
  auto read = ParseStartAnswer(Golden("start_answer_refused.json"));
  REQUIRE(read.ok());
  CHECK_FALSE(read->answered);
  CHECK(read->reason == Reason::kRefused);
  CHECK_GOLDEN("service/start_answer_refused.json", StartAnswerJson(*read));

  WorkerAnswer worker;
  worker.status = StartStatus::kStarted;
  worker.terminal = true;
  worker.notices = {"Agents run in a sandbox."};
  CHECK_GOLDEN("service/worker_answer.json", WorkerAnswerJson(worker));
  auto answer = ParseWorkerAnswer(Golden("worker_answer.json"));
  REQUIRE(answer.ok());
  CHECK_GOLDEN("service/worker_answer.json", WorkerAnswerJson(*answer));
}

TEST_CASE("the node and the session list are byte for byte what they were", "[service][golden]") {
  const ServiceSession running = Session(std::nullopt), ended = Session(3);
  NodeView node;
  node.can_sandbox = true;
  node.verdict = "Agents run in a sandbox.";
  node.allowed_users = {"alice", "bob"};
  node.service_user = "root";
  node.max_sessions = 8;
  node.sessions = {&running};
  CHECK_GOLDEN("service/node.json", NodeJson(node));
  CHECK_GOLDEN("service/sessions.json", SessionListJson({&running, &ended}));
  auto listed = ParseSessionList(Golden("sessions.json"));
  REQUIRE(listed.ok());
  REQUIRE(listed->size() == 2);
  CHECK_GOLDEN("service/session_ended.json", SessionJson((*listed)[1]));
  CHECK_GOLDEN("service/ok.json", OkJson());
}

TEST_CASE("what clients, the service and workers ask each other is what it was",
          "[service][golden]") {
  CHECK_GOLDEN("service/signal_body.json", SignalBodyJson(15));
  CHECK(ParseSignalBody(Golden("signal_body.json")).signal == 15);
  CHECK_GOLDEN("service/resize_body.json", ResizeBodyJson(50, 132));
  CHECK(ParseResizeBody(Golden("resize_body.json")).columns == 132);
  CHECK_GOLDEN("service/worker_op_signal.json", WorkerOpJson({.op = "signal", .signal = 15}));
  CHECK_GOLDEN("service/worker_op_resize.json",
               WorkerOpJson({.op = "resize", .rows = 50, .columns = 132}));
  CHECK_GOLDEN("service/worker_op_stop.json", WorkerOpJson({.op = "stop"}));
  auto op = ParseWorkerOp(Golden("worker_op_resize.json"));
  REQUIRE(op.ok());
  CHECK(op->rows == 50);
  CHECK_GOLDEN("service/worker_info.json", WorkerInfoJson({"running", false, "native"}));
  CHECK(ParseWorkerInfo(Golden("worker_info.json"))->runtime == "native");
  CHECK_GOLDEN("service/worker_exit.json", WorkerExitJson(3));
  CHECK(ParseWorkerExit(Golden("worker_exit.json")) == 3);
  CHECK_GOLDEN("service/worker_ok.json", WorkerOkJson());
}

TEST_CASE("a worker's tally is byte for byte mojoup.service.tally/v1", "[service][golden]") {
  WorkerTally tally;
  tally.egress = {.allowed = 12, .denied = 3, .asked = 2, .error = 1};
  tally.approvals = {.pending = 1, .approved = 4, .denied = 1, .expired = 2};
  CHECK_GOLDEN("service/worker_tally.json", WorkerTallyJson(tally));
  auto read = ParseWorkerTally(Golden("worker_tally.json"));
  REQUIRE(read.ok());
  CHECK(*read == tally);
}

TEST_CASE("what a session or worker sends back is read only where it is valid", "[service]") {
  // Bodies and packets another process wrote: numbers of the wrong type read
  // as absent, and a body that is not an object reads as nothing.
  CHECK(ParseSignalBody(R"({"signal": "15"})").signal == -1);
  CHECK(ParseSignalBody("not json").signal == -1);
  CHECK(ParseResizeBody(R"({"rows": 1.5, "columns": 80})").rows == -1);
  CHECK_FALSE(ParseWorkerExit(R"({"exit": "3"})").has_value());
  CHECK_FALSE(ParseWorkerInfo("[1, 2]").has_value());
  CHECK(ParseWorkerInfo(R"({"state": 7})")->state == "running");
  CHECK_FALSE(ParseWorkerOp(R"({"signal": 15})").ok());
  CHECK_FALSE(ParseWorkerAnswer(R"({"status": "finished"})").ok());
  CHECK(ParseErrorDoc(R"({"error": "no", "reason": 4})").error == "no");
  CHECK(ParseErrorDoc(R"({"error": "no", "reason": 4})").reason.empty());
  // A list keeps the sessions that are sessions.
  auto listed =
      ParseSessionList(R"({"schema":"mojoup.service.sessions/v1","sessions":[{"schema":"other"},)" +
                       Golden("session_ended.json") + "]}");
  REQUIRE(listed.ok());
  CHECK(listed->size() == 1);
}

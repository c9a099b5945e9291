// The service's wire formats, byte for byte: each message the service, its
// workers and its clients write, encoded from fixed values and compared with
// the files under tests/golden/service/, which hold the bytes the service
// wrote before its messages had codecs. The schemas are versioned: a change
// here is a new schema, never an edit of a golden file.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "protocol/protocol.h"

using namespace mojoup;
using namespace mojoup::service;

namespace {

std::string Golden(const std::string& name) {
  const std::string path = std::string(MOJOUP_SOURCE_DIR) + "/tests/golden/service/" + name;
  std::ifstream file(path, std::ios::binary);
  INFO(path);
  REQUIRE(file.good());
  std::ostringstream bytes;
  bytes << file.rdbuf();
  std::string text = bytes.str();
  // One message a file, and a newline after it for the reader's sake.
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
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
  CHECK(StartRequestJson(start.request, start.options, start.secrets) ==
        Golden("start_client.json"));
  CHECK(WorkerStartJson(start) == Golden("start_worker.json"));
}

TEST_CASE("a start request read back is the one written", "[service][golden]") {
  auto read = ParseStartRequest(Golden("start_worker.json"));
  REQUIRE(read.ok());
  CHECK(WorkerStartJson(*read) == Golden("start_worker.json"));
}

TEST_CASE("a session is byte for byte mojoup.service.session/v1", "[service][golden]") {
  CHECK(SessionJson(Session(std::nullopt)) == Golden("session_running.json"));
  CHECK(SessionJson(Session(3)) == Golden("session_ended.json"));
  auto read = ParseSession(Golden("session_ended.json"));
  REQUIRE(read.ok());
  CHECK(SessionJson(*read) == Golden("session_ended.json"));
}

TEST_CASE("an error is byte for byte mojoup.service.error/v1", "[service][golden]") {
  CHECK(ErrorJson("no session 0123456789abcdef of yours", Reason::kNotFound) ==
        Golden("error.json"));
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
  CHECK(WorkerEntryJson(entry) == Golden("worker_entry.json"));
  auto read = ParseWorkerEntry(Golden("worker_entry.json"));
  REQUIRE(read.ok());
  CHECK(WorkerEntryJson(*read) == Golden("worker_entry.json"));
}

TEST_CASE("the answers to a start are byte for byte what they were", "[service][golden]") {
  StartAnswer started;
  started.id = "0123456789abcdef";
  started.terminal = true;
  started.notices = {"Agents run in a sandbox."};
  CHECK(StartAnswerJson(started) == Golden("start_answer_started.json"));
  StartAnswer refused;
  refused.answered = false;
  refused.error = "this repository's policy refuses the session";
  refused.reason = Reason::kRefused;
  CHECK(StartAnswerJson(refused) == Golden("start_answer_refused.json"));
  auto read = ParseStartAnswer(Golden("start_answer_refused.json"));
  REQUIRE(read.ok());
  CHECK_FALSE(read->answered);
  CHECK(read->reason == Reason::kRefused);
  CHECK(StartAnswerJson(*read) == Golden("start_answer_refused.json"));

  WorkerAnswer worker;
  worker.status = StartStatus::kStarted;
  worker.terminal = true;
  worker.notices = {"Agents run in a sandbox."};
  CHECK(WorkerAnswerJson(worker) == Golden("worker_answer.json"));
  auto answer = ParseWorkerAnswer(Golden("worker_answer.json"));
  REQUIRE(answer.ok());
  CHECK(WorkerAnswerJson(*answer) == Golden("worker_answer.json"));
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
  CHECK(NodeJson(node) == Golden("node.json"));
  CHECK(SessionListJson({&running, &ended}) == Golden("sessions.json"));
  auto listed = ParseSessionList(Golden("sessions.json"));
  REQUIRE(listed.ok());
  REQUIRE(listed->size() == 2);
  CHECK(SessionJson((*listed)[1]) == Golden("session_ended.json"));
  CHECK(OkJson() == Golden("ok.json"));
}

TEST_CASE("what clients, the service and workers ask each other is what it was",
          "[service][golden]") {
  CHECK(SignalBodyJson(15) == Golden("signal_body.json"));
  CHECK(ParseSignalBody(Golden("signal_body.json")).signal == 15);
  CHECK(ResizeBodyJson(50, 132) == Golden("resize_body.json"));
  CHECK(ParseResizeBody(Golden("resize_body.json")).columns == 132);
  CHECK(WorkerOpJson({.op = "signal", .signal = 15}) == Golden("worker_op_signal.json"));
  CHECK(WorkerOpJson({.op = "resize", .rows = 50, .columns = 132}) ==
        Golden("worker_op_resize.json"));
  CHECK(WorkerOpJson({.op = "stop"}) == Golden("worker_op_stop.json"));
  auto op = ParseWorkerOp(Golden("worker_op_resize.json"));
  REQUIRE(op.ok());
  CHECK(op->rows == 50);
  CHECK(WorkerInfoJson({"running", false, "native"}) == Golden("worker_info.json"));
  CHECK(ParseWorkerInfo(Golden("worker_info.json"))->runtime == "native");
  CHECK(WorkerExitJson(3) == Golden("worker_exit.json"));
  CHECK(ParseWorkerExit(Golden("worker_exit.json")) == 3);
  CHECK(WorkerOkJson() == Golden("worker_ok.json"));
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

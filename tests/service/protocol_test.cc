// What the sandbox service, its workers and clients say to each other, on
// its own: the attach stream's frames, the start request as a client may
// send it, and the service's config keys.
#include "protocol/protocol.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "mojoup/policy/node_config.h"
#include "mojoup/sandbox/session.h"

using mojoup::service::EncodeFrame;
using mojoup::service::FrameReader;
using mojoup::service::FrameType;
using mojoup::service::ParseStartRequest;

namespace {

std::string Start(const std::string& fields) {
  return R"({"schema": "mojoup.service.start/v1", "workdir": "/home/me/src/app", )"
         R"("command": ["make"])" +
         (fields.empty() ? "" : ", " + fields) + "}";
}

}  // namespace

TEST_CASE("attach frames come out whole however the bytes arrive", "[service]") {
  const std::string bytes = EncodeFrame(FrameType::kStdout, "hello") +
                            EncodeFrame(FrameType::kExit, "3") +
                            EncodeFrame(FrameType::kStderr, std::string(70000, 'x'));
  FrameReader reader;
  std::vector<std::pair<FrameType, std::string>> frames;
  for (char byte : bytes) {
    reader.Add(std::string_view(&byte, 1));
    auto next = reader.Next();
    if (!next.ok()) FAIL(std::string(next.status().message()));
    if (next->has_value()) frames.push_back(**next);
  }
  REQUIRE(frames.size() == 3);
  CHECK(frames[0] == std::pair{FrameType::kStdout, std::string("hello")});
  CHECK(frames[1] == std::pair{FrameType::kExit, std::string("3")});
  CHECK(frames[2].second.size() == 70000);
}

TEST_CASE("a frame over 1 MiB or of an unknown type ends the stream", "[service]") {
  FrameReader big;
  big.Add(std::string("\x01\0\0\0\x7f\xff\xff\xff", 8));
  CHECK(!big.Next().ok());
  FrameReader unknown;
  unknown.Add(std::string("\x09\0\0\0\0\0\0\0", 8));
  auto next = unknown.Next();
  REQUIRE(!next.ok());
  CHECK_THAT(std::string(next.status().message()), Catch::Contains("unknown frame type 9"));
}

TEST_CASE("a start request is checked field by field", "[service]") {
  auto ok = ParseStartRequest(Start(R"("tool": "codex", "terminal": true, "rows": 40)"), true);
  REQUIRE(ok.ok());
  CHECK(ok->request.tool == "codex");
  CHECK(ok->request.terminal);
  CHECK(ok->options.rows == 40);
  const std::pair<std::string, std::string> bad[] = {
      {R"("tooll": "codex")", "field \"tooll\" is not one this message has"},
      {R"("rows": 70000)", "field \"rows\" must be an integer from 0 to 65535"},
      {R"("credentials": "API_KEY")", "field \"credentials\" must be an array"},
      {R"("credentials": ["API_KEY", 7])", "field \"credentials[1]\" must be a string"},
      {R"("upstream_ca": "ca.pem")", "field \"upstream_ca\" must be an absolute path"},
  };
  for (const auto& [fields, message] : bad) {
    INFO(fields);
    auto parsed = ParseStartRequest(Start(fields), true);
    REQUIRE(absl::IsInvalidArgument(parsed.status()));
    CHECK_THAT(std::string(parsed.status().message()), Catch::Contains(message));
  }
  auto relative = ParseStartRequest(
      R"({"schema": "mojoup.service.start/v1", "workdir": "src", "command": ["make"]})", true);
  CHECK_THAT(std::string(relative.status().message()), Catch::Contains("an absolute path"));
  CHECK(!ParseStartRequest(R"({"workdir": "/a", "command": ["make"]})", true).ok());
}

TEST_CASE("a client cannot set what only the service sets", "[service]") {
  for (const std::string& fields :
       {std::string(R"("config_path": "/tmp/mine.json")"), std::string(R"("session_id": "x")"),
        std::string(R"("environment": {"LD_PRELOAD": "/tmp/x.so"})"),
        std::string(R"("secrets": {"API_KEY": "sk-1"})"),
        std::string(R"("credentials": ["LD_PRELOAD"], "secrets": {"LD_PRELOAD": "/x.so"})")}) {
    INFO(fields);
    CHECK(absl::IsInvalidArgument(ParseStartRequest(Start(fields), true).status()));
  }
  auto named = ParseStartRequest(
      Start(R"("credentials": ["API_KEY=api.example.com"], "secrets": {"API_KEY": "sk-1"}, )"
            R"("environment": {"TERM": "xterm"})"),
      true);
  REQUIRE(named.ok());
  CHECK(named->secrets.at("API_KEY") == "sk-1");
  // The service's own copy for the worker carries its fields.
  mojoup::service::WorkerStart start = *named;
  start.config_path = "/etc/mojoup/node.json";
  start.request.session_id = "0123456789abcdef";
  auto worker = ParseStartRequest(mojoup::service::WorkerStartJson(start));
  REQUIRE(worker.ok());
  CHECK(worker->config_path == "/etc/mojoup/node.json");
  CHECK(worker->request.session_id == "0123456789abcdef");
}

// A tally comes from a worker, which runs as an ordinary user: anything but
// a whole one within its bounds is refused in one sentence.
TEST_CASE("a worker's tally is refused unless whole and within its bounds", "[service]") {
  using mojoup::service::ParseWorkerTally;
  auto tally = [](const std::string& egress, const std::string& approvals) {
    return R"({"schema":"mojoup.service.tally/v1","egress":{)" + egress + R"(},"approvals":{)" +
           approvals + "}}";
  };
  const std::string egress = R"("allowed":5,"denied":1,"asked":2,"error":0)";
  const std::string approvals =
      R"("pending":64,"approved":1,"denied":0,"expired":9007199254740991)";
  auto ok = ParseWorkerTally(tally(egress, approvals));
  REQUIRE(ok.ok());
  CHECK(ok->egress.asked == 2);
  CHECK(ok->approvals.pending == 64);
  CHECK(ok->approvals.expired == mojoup::service::kMaxTallyCount);
  const std::pair<std::string, std::string> bad[] = {
      {"not json", "the worker's tally"},
      {"[1]", "must be an object"},
      {R"({"schema":"mojoup.service.tally/v2","egress":{},"approvals":{}})", "\"schema\""},
      {tally(R"("allowed":5,"denied":1,"asked":2)", approvals), "\"egress.error\" is missing"},
      {tally(egress + R"(,"other":1)", approvals), "\"egress.other\" is not one"},
      {tally(R"("allowed":-1,"denied":1,"asked":2,"error":0)", approvals), "\"egress.allowed\""},
      {tally(R"("allowed":1.5,"denied":1,"asked":2,"error":0)", approvals), "\"egress.allowed\""},
      {tally(R"("allowed":"5","denied":1,"asked":2,"error":0)", approvals), "\"egress.allowed\""},
      {tally(R"("allowed":18446744073709551616,"denied":1,"asked":2,"error":0)", approvals),
       "the worker's tally"},
      {tally(R"("allowed":9007199254740992,"denied":1,"asked":2,"error":0)", approvals),
       "a count must be at most 9007199254740991"},
      {tally(egress, R"("pending":65,"approved":1,"denied":0,"expired":0)"),
       "\"approvals.pending\" must be at most 64"},
      {tally(egress, approvals) + "x", "the worker's tally is not valid JSON"},
      {tally(R"("allowed":[[1]],"denied":1,"asked":2,"error":0)", approvals),
       "the worker's tally nests deeper than 2 levels"},
  };
  for (const auto& [text, message] : bad) {
    INFO(text.substr(0, 200));
    auto parsed = ParseWorkerTally(text);
    REQUIRE(absl::IsInvalidArgument(parsed.status()));
    CHECK_THAT(std::string(parsed.status().message()), Catch::Contains(message));
  }
  auto large = ParseWorkerTally(tally(egress, approvals).insert(1, std::string(5000, ' ')));
  CHECK(absl::IsResourceExhausted(large.status()));
  CHECK_THAT(std::string(large.status().message()), Catch::Contains("over the 4096 allowed"));
}

TEST_CASE("a worker's packets are read small, and a descriptor passed along is dropped",
          "[service]") {
  int pair[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == 0);
  int pipe_ends[2];
  REQUIRE(pipe2(pipe_ends, O_CLOEXEC) == 0);
  // A tally with the write end of a pipe passed along, then a packet over
  // 4 KiB, then the exit.
  REQUIRE(mojoup::service::SendPacket(pair[0], "tally", pipe_ends[1]).ok());
  ::close(pipe_ends[1]);
  REQUIRE(mojoup::service::SendPacket(pair[0], std::string(5000, 'x')).ok());
  REQUIRE(mojoup::service::SendPacket(pair[0], "exit").ok());
  auto tally = mojoup::service::ReceiveWorkerPacket(pair[1]);
  REQUIRE(tally.ok());
  REQUIRE(*tally == "tally");
  // The service holds no copy of the pipe's write end: its reader sees the
  // end at once.
  pollfd hangup{pipe_ends[0], POLLIN, 0};
  REQUIRE(::poll(&hangup, 1, 5000) == 1);
  char byte = 0;
  REQUIRE(::read(pipe_ends[0], &byte, 1) == 0);
  auto large = mojoup::service::ReceiveWorkerPacket(pair[1]);
  REQUIRE(large.status().code() == absl::StatusCode::kInvalidArgument);
  auto exit = mojoup::service::ReceiveWorkerPacket(pair[1]);
  REQUIRE(exit.ok());
  REQUIRE(*exit == "exit");
  auto none = mojoup::service::ReceiveWorkerPacket(pair[1]);
  REQUIRE(none.status().code() == absl::StatusCode::kDeadlineExceeded);
  ::close(pair[0]);
  REQUIRE(mojoup::service::ReceiveWorkerPacket(pair[1]).status().code() ==
          absl::StatusCode::kNotFound);
  ::close(pair[1]);
  ::close(pipe_ends[0]);
}

TEST_CASE("the service's config keys take only what they mean", "[service]") {
  using mojoup::policy::ValidateConfigValue;
  CHECK(ValidateConfigValue("node.service.max_sessions", "20").ok());
  CHECK(!ValidateConfigValue("node.service.max_sessions", "0").ok());
  CHECK(!ValidateConfigValue("node.service.max_sessions", "ten").ok());
  CHECK(ValidateConfigValue("node.service.drain_timeout", "0").ok());
  CHECK(ValidateConfigValue("node.service.metrics_listen", "127.0.0.1:9464").ok());
  auto open = ValidateConfigValue("node.service.metrics_listen", "0.0.0.0:9464");
  REQUIRE(!open.ok());
  CHECK_THAT(std::string(open.message()), Catch::Contains("a loopback address"));
  mojoup::policy::NodeConfig config;
  CHECK(mojoup::policy::ServiceMaxSessions(config) >= 2);
  CHECK(mojoup::policy::ServiceDrainTimeout(config) == std::chrono::seconds(300));
}

TEST_CASE("a program replaced while it runs still finds its supervisor", "[service]") {
  // /proc/self/exe of a program an upgrade replaced reads "PATH (deleted)".
  char pattern[] = "/tmp/mojoup-supervisor-XXXXXX";
  REQUIRE(::mkdtemp(pattern) != nullptr);
  const std::string dir = pattern;
  const std::string init = dir + "/mojoup-sandbox-init";
  { std::ofstream(init) << "#!/bin/sh\n"; }
  ::chmod(init.c_str(), 0755);
  const std::string exe = dir + "/exe";
  REQUIRE(::symlink((dir + "/mojoup-node (deleted)").c_str(), exe.c_str()) == 0);
  CHECK(mojoup::sandbox::FindSupervisor(exe) == init);
  ::unlink(exe.c_str());
  REQUIRE(::symlink((dir + "/mojoup-node").c_str(), exe.c_str()) == 0);
  CHECK(mojoup::sandbox::FindSupervisor(exe).empty());  // gone, and not an upgrade
  std::filesystem::remove_all(dir);
}

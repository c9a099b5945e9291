#include "mojoup/sandbox/audit_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "../support/test_support.h"
#include "fmt/format.h"

namespace mojoup::sandbox {
namespace audit_reader_test {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using test::Message;
using test::TempDir;

constexpr const char* kSession = "0123456789abcdef";

std::string Line(std::uint64_t seq, const std::string& event, const std::string& more = "") {
  return fmt::format(R"({{"schema":"mojoup.audit/v1","seq":{},"time":"2026-12-04T18:20:01.123Z",)"
                     R"("session":"{}","event":"{}"{}}})",
                     seq, kSession, event, more.empty() ? "" : "," + more);
}

std::string Egress(std::uint64_t seq) {
  return Line(seq, "egress",
              R"("method":"GET","host":"example.com","port":443,"decision":"allow",)"
              R"("path":"/a","credentials":["github"],"status":200,"duration_ms":1.5)");
}

// `line` with `from` replaced by `to`, as a file's one line.
std::string Changed(std::string line, const std::string& from, const std::string& to) {
  line.replace(line.find(from), from.size(), to);
  return line + "\n";
}

std::string Canned() {
  return Line(1, "session.start", R"("user":"me","uid":1000,"ask":true)") + "\n" + Egress(2) +
         "\n" + Line(3, "session.end", R"("exit_code":0,"allowed":1)") + "\n";
}

std::string Append(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fd);
  return path;
}

TEST_CASE("ReadAudit reads every member of a checked file", "[audit]") {
  TempDir dir;
  const std::string path = test::WriteFile(dir / "a.jsonl", Canned());
  auto lines = ReadAudit(path);
  REQUIRE(lines.ok());
  REQUIRE(lines->size() == 3);
  CHECK((*lines)[0].event == "session.start");
  CHECK((*lines)[0].uid == 1000);
  CHECK((*lines)[0].ask == true);
  CHECK((*lines)[1].host == "example.com");
  CHECK((*lines)[1].port == 443);
  CHECK((*lines)[1].credentials == std::vector<std::string>{"github"});
  CHECK((*lines)[1].duration_ms == 1.5);
  CHECK((*lines)[1].text == Egress(2));
  CHECK((*lines)[2].exit_code == 0);
  CHECK((*lines)[2].session == kSession);
}

TEST_CASE("ReadAudit returns only the lines after since, checking all", "[audit]") {
  TempDir dir;
  const std::string path = test::WriteFile(dir / "a.jsonl", Canned());
  auto lines = ReadAudit(path, {.since = 2});
  REQUIRE(lines.ok());
  REQUIRE(lines->size() == 1);
  CHECK((*lines)[0].seq == 3);
  auto none = ReadAudit(path, {.since = 3});
  REQUIRE(none.ok());
  CHECK(none->empty());
}

TEST_CASE("ReadAudit leaves a last line without its newline for later", "[audit]") {
  TempDir dir;
  const std::string path = test::WriteFile(dir / "a.jsonl", Egress(1) + "\n" + Egress(2));
  auto lines = ReadAudit(path);
  REQUIRE(lines.ok());
  CHECK(lines->size() == 1);
}

TEST_CASE("ReadAudit refuses a gap in seq, naming the file and line", "[audit]") {
  TempDir dir;
  const std::string path =
      test::WriteFile(dir / "a.jsonl", Egress(1) + "\n" + Egress(2) + "\n" + Egress(4) + "\n");
  auto lines = ReadAudit(path, {.since = 3});
  REQUIRE(lines.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(lines.status()), Equals(path + ":3: field \"seq\" must be 3, not 4"));
}

TEST_CASE("ReadAudit refuses a file whose first seq is not 1", "[audit]") {
  TempDir dir;
  const std::string path = test::WriteFile(dir / "a.jsonl", Egress(2) + "\n");
  CHECK_THAT(Message(ReadAudit(path).status()),
             Equals(path + ":1: field \"seq\" must be 1, not 2"));
}

TEST_CASE("ReadAudit refuses another schema", "[audit]") {
  TempDir dir;
  const std::string path =
      test::WriteFile(dir / "a.jsonl", Changed(Egress(1), "audit/v1", "audit/v2"));
  CHECK_THAT(Message(ReadAudit(path).status()),
             Equals(path + ":1: field \"schema\" must be \"mojoup.audit/v1\""));
}

TEST_CASE("ReadAudit refuses members of the wrong type", "[audit]") {
  TempDir dir;
  const std::string path = test::WriteFile(
      dir / "a.jsonl", Egress(1) + "\n" + Line(2, "egress", R"("port":"443")") + "\n");
  CHECK_THAT(Message(ReadAudit(path).status()),
             Equals(path + ":2: field \"port\" must be an integer from 0 to 65535"));
  test::WriteFile(dir / "b.jsonl", Line(1, "egress", R"("credentials":"github")") + "\n");
  CHECK_THAT(Message(ReadAudit(dir / "b.jsonl").status()),
             Contains(":1: field \"credentials\" must be an array"));
  test::WriteFile(dir / "c.jsonl", R"({"schema":"mojoup.audit/v1","seq":1})"
                                   "\n");
  CHECK_THAT(Message(ReadAudit(dir / "c.jsonl").status()),
             Contains(":1: field \"time\" is missing"));
}

TEST_CASE("ReadAudit refuses a time that is not RFC 3339 in UTC", "[audit]") {
  TempDir dir;
  const std::string path = test::WriteFile(dir / "a.jsonl", Changed(Egress(1), ".123Z", "+01:00"));
  CHECK_THAT(Message(ReadAudit(path).status()),
             Contains(":1: field \"time\" must be an RFC 3339 time in UTC"));
}

TEST_CASE("ReadAudit refuses an event the format lacks", "[audit]") {
  TempDir dir;
  const std::string path = test::WriteFile(dir / "a.jsonl", Line(1, "egres") + "\n");
  CHECK_THAT(Message(ReadAudit(path).status()),
             Contains(":1: field \"event\" must be one of \"egress\", \"session.start\""));
}

TEST_CASE("ReadAudit refuses a line of another session", "[audit]") {
  TempDir dir;
  std::string other = Egress(2);
  other.replace(other.find(kSession), 16, "fedcba9876543210");
  const std::string path = test::WriteFile(dir / "a.jsonl", Egress(1) + "\n" + other + "\n");
  CHECK_THAT(Message(ReadAudit(path).status()),
             Contains(":2: field \"session\" must be \"0123456789abcdef\" as on line 1"));
}

TEST_CASE("ReadAudit refuses a line that is not JSON", "[audit]") {
  TempDir dir;
  const std::string path = test::WriteFile(dir / "a.jsonl", Egress(1) + "\n{\"schema\":\n");
  CHECK_THAT(Message(ReadAudit(path).status()),
             Contains(path + ":2: the audit line is not valid JSON"));
  test::WriteFile(dir / "b.jsonl", std::string(100, '[') + "\n");
  CHECK_THAT(Message(ReadAudit(dir / "b.jsonl").status()),
             Contains(":1: the audit line nests deeper"));
}

TEST_CASE("ReadAudit refuses a huge line, ended or not", "[audit]") {
  TempDir dir;
  const std::string huge = Line(2, "notice", "\"message\":\"" + std::string(70000, 'x') + "\"");
  const std::string ended = test::WriteFile(dir / "a.jsonl", Egress(1) + "\n" + huge + "\n");
  CHECK_THAT(Message(ReadAudit(ended).status()),
             Equals(ended + ":2: the line is " + std::to_string(huge.size()) +
                    " bytes, over the 65536 a line may have"));
  const std::string open = test::WriteFile(dir / "b.jsonl", Egress(1) + "\n" + huge);
  CHECK_THAT(Message(ReadAudit(open).status()),
             Equals(open + ":2: the line is over the 65536 bytes a line may have"));
}

TEST_CASE("ReadAudit reads no more than the bound", "[audit]") {
  TempDir dir;
  const std::string path = test::WriteFile(dir / "a.jsonl", Canned());
  auto lines = ReadAudit(path, {.max_bytes = 100});
  REQUIRE(lines.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(Message(lines.status()), Contains("over the 100 bytes an audit may have"));
  CHECK(ReadAudit(path, {.max_bytes = Canned().size()}).ok());
}

TEST_CASE("ReadAudit refuses a symbolic link, even to a good file", "[audit]") {
  TempDir dir;
  const std::string path = test::WriteFile(dir / "a.jsonl", Canned());
  REQUIRE(::symlink(path.c_str(), (dir / "link.jsonl").c_str()) == 0);
  auto lines = ReadAudit(dir / "link.jsonl");
  REQUIRE(lines.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(Message(lines.status()), Contains("is a symbolic link"));
}

TEST_CASE("ReadAudit refuses a FIFO without waiting for a writer", "[audit]") {
  TempDir dir;
  REQUIRE(::mkfifo((dir / "a.jsonl").c_str(), 0600) == 0);
  auto lines = ReadAudit(dir / "a.jsonl");
  REQUIRE(lines.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(Message(lines.status()), Contains("is a FIFO, not a regular file"));
}

TEST_CASE("ReadAudit refuses a file the reader does not own", "[audit]") {
  TempDir dir;
  const std::string path = test::WriteFile(dir / "a.jsonl", Canned());
  const uid_t owner = ::geteuid();
  const uid_t other = owner == 0 ? 4242 : owner + 1;
  auto lines = ReadAudit(path, {.reader = other});
  REQUIRE(lines.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(
      Message(lines.status()),
      Equals(fmt::format("{} belongs to uid {}, not to uid {} who reads it", path, owner, other)));
  CHECK(ReadAudit(path, {.reader = 0}).ok());  // root reads anyone's
}

TEST_CASE("ReadAudit refuses a file others may write", "[audit]") {
  TempDir dir;
  const std::string path = test::WriteFile(dir / "a.jsonl", Canned(), 0620);
  CHECK_THAT(Message(ReadAudit(path).status()), Contains("can be written by others"));
}

TEST_CASE("ReadAudit says NotFound for a missing file", "[audit]") {
  TempDir dir;
  CHECK(ReadAudit(dir / "none.jsonl").status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("FollowAudit hands over lines as they come, to the end line", "[audit]") {
  TempDir dir;
  const std::string path = test::WriteFile(dir / "a.jsonl", Egress(1) + "\n");
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    Append(path, Egress(2) + "\n" + Egress(3).substr(0, 20));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    Append(path, Egress(3).substr(20) + "\n" + Line(4, "session.end") + "\n");
  });
  std::vector<std::uint64_t> seen;
  const auto started = std::chrono::steady_clock::now();
  absl::Status followed = FollowAudit(
      path, {.read = {.since = 1}, .wait = std::chrono::seconds(10)}, [&](const AuditLine& line) {
        seen.push_back(line.seq);
        return true;
      });
  writer.join();
  REQUIRE(followed.ok());
  CHECK(seen == std::vector<std::uint64_t>{2, 3, 4});
  // The watch woke it, not the ten seconds' deadline.
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
}

TEST_CASE("FollowAudit ends when the caller says stop, after a last read", "[audit]") {
  TempDir dir;
  const std::string path = test::WriteFile(dir / "a.jsonl", Egress(1) + "\n");
  std::atomic<int> asked = 0;
  std::vector<std::uint64_t> seen;
  absl::Status followed = FollowAudit(path,
                                      {.wait = std::chrono::milliseconds(50),
                                       .stop =
                                           [&] {
                                             if (++asked == 2) Append(path, Egress(2) + "\n");
                                             return asked >= 2;
                                           }},
                                      [&](const AuditLine& line) {
                                        seen.push_back(line.seq);
                                        return true;
                                      });
  REQUIRE(followed.ok());
  CHECK(seen == std::vector<std::uint64_t>{1, 2});
}

TEST_CASE("FollowAudit stops when its caller's function says so", "[audit]") {
  TempDir dir;
  const std::string path = test::WriteFile(dir / "a.jsonl", Egress(1) + "\n" + Egress(2) + "\n");
  int calls = 0;
  REQUIRE(FollowAudit(path, {}, [&](const AuditLine&) { return ++calls < 1; }).ok());
  CHECK(calls == 1);
}

TEST_CASE("FollowAudit refuses a file removed before its session ended", "[audit]") {
  TempDir dir;
  const std::string path = test::WriteFile(dir / "a.jsonl", Egress(1) + "\n");
  std::thread remover([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::unlink(path.c_str());
  });
  absl::Status followed = FollowAudit(path, {.wait = std::chrono::milliseconds(200)},
                                      [](const AuditLine&) { return true; });
  remover.join();
  REQUIRE(followed.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(Message(followed), Contains("was removed before its session ended"));
}

TEST_CASE("FollowAudit passes a bad line's error on", "[audit]") {
  TempDir dir;
  const std::string path = test::WriteFile(dir / "a.jsonl", Egress(1) + "\n");
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    Append(path, Egress(3) + "\n");
  });
  absl::Status followed =
      FollowAudit(path, {.wait = std::chrono::seconds(2)}, [](const AuditLine&) { return true; });
  writer.join();
  CHECK_THAT(Message(followed), Equals(path + ":2: field \"seq\" must be 2, not 3"));
}

}  // namespace
}  // namespace audit_reader_test
}  // namespace mojoup::sandbox

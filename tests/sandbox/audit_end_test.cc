// The end line a cleanup appends for a session whose owner was killed: the
// tail it reads is bounded, and a file the session's user could have
// planted (a link, a FIFO, a second name, a cut or forged last line) is
// refused, never followed nor appended to.
#include "audit/audit_end.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "../support/test_support.h"
#include "fmt/format.h"
#include "mojoup/internal/fd.h"
#include "mojoup/sandbox/audit_reader.h"

namespace mojoup::sandbox {
namespace audit_end_test {
namespace {

using Catch::Matchers::Contains;
using test::Message;
using test::Slurp;
using test::TempDir;

constexpr const char* kSession = "0123456789abcdef";

std::string Line(std::uint64_t seq, const std::string& event,
                 const std::string& session = kSession) {
  return fmt::format(R"({{"schema":"mojoup.audit/v1","seq":{},"time":"2026-12-04T18:20:01.123Z",)"
                     R"("session":"{}","event":"{}"}})",
                     seq, session, event) +
         "\n";
}

// A state directory's audit/ with the session's file holding `text`, 0600.
struct AuditDir {
  TempDir dir;
  std::string audit() const { return dir / "audit"; }
  std::string file() const { return audit() + "/" + kSession + ".jsonl"; }
  std::string Write(const std::string& text) const {
    dir.Write(std::string("audit/") + kSession + ".jsonl", text);
    REQUIRE(::chmod(file().c_str(), 0600) == 0);
    return file();
  }
  absl::StatusOr<bool> End() const {
    return EndOrphanedAudit({.dir = audit(),
                             .session = kSession,
                             .owner = ::geteuid(),
                             .detail = "its owner, process 7, was gone",
                             .now = std::chrono::system_clock::now()});
  }
};

absl::StatusOr<AuditTail> Tail(const std::string& path) {
  internal::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd.ok());
  struct stat info {};
  REQUIRE(::fstat(fd.get(), &info) == 0);
  return ReadAuditTail(fd.get(), static_cast<std::uint64_t>(info.st_size), path);
}

TEST_CASE("the tail reader finds the last line's seq, and whether it ended", "[audit][reap]") {
  AuditDir a;
  auto empty = Tail(a.Write(""));
  REQUIRE(empty.ok());
  CHECK(empty->seq == 0);
  auto open = Tail(a.Write(Line(1, "session.start") + Line(2, "egress")));
  REQUIRE(open.ok());
  CHECK(open->seq == 2);
  CHECK(open->session == kSession);
  CHECK_FALSE(open->ended);
  auto ended = Tail(a.Write(Line(1, "session.start") + Line(2, "session.end")));
  REQUIRE(ended.ok());
  CHECK(ended->ended);
}

TEST_CASE("the tail reader refuses a cut, forged or overlong last line", "[audit][reap]") {
  AuditDir a;
  const std::string start = Line(1, "session.start");
  auto cut = Tail(a.Write(start + Line(2, "egress").substr(0, 40)));
  CHECK(absl::IsFailedPrecondition(cut.status()));
  CHECK_THAT(Message(cut.status()), Contains("its last line is cut short"));
  auto forged = Tail(a.Write(start + "{\"schema\":\"mojoup.audit/v1\",\"seq\":\"2\"}\n"));
  CHECK(absl::IsFailedPrecondition(forged.status()));
  CHECK_THAT(Message(forged.status()), Contains("its last line does not pass"));
  auto unknown = Tail(a.Write(start + Line(2, "made.up")));
  CHECK_THAT(Message(unknown.status()), Contains("does not pass"));
  // One line past the bound: not read whole, not taken.
  auto overlong = Tail(a.Write(start + std::string(kMaxAuditLineBytes + 10, 'x') + "\n"));
  CHECK(absl::IsFailedPrecondition(overlong.status()));
  CHECK_THAT(Message(overlong.status()), Contains("longer than the 65536 bytes"));
}

TEST_CASE("the tail reader reads only the tail of a giant file", "[audit][reap]") {
  AuditDir a;
  const std::string path = a.Write(Line(1, "session.start"));
  // 8 GiB of hole, then a last line: read whole, it would not fit a bound.
  constexpr off_t kGiant = off_t{8} << 30;
  REQUIRE(::truncate(path.c_str(), kGiant) == 0);
  internal::Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
  const std::string last = "\n" + Line(9, "egress");
  REQUIRE(::write(fd.get(), last.data(), last.size()) == static_cast<ssize_t>(last.size()));
  auto tail = Tail(path);
  REQUIRE(tail.ok());
  CHECK(tail->seq == 9);
}

TEST_CASE("a dead owner's audit gets one end line, its seq after the last", "[audit][reap]") {
  AuditDir a;
  a.Write(Line(1, "session.start") + Line(2, "egress"));
  auto ended = a.End();
  REQUIRE(ended.ok());
  CHECK(*ended);
  auto lines = ReadAudit(a.file());  // every seq checked, from 1 up
  REQUIRE(lines.ok());
  REQUIRE(lines->size() == 3);
  CHECK(lines->back().seq == 3);
  CHECK(lines->back().event == "session.end");
  CHECK(lines->back().reason == "owner-gone");
  CHECK(lines->back().detail == "its owner, process 7, was gone");
  // Once is enough: a second cleanup finds the end line.
  auto again = a.End();
  REQUIRE(again.ok());
  CHECK_FALSE(*again);
  CHECK(ReadAudit(a.file())->size() == 3);
  // An owner that ended it itself: nothing added.
  a.Write(Line(1, "session.start") + Line(2, "session.end"));
  CHECK_FALSE(*a.End());
  // No audit at all: nothing to end.
  ::unlink(a.file().c_str());
  CHECK(absl::IsNotFound(a.End().status()));
}

TEST_CASE("a planted audit is refused and left as it is", "[audit][reap]") {
  AuditDir a;
  const std::string target = a.dir.Write("elsewhere.jsonl", Line(1, "session.start"));
  REQUIRE(::chmod(target.c_str(), 0600) == 0);
  std::filesystem::create_directories(a.audit());
  auto refused = [&](std::string_view why) {
    auto ended = a.End();
    INFO(why);
    CHECK(absl::IsFailedPrecondition(ended.status()));
    CHECK_THAT(Message(ended.status()), Contains(std::string(why)));
    CHECK(Slurp(target) == Line(1, "session.start"));
  };
  REQUIRE(::symlink(target.c_str(), a.file().c_str()) == 0);
  refused("symbolic link");
  ::unlink(a.file().c_str());
  REQUIRE(::link(target.c_str(), a.file().c_str()) == 0);
  refused("it has 2 links");
  ::unlink(a.file().c_str());
  REQUIRE(::mkfifo(a.file().c_str(), 0600) == 0);
  refused("it is a FIFO");  // and not waited on
  ::unlink(a.file().c_str());
  a.Write(Line(1, "session.start"));
  REQUIRE(::chmod(a.file().c_str(), 0620) == 0);
  refused("others than its owner can write it");
  a.Write(Line(1, "session.start", "fedcba9876543210"));
  refused("its last line is of session \"fedcba9876543210\"");
  a.Write(Line(1, "session.start") + "not json\n");
  refused("no end line is added after it");
  CHECK(Slurp(a.file()) == Line(1, "session.start") + "not json\n");
  if (::geteuid() == 0) {
    a.Write(Line(1, "session.start"));
    REQUIRE(::chown(a.file().c_str(), 65534, 65534) == 0);
    refused("it belongs to uid 65534, not to uid 0");
  }
}

}  // namespace
}  // namespace audit_end_test
}  // namespace mojoup::sandbox

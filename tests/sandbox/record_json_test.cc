// A session's record and the sign-in staging it embeds, as JSON: the bytes
// written, against the golden files in tests/golden/sandbox/, and the
// readers' answers to records the node did not write (a record is read
// back from disk, where a session or another user may have written it).
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../support/golden.h"
#include "mojoup/sandbox/signin.h"
#include "session/record.h"

namespace {

using mojoup::sandbox::Getenv;
using mojoup::sandbox::RecordContext;
using mojoup::sandbox::RecordFromJson;
using mojoup::sandbox::RecordToJson;
using mojoup::sandbox::SessionRecord;
using mojoup::sandbox::SignInStaging;
using mojoup::sandbox::SignInStagingFromJson;
using mojoup::sandbox::SignInStagingToJson;
using mojoup::sandbox::StagedSecret;

constexpr const char* kRecordSessions = "/home/ada/.local/state/mojoup/sessions";
constexpr const char* kRecordPath = "/home/ada/.local/state/mojoup/sessions/s42.json";

SignInStaging SampleStaging() {
  SignInStaging staging;
  staging.tool = "codex";
  staging.home = std::string(kRecordSessions) + "/s42/home";
  staging.files.push_back({".codex/auth.json", "/home/ada/.codex/auth.json",
                           staging.home + "/.codex/auth.json", std::string(64, 'a'), 0600, true});
  staging.secrets.push_back(StagedSecret{".codex/auth.json",
                                         {"tokens", "refresh_token"},
                                         mojoup::policy::TokenRole::kRefresh,
                                         "codex .codex/auth.json tokens.refresh_token",
                                         "ada@example.com \"quoted\"\t\xff"});
  staging.secrets.push_back(StagedSecret{".codex/auth.json",
                                         {"OPENAI_API_KEY"},
                                         mojoup::policy::TokenRole::kApiKey,
                                         "codex .codex/auth.json OPENAI_API_KEY",
                                         ""});
  staging.missing = {"/home/ada/.config/\xff-not-utf8", "/home/ada/caf\xc3\xa9\\\n"};
  return staging;
}

SessionRecord SampleRecord() {
  SessionRecord record;
  record.id = "s42";
  record.user = "ada";
  record.repo = "/home/ada/src/\"quoted\" repo";
  record.tool = "codex";
  record.runtime = "native";
  record.sandbox = "5ea1ed";
  record.state = "running";
  record.started_at = "2026-11-30T08:15:00Z";
  record.pid = 31337;
  record.pid_start = 987654321;
  record.started_ns = 1'796'026'500'000'000'000;
  record.dir = std::string(kRecordSessions) + "/s42";
  record.sign_in = SampleStaging();
  return record;
}

RecordContext SampleContext() {
  static const Getenv kNoEnv = [](std::string_view) { return std::optional<std::string>(); };
  return {kRecordSessions, "/home/ada", &kNoEnv};
}

// `text` with its first `from` replaced by `to`.
std::string Replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

std::string RecordError(const std::string& text) {
  auto read = RecordFromJson(kRecordPath, text, SampleContext());
  REQUIRE(!read.ok());
  CHECK(read.status().code() == absl::StatusCode::kDataLoss);
  return std::string(read.status().message());
}

std::string StagingReadError(const std::string& text) {
  auto read = SignInStagingFromJson(text);
  REQUIRE(!read.ok());
  CHECK(read.status().code() == absl::StatusCode::kInvalidArgument);
  return std::string(read.status().message());
}

void CheckStagingRefusals(const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [text, error] : cases) {
    INFO(text.substr(0, 600));
    CHECK(StagingReadError(text) == error);
  }
}

TEST_CASE("sign-in staging JSON: the bytes written, and read back alike", "[record]") {
  const SignInStaging staging = SampleStaging();
  CHECK_GOLDEN("sandbox/signin_staging.json", SignInStagingToJson(staging));
  CHECK_GOLDEN("sandbox/signin_staging.empty.json", SignInStagingToJson(SignInStaging()));
  auto back = SignInStagingFromJson(mojoup::testing::ReadGolden("sandbox/signin_staging.json"));
  REQUIRE(back.ok());
  CHECK(*back == staging);
}

TEST_CASE("sign-in staging JSON: what older records left out, and what they may add", "[record]") {
  const std::string text =
      R"({"tool":"","home":"/s","files":[{"home_relative":"a/b","host_path":"/h/a/b",)"
      R"("staged_path":"/s/a/b","host_sha256":")" +
      std::string(64, '0') + R"(","mode":0,"extra":[1]}],"missing":[],"more":{}})";
  auto read = SignInStagingFromJson(text);
  REQUIRE(read.ok());
  REQUIRE(read->files.size() == 1);
  CHECK(read->files[0].mode == 0);
  CHECK(!read->files[0].stand_ins);
  CHECK(read->secrets.empty());
  auto nul = SignInStagingFromJson(Replaced(text, R"("tool":"")", R"("tool":"co\u0000dex")"));
  REQUIRE(nul.ok());
  CHECK(nul->tool == std::string("co\0dex", 6));
}

TEST_CASE("sign-in staging JSON: each refusal names the member and what it must be", "[record]") {
  const std::string good = SignInStagingToJson(SampleStaging());
  const std::string file = R"("home_relative":".codex/auth.json")";
  const std::string p = "sign-in staging record: ";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"[]", p + "/: expected an object"},
      {"null", p + "/: expected an object"},
      {"{}", p + "/tool: expected a string"},
      {Replaced(good, R"("tool":"codex")", R"("tool":7)"), p + "/tool: expected a string"},
      {Replaced(good, R"("tool":"codex",)", ""), p + "/tool: expected a string"},
      {Replaced(good, R"("home":")", R"("home":"rel)"), p + "/home: expected an absolute path"},
      {Replaced(good, R"("home":")", R"("home":null,"x":")"), p + "/home: expected a string"},
      {Replaced(good, R"("home":")", R"("home":"/\u0000)"), p + "/home: expected an absolute path"},
      {Replaced(good, R"("files":[)", R"("files":{"a":[)"),
       "the sign-in staging record is not valid "
       "JSON: Missing a comma or '}' after an "
       "object member. (byte offset 734)"},
      {Replaced(good, R"("files":[)", R"("files":7,"x":[)"), p + "/files: expected an array"},
      {Replaced(good, R"("files":[)", R"("files":[7,)"), p + "/files/0: expected an object"},
      {Replaced(good, file, R"("home_relative":7)"),
       p + "/files/0/home_relative: expected a string"},
      {Replaced(good, file, R"("home_relative":"a/../b")"),
       p + "/files/0/home_relative: expected a path inside the home"},
      {Replaced(good, file, R"("home_relative":"/a")"),
       p + "/files/0/home_relative: expected a path inside the home"},
      {Replaced(good, file, R"("home_relative":"a\u0000b")"),
       p + "/files/0/home_relative: expected a path inside the home"},
      {Replaced(good, file, R"("x":1)"), p + "/files/0/home_relative: expected a string"},
      {Replaced(good, R"("host_path":"/)", R"("host_path":")"),
       p + "/files/0/host_path: expected an absolute path"},
      {Replaced(good, R"("host_path":")", R"("host_path":[],"x":")"),
       p + "/files/0/host_path: expected a string"},
      {Replaced(good, R"("staged_path":")", R"("x":")"),
       p + "/files/0/staged_path: expected a string"},
      {Replaced(good, std::string(64, 'a'), std::string(64, 'A')),
       p + "/files/0/host_sha256: expected 64 lowercase hex digits"},
      {Replaced(good, std::string(64, 'a'), std::string(65, 'a')),
       p + "/files/0/host_sha256: expected 64 lowercase hex digits"},
      {Replaced(good, R"("host_sha256":")", R"("host_sha256":true,"x":")"),
       p + "/files/0/host_sha256: expected a string"},
      {Replaced(good, R"("mode":384)", R"("mode":512)"),
       p + "/files/0/mode: expected permission bits, 0 to 511 (0777)"},
      {Replaced(good, R"("mode":384)", R"("mode":-1)"),
       p + "/files/0/mode: expected permission bits, 0 to 511 (0777)"},
      {Replaced(good, R"("mode":384)", R"("mode":384.0)"),
       p + "/files/0/mode: expected permission bits, 0 to 511 (0777)"},
      {Replaced(good, R"("mode":384)", R"("mode":"0600")"),
       p + "/files/0/mode: expected permission bits, 0 to 511 (0777)"},
      {Replaced(good, R"("mode":384)", R"("mod":384)"),
       p + "/files/0/mode: expected permission bits, 0 to 511 (0777)"},
      {Replaced(good, R"("stand_ins":true)", R"("stand_ins":1)"),
       p + "/files/0/stand_ins: expected true or false"},
      {Replaced(good, R"("stand_ins":true)", R"("stand_ins":null)"),
       p + "/files/0/stand_ins: expected true or false"},
  };
  CheckStagingRefusals(cases);
}

TEST_CASE("sign-in staging JSON: secrets, missing files, the order of checks and bad text",
          "[record]") {
  const std::string good = SignInStagingToJson(SampleStaging());
  const std::string secret = R"("file":".codex/auth.json")";
  const std::string p = "sign-in staging record: ";
  const std::vector<std::pair<std::string, std::string>> cases{
      {Replaced(good, R"("secrets":[)", R"("secrets":{},"x":[)"),
       p + "/secrets: expected an array"},
      {Replaced(good, R"("secrets":[)", R"("secrets":null,"x":[)"),
       p + "/secrets: expected an array"},
      {Replaced(good, R"("secrets":[)", R"("secrets":[[],)"), p + "/secrets/0: expected an object"},
      {Replaced(good, secret, R"("file":1)"), p + "/secrets/0/file: expected a string"},
      {Replaced(good, R"("path":["tokens","refresh_token"])", R"("path":[])"),
       p + "/secrets/0/path: expected an array of member names"},
      {Replaced(good, R"("path":["tokens","refresh_token"])", R"("path":["tokens",1])"),
       p + "/secrets/0/path: expected an array of member names"},
      {Replaced(good, R"("path":["tokens","refresh_token"])", R"("path":"tokens")"),
       p + "/secrets/0/path: expected an array of member names"},
      {Replaced(good, R"("path":["tokens","refresh_token"])", R"("x":0)"),
       p + "/secrets/0/path: expected an array of member names"},
      {Replaced(good, R"("role":1)", R"("role":4)"),
       p + "/secrets/0/role: expected a token role, 0 to 3"},
      {Replaced(good, R"("role":1)", R"("role":-1)"),
       p + "/secrets/0/role: expected a token role, 0 to 3"},
      {Replaced(good, R"("role":1)", R"("role":"refresh")"),
       p + "/secrets/0/role: expected a token role, 0 to 3"},
      {Replaced(good, R"("credential":")", R"("x":")"),
       p + "/secrets/0/credential: expected a string"},
      {Replaced(good, R"("sign_in":")", R"("sign_in":0,"x":")"),
       p + "/secrets/0/sign_in: expected a string"},
      {Replaced(good, R"("missing":[)", R"("missing":"x","y":[)"),
       p + "/missing: expected an array"},
      {Replaced(good, R"("missing":[)", R"("missing":[1,)"), p + "/missing/0: expected a string"},
      {Replaced(good, R"(,"missing":[)", R"(,"x":[)"), p + "/missing: expected an array"},
      // The order the members are checked in: missing before secrets.
      {Replaced(Replaced(good, R"("missing":[)", R"("missing":[1,)"), R"("secrets":[)",
                R"("secrets":7,"x":[)"),
       p + "/missing/0: expected a string"},
      {Replaced(Replaced(good, R"("home":")", R"("home":"rel)"), R"("tool":"codex")",
                R"("tool":0)"),
       p + "/tool: expected a string"},
      {Replaced(Replaced(good, R"("files":[)", R"("files":7,"x":[)"), R"("home":")",
                R"("home":"rel)"),
       p + "/home: expected an absolute path"},
      {"", "the sign-in staging record is not valid JSON: The document is empty. (byte offset 0)"},
      {good + "x",
       "the sign-in staging record is not valid JSON: The document root must not be "
       "followed by other values. (byte offset " +
           std::to_string(good.size()) + ")"},
      {std::string(70, '[') + std::string(70, ']'),
       "the sign-in staging record nests deeper than 64 levels"},
      {std::string(1 << 20, ' ') + "{}",
       "the sign-in staging record is 1048578 bytes, over the 1048576 allowed"},
  };
  CheckStagingRefusals(cases);
}

TEST_CASE("session record JSON: the bytes written, and read back alike", "[record]") {
  SessionRecord record = SampleRecord();
  CHECK_GOLDEN("sandbox/session_record.json", RecordToJson(record));
  auto back = RecordFromJson(
      kRecordPath, mojoup::testing::ReadGolden("sandbox/session_record.json"), SampleContext());
  REQUIRE(back.ok());
  CHECK(RecordToJson(*back) == RecordToJson(record));
  CHECK(back->sign_in == record.sign_in);

  record.sign_in.reset();
  record.tool = "";
  record.repo_had_git = false;
  record.state = "leftover";
  record.problem = "the sandbox 5ea1ed could not be removed: \"busy\"\n";
  CHECK_GOLDEN("sandbox/session_record.leftover.json", RecordToJson(record));
  back = RecordFromJson(kRecordPath,
                        mojoup::testing::ReadGolden("sandbox/session_record.leftover.json"),
                        SampleContext());
  REQUIRE(back.ok());
  CHECK(RecordToJson(*back) == RecordToJson(record));
}

TEST_CASE("session record JSON: what older records left out, and what they may hold oddly",
          "[record]") {
  SessionRecord plain = SampleRecord();
  plain.sign_in.reset();
  plain.tool = "";
  const std::string good = RecordToJson(plain);
  auto read = RecordFromJson(
      kRecordPath, Replaced(good, R"(,"started_ns":1796026500000000000)", ""), SampleContext());
  REQUIRE(read.ok());
  CHECK(read->started_ns == 0);
  CHECK(read->repo_had_git == true);
  CHECK(read->problem.empty());
  CHECK(!read->sign_in);
  // The schema is written, not checked; what a reader does not know is skipped.
  read = RecordFromJson(kRecordPath, Replaced(good, R"("mojoup.session/v1")", R"(7,"extra":{})"),
                        SampleContext());
  REQUIRE(read.ok());
  // Values of another type in the members a record may lack are taken as absent.
  read = RecordFromJson(
      kRecordPath,
      Replaced(Replaced(good, R"("started_ns":1796026500000000000)", R"("started_ns":1.5)"),
               R"("repo_had_git":true)", R"("repo_had_git":0,"problem":["x"])"),
      SampleContext());
  REQUIRE(read.ok());
  CHECK(read->started_ns == 0);
  CHECK(read->repo_had_git == true);
  CHECK(read->problem.empty());
  read = RecordFromJson(kRecordPath,
                        Replaced(good, R"("repo_had_git":true)", R"("repo_had_git":false)"),
                        SampleContext());
  REQUIRE(read.ok());
  CHECK(read->repo_had_git == false);
  read =
      RecordFromJson(kRecordPath,
                     Replaced(good, R"("repo_had_git":true)",
                              R"("repo_had_git":true,"problem":"busy\u0000hidden","problem":"x")"),
                     SampleContext());
  REQUIRE(read.ok());
  CHECK(read->problem == "busy");
}

TEST_CASE("session record JSON: each refusal names the record and what is wrong", "[record]") {
  const std::string good = RecordToJson(SampleRecord());
  const std::string p = std::string(kRecordPath) + ": ";
  const std::string s = p + "sign-in staging record: ";
  std::vector<std::pair<std::string, std::string>> cases{
      {"[]", p + "not a JSON object"},
      {"\"x\"", p + "not a JSON object"},
      {"", p + "the session record is not valid JSON: The document is empty. (byte offset 0)"},
      {std::string(70, '['), p + "the session record nests deeper than 64 levels"},
      {std::string(256 * 1024 + 1, ' '),
       p + "the session record is 262145 bytes, over the 262144 allowed"},
      {"{}", p + "\"id\" is missing or not a string"},
      {Replaced(good, R"("user":"ada")", R"("user":null)"),
       p + "\"user\" is missing or not a string"},
      {Replaced(good, R"("repo":")", R"("x":")"), p + "\"repo\" is missing or not a string"},
      {Replaced(good, R"("runtime":"native")", R"("runtime":1)"),
       p + "\"runtime\" is missing or not a string"},
      {Replaced(good, R"("dir":")", R"("dir":["x"],"x":")"),
       p + "\"dir\" is missing or not a string"},
      {Replaced(Replaced(good, R"("dir":")", R"("x":")"), R"("pid":31337)", R"("pid":"4242")"),
       p + "\"dir\" is missing or not a string"},
      {Replaced(good, R"("pid":31337)", R"("pid":"4242")"), p + "\"pid\" is not a number"},
      {Replaced(good, R"("pid":31337)", R"("pid":31337.0)"), p + "\"pid\" is not a number"},
      {Replaced(good, R"("pid":31337)", R"("pid":2147483648)"), p + "\"pid\" is not a number"},
      {Replaced(good, R"("pid":31337,)", ""), p + "\"pid\" is not a number"},
      {Replaced(good, R"("pid_start":987654321)", R"("pid_start":-1)"),
       p + "\"pid_start\" is not a number"},
      {Replaced(good, R"("pid_start":987654321)", R"("pid_start":null)"),
       p + "\"pid_start\" is not a number"},
      {Replaced(good, R"("pid":31337)", R"("pid":0)"), p + "its pid is not a process id"},
      {Replaced(good, R"("id":"s42")", R"("id":"s43")"),
       p + "its id is not a session id, or not its file's name"},
      {Replaced(good, R"("state":"running")", R"("state":"odd")"),
       p + "its state is not one a session has"},
      {Replaced(good, R"("role":1)", R"("role":9)"),
       s + "/secrets/0/role: expected a token role, 0 to 3"},
      {Replaced(good, R"("mode":384)", R"("mode":true)"),
       s + "/files/0/mode: expected permission bits, 0 to 511 (0777)"},
      {Replaced(good, R"("sign_in":{"tool":"codex")", R"("sign_in":{"tool":"claude-code")"),
       p + "its sign-in is of another tool"},
      {Replaced(good, R"("host_path":"/home/ada/)", R"("host_path":"/etc/)"),
       p + "its sign-in file .codex/auth.json is not one the node stages"},
  };
  // A sign-in of another shape is the staging reader's refusal.
  const auto sign_in_at = good.find(R"("sign_in":)");
  REQUIRE(sign_in_at != std::string::npos);
  for (const char* value : {"null", "[]", "7", "\"x\""}) {
    cases.emplace_back(good.substr(0, sign_in_at) + R"("sign_in":)" + value + "}",
                       s + "/: expected an object");
  }
  cases.emplace_back(good.substr(0, sign_in_at) + R"("sign_in":{"tool":"codex"}})",
                     s + "/home: expected a string");
  for (const auto& [text, error] : cases) {
    INFO(text.substr(0, 600));
    CHECK(RecordError(text) == error);
  }
}

}  // namespace

#include "session/record.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <set>

#include "fmt/format.h"
#include "mojoup/internal/bounded_json.h"
#include "mojoup/internal/json_codec.h"
#include "mojoup/policy/tool_profiles.h"
#include "staging/signin_json.h"

namespace mojoup::sandbox {
namespace fs = std::filesystem;
namespace {

namespace json = internal::json;
using R = SessionRecord;

// The members a record may lack, or hold as another type, were tolerated
// by the first readers: they are taken as absent.
constexpr auto kRecord = json::Message<SessionRecord>(
    json::Const("schema", "mojoup.session/v1").Unchecked(), json::Field("id", &R::id),
    json::Field("user", &R::user), json::Field("repo", &R::repo), json::Field("tool", &R::tool),
    json::Field("runtime", &R::runtime), json::Field("sandbox", &R::sandbox),
    json::Field("state", &R::state), json::Field("started_at", &R::started_at),
    json::Field("dir", &R::dir), json::Field("pid", &R::pid),
    json::Field("pid_start", &R::pid_start),
    json::Optional("problem", &R::problem).OmitDefault().Lenient(),
    json::Optional("started_ns", &R::started_ns).Lenient(),
    json::Optional("repo_had_git", &R::repo_had_git).Lenient(),
    json::Optional("sign_in", &R::sign_in, SignInStagingCodec{}));

// What is wrong with a record its codec refused, in the reader's own words.
std::string Refusal(const json::Error& error) {
  if (error.path.empty()) return "not a JSON object";
  if (error.path == "sign_in") return error.message;  // the staging reader's sentence
  if (error.path == "pid" || error.path == "pid_start") {
    return fmt::format("\"{}\" is not a number", error.path);
  }
  return fmt::format("\"{}\" is missing or not a string", error.path);
}

// Letters, digits and `extra`, 1 to `max` of them, not starting with a
// punctuation mark.
bool Plain(std::string_view text, std::string_view extra, std::size_t max) {
  if (text.empty() || text.size() > max || std::isalnum(static_cast<unsigned char>(text[0])) == 0) {
    return false;
  }
  return std::all_of(text.begin(), text.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           extra.find(c) != std::string_view::npos;
  });
}

// An absolute path as the node derives them: no empty, "." or ".."
// component, no control character, not "/" itself.
bool PlainPath(std::string_view path) {
  if (path.size() < 2 || path.front() != '/' || path.back() == '/' || path.size() > 4096)
    return false;
  if (std::any_of(path.begin(), path.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    return false;
  }
  for (std::string_view bad : {"//", "/./", "/../"}) {
    if (path.find(bad) != std::string_view::npos) return false;
  }
  return !path.ends_with("/.") && !path.ends_with("/..");
}

absl::Status CheckSignIn(const SessionRecord& record, const RecordContext& context) {
  const SignInStaging& staging = *record.sign_in;
  if (staging.tool != record.tool) return absl::DataLossError("its sign-in is of another tool");
  if (staging.home != record.dir + "/home") {
    return absl::DataLossError("its sign-in staging is not the session's own");
  }
  // Only the places the node itself finds a tool's sign-in files may be
  // written back to or kept aside beside.
  std::vector<SignInLocation> known;
  if (!staging.tool.empty()) {
    auto located = LocateSignIn(staging.tool, context.home, *context.getenv);
    if (!located.ok()) return absl::DataLossError(std::string(located.status().message()));
    known = *std::move(located);
  }
  for (const SignInFile& file : staging.files) {
    const bool derived = std::any_of(known.begin(), known.end(), [&](const SignInLocation& at) {
      return at.home_relative == file.home_relative && at.host_path == file.host_path;
    });
    if (!derived || file.staged_path != staging.home + "/" + file.home_relative) {
      return absl::DataLossError(
          fmt::format("its sign-in file {} is not one the node stages", file.home_relative));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRecord(const SessionRecord& record, const std::string& file_name,
                         const RecordContext& context) {
  auto bad = [](std::string_view what) { return absl::DataLossError(std::string(what)); };
  if (!Plain(record.id, "._-", 64) || file_name != record.id + ".json") {
    return bad("its id is not a session id, or not its file's name");
  }
  if (record.dir != context.sessions_dir + "/" + record.id) {
    return bad("its directory is not the session's own");
  }
  if (!PlainPath(record.repo)) return bad("its repository is not an absolute path");
  if (!record.sandbox.empty() && !Plain(record.sandbox, "._-", 128)) {
    return bad("its sandbox is not a container id or sandbox name");
  }
  if (!Plain(record.runtime, "._-", 32)) return bad("its runtime is not a runtime's name");
  if (!record.tool.empty() && policy::FindToolProfile(record.tool) == nullptr) {
    return bad("its tool is not a known tool");
  }
  if (!record.user.empty() && !Plain(record.user, "._-@$", 64)) {
    return bad("its user is not a user name");
  }
  static const std::set<std::string> kStates = {"starting", "running", "stopping", "leftover"};
  if (kStates.count(record.state) == 0) return bad("its state is not one a session has");
  if (record.pid <= 0) return bad("its pid is not a process id");
  if (record.sign_in) return CheckSignIn(record, context);
  return absl::OkStatus();
}

}  // namespace

std::string RecordToJson(const SessionRecord& record) { return json::ToJson(record, kRecord); }

absl::StatusOr<SessionRecord> RecordFromJson(const std::string& path, const std::string& text,
                                             const RecordContext& context) {
  rapidjson::Document doc;
  auto bad = [&](std::string_view what) {
    return absl::DataLossError(fmt::format("{}: {}", path, what));
  };
  if (absl::Status parsed = internal::ParseBoundedJson(
          text, doc, "the session record", {.max_bytes = kMaxRecordBytes, .utf8 = false});
      !parsed.ok()) {
    return bad(std::string(parsed.message()));
  }
  SessionRecord record;
  json::Error error;
  if (!json::Read(doc, record, kRecord, &error).ok()) return bad(Refusal(error));
  // The first readers took the problem up to its first NUL.
  record.problem.resize(std::strlen(record.problem.c_str()));
  const std::string file_name = fs::path(path).filename().string();
  if (absl::Status checked = CheckRecord(record, file_name, context); !checked.ok()) {
    return bad(std::string(checked.message()));
  }
  return record;
}

}  // namespace mojoup::sandbox

#include "session/record.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "fmt/format.h"
#include "mojoup/internal/bounded_json.h"
#include "mojoup/policy/tool_profiles.h"

namespace mojoup::sandbox {
namespace fs = std::filesystem;
namespace {

// A record's string fields by their JSON names, for writing and reading alike.
template <class Record>
auto StringFields(Record& record) {
  using Field = std::pair<const char*, decltype(&record.id)>;
  return std::array<Field, 9>{Field{"id", &record.id},      {"user", &record.user},
                              {"repo", &record.repo},       {"tool", &record.tool},
                              {"runtime", &record.runtime}, {"sandbox", &record.sandbox},
                              {"state", &record.state},     {"started_at", &record.started_at},
                              {"dir", &record.dir}};
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

std::string RecordToJson(const SessionRecord& record) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("schema");
  w.String("mojoup.session/v1");
  for (const auto& [key, value] : StringFields(record)) {
    w.Key(key);
    w.String(*value);
  }
  w.Key("pid");
  w.Int(record.pid);
  w.Key("pid_start");
  w.Uint64(record.pid_start);
  if (!record.problem.empty()) {
    w.Key("problem");
    w.String(record.problem);
  }
  w.Key("started_ns");
  w.Int64(record.started_ns);
  w.Key("repo_had_git");
  w.Bool(record.repo_had_git);
  if (record.sign_in) {
    w.Key("sign_in");
    std::string staging = SignInStagingToJson(*record.sign_in);
    w.RawValue(staging.data(), staging.size(), rapidjson::kObjectType);
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

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
  if (!doc.IsObject()) return bad("not a JSON object");
  SessionRecord record;
  for (const auto& [key, value] : StringFields(record)) {
    if (!doc.HasMember(key) || !doc[key].IsString()) {
      return bad(fmt::format("\"{}\" is missing or not a string", key));
    }
    *value = std::string(doc[key].GetString(), doc[key].GetStringLength());
  }
  if (!doc.HasMember("pid") || !doc["pid"].IsInt()) return bad("\"pid\" is not a number");
  if (!doc.HasMember("pid_start") || !doc["pid_start"].IsUint64()) {
    return bad("\"pid_start\" is not a number");
  }
  record.pid = doc["pid"].GetInt();
  record.pid_start = doc["pid_start"].GetUint64();
  if (doc.HasMember("problem") && doc["problem"].IsString())
    record.problem = doc["problem"].GetString();
  if (doc.HasMember("started_ns") && doc["started_ns"].IsInt64()) {
    record.started_ns = doc["started_ns"].GetInt64();
  }
  // Records written before this field knew nothing of it: leave the
  // repository as it is.
  record.repo_had_git = !doc.HasMember("repo_had_git") || !doc["repo_had_git"].IsBool() ||
                        doc["repo_had_git"].GetBool();
  if (doc.HasMember("sign_in")) {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    doc["sign_in"].Accept(w);
    auto staging = SignInStagingFromJson(buffer.GetString());
    if (!staging.ok()) return bad(std::string(staging.status().message()));
    record.sign_in = std::move(*staging);
  }
  const std::string file_name = fs::path(path).filename().string();
  if (absl::Status checked = CheckRecord(record, file_name, context); !checked.ok()) {
    return bad(std::string(checked.message()));
  }
  return record;
}

}  // namespace mojoup::sandbox

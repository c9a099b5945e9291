#include "staging/signin_standins.h"

#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>

#include "fmt/format.h"
#include "mojoup/internal/bounded_json.h"
#include "mojoup/policy/tool_profiles.h"

namespace mojoup::sandbox {
namespace {

using Value = rapidjson::Value;
using Path = std::vector<std::string>;

constexpr std::size_t kMaxDepth = 64;
// Shorter than this is no secret a stand-in could hide (Vault's own floor).
constexpr std::size_t kMinSecret = 8;

std::string Lower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

// Named or shaped like a secret, though no profile row names it.
bool LooksSecret(std::string_view name, std::string_view value) {
  const std::string lower = Lower(name);
  for (std::string_view ending : policy::kSecretNameEndings) {
    if (lower.size() >= ending.size() && lower.ends_with(ending)) return true;
  }
  for (std::string_view exact : policy::kSecretNames) {
    if (lower == exact) return true;
  }
  for (std::string_view prefix : policy::kSecretPrefixes) {
    if (value.starts_with(prefix)) return true;
  }
  return false;
}

std::string Serialized(const rapidjson::Document& doc, bool indented) {
  rapidjson::StringBuffer buffer;
  if (indented) {
    rapidjson::PrettyWriter<rapidjson::StringBuffer> writer(buffer);
    writer.SetIndent(' ', 2);
    doc.Accept(writer);
  } else {
    rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
    doc.Accept(writer);
  }
  return std::string(buffer.GetString(), buffer.GetSize());
}

absl::Status ParseObject(std::string_view file, std::string_view bytes, rapidjson::Document& doc) {
  if (absl::Status parsed =
          internal::ParseBoundedJson(bytes, doc, file, {.max_bytes = kMaxSignInFileBytes});
      !parsed.ok()) {
    return parsed;
  }
  if (!doc.IsObject()) {
    return absl::InvalidArgumentError(fmt::format("{} is not a JSON object", file));
  }
  return absl::OkStatus();
}

// Copilot's config.json starts with "//" comment lines before its JSON
// ("// This file is managed automatically."): they are kept as they are.
std::pair<std::string_view, std::string_view> SplitComments(std::string_view bytes) {
  std::size_t at = 0;
  while (at < bytes.size()) {
    std::size_t first = bytes.find_first_not_of(" \t\r\n", at);
    if (first == std::string_view::npos || bytes.compare(first, 2, "//") != 0) break;
    const std::size_t end = bytes.find('\n', first);
    at = end == std::string_view::npos ? bytes.size() : end + 1;
  }
  return {bytes.substr(0, at), bytes.substr(at)};
}

class SecretReplacer {
 public:
  SecretReplacer(std::string_view tool, std::string_view file, credproxy::Vault& vault,
                 rapidjson::Document::AllocatorType& allocator)
      : tool_(tool), file_(file), vault_(vault), allocator_(allocator) {
    if (const policy::ToolProfile* profile = policy::FindToolProfile(tool)) {
      for (const policy::SignInSecret& secret : profile->sign_in_secrets) {
        if (secret.file == file) rows_.push_back(&secret);
      }
    }
  }

  absl::Status Walk(Value& value, Path& path, std::string_view name) {
    if (path.size() > kMaxDepth) {
      return absl::InvalidArgumentError(
          fmt::format("{} nests deeper than {} at {}", file_, kMaxDepth, DottedPath(path)));
    }
    if (value.IsObject()) {
      for (auto& member : value.GetObject()) {
        path.emplace_back(member.name.GetString(), member.name.GetStringLength());
        absl::Status inner = Walk(member.value, path, path.back());
        path.pop_back();
        if (!inner.ok()) return inner;
      }
    } else if (value.IsArray()) {
      for (Value& item : value.GetArray()) {
        // An array's items go by its name: "scopes", or "keys" of secrets.
        if (absl::Status inner = Walk(item, path, name); !inner.ok()) return inner;
      }
    } else if (value.IsString()) {
      return Replace(value, path, name);
    }
    return absl::OkStatus();
  }

  std::vector<StagedSecret> secrets;

 private:
  absl::Status Replace(Value& value, const Path& path, std::string_view name) {
    const std::string real(value.GetString(), value.GetStringLength());
    const policy::SignInSecret* row = nullptr;
    for (const policy::SignInSecret* candidate : rows_) {
      if (PathMatches(candidate->path, path)) row = candidate;
    }
    if (row == nullptr && !LooksSecret(name, real)) return absl::OkStatus();
    if (real.size() < kMinSecret) return absl::OkStatus();
    StagedSecret secret;
    secret.home_relative = std::string(file_);
    secret.path = path;
    secret.role = row ? row->role : policy::TokenRole::kAccess;
    secret.credential = fmt::format("{} {} {}", tool_, file_, DottedPath(path));
    const Path parent(path.begin(), path.end() - 1);
    secret.sign_in = fmt::format("{} {} {}", tool_, file_, DottedPath(parent));
    credproxy::SignInToken token{secret.credential, real, secret.sign_in, secret.role, {}, {}};
    if (row != nullptr) {
      token.hosts.assign(row->hosts.begin(), row->hosts.end());
      for (const policy::TokenEndpoint& endpoint : row->endpoints) {
        token.endpoints.push_back({std::string(endpoint.host), std::string(endpoint.path),
                                   endpoint.form, std::string(endpoint.field)});
      }
    }
    absl::StatusOr<std::string> stand_in = vault_.AddToken(std::move(token));
    if (!stand_in.ok()) {
      return absl::InvalidArgumentError(fmt::format("{}: {}: {}", file_, DottedPath(path),
                                                    std::string(stand_in.status().message())));
    }
    value.SetString(stand_in->data(), static_cast<rapidjson::SizeType>(stand_in->size()),
                    allocator_);
    secrets.push_back(std::move(secret));
    return absl::OkStatus();
  }

  std::string tool_;
  std::string file_;
  credproxy::Vault& vault_;
  rapidjson::Document::AllocatorType& allocator_;
  std::vector<const policy::SignInSecret*> rows_;
};

}  // namespace

bool PathMatches(std::string_view pattern, const std::vector<std::string>& path) {
  std::size_t start = 0;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (start > pattern.size()) return false;
    std::size_t end = pattern.find('/', start);
    if (end == std::string_view::npos) end = pattern.size();
    const std::string_view want = pattern.substr(start, end - start);
    if (want != "*" && want != path[i]) return false;
    start = end + 1;
  }
  return start == pattern.size() + 1;
}

std::string DottedPath(const std::vector<std::string>& path) {
  if (path.empty()) return "(the top)";
  std::string dotted;
  for (const std::string& name : path) dotted += (dotted.empty() ? "" : ".") + name;
  return dotted;
}

absl::StatusOr<StandInCopy> ReplaceSecrets(std::string_view tool, std::string_view home_relative,
                                           std::string_view bytes, credproxy::Vault& vault) {
  const auto [comments, json] = SplitComments(bytes);
  rapidjson::Document doc;
  if (absl::Status parsed = ParseObject(home_relative, json, doc); !parsed.ok()) return parsed;
  SecretReplacer replacer(tool, home_relative, vault, doc.GetAllocator());
  Path path;
  if (absl::Status walked = replacer.Walk(doc, path, ""); !walked.ok()) return walked;
  const bool indented = json.find('\n') != std::string_view::npos;
  return StandInCopy{std::string(comments) + Serialized(doc, indented),
                     std::move(replacer.secrets)};
}

absl::StatusOr<std::string> UpdateJson(std::string_view file, std::string_view whole,
                                       const std::vector<JsonUpdate>& updates) {
  const auto [comments, bytes] = SplitComments(whole);
  rapidjson::Document doc;
  if (absl::Status parsed = ParseObject(file, bytes, doc); !parsed.ok()) return parsed;
  for (const JsonUpdate& update : updates) {
    Value* object = &doc;
    for (std::size_t i = 0; i + 1 < update.path.size() && object != nullptr; ++i) {
      auto member = object->FindMember(update.path[i].c_str());
      object = member != object->MemberEnd() && member->value.IsObject() ? &member->value : nullptr;
    }
    if (object == nullptr || update.path.empty()) {
      return absl::FailedPreconditionError(
          fmt::format("{} no longer has the object {} was in", file, DottedPath(update.path)));
    }
    Value value;
    if (const std::string* text = std::get_if<std::string>(&update.value)) {
      value.SetString(text->data(), static_cast<rapidjson::SizeType>(text->size()),
                      doc.GetAllocator());
    } else {
      value.SetInt64(std::get<std::int64_t>(update.value));
    }
    const std::string& name = update.path.back();
    auto member = object->FindMember(name.c_str());
    if (member == object->MemberEnd()) {
      object->AddMember(Value(name.c_str(), doc.GetAllocator()), value, doc.GetAllocator());
    } else if ((member->value.IsString() != value.IsString()) ||
               (!member->value.IsString() && !member->value.IsNumber())) {
      return absl::FailedPreconditionError(fmt::format(
          "{}: {} is no longer of the kind the tool writes there", file, DottedPath(update.path)));
    } else {
      member->value = value;
    }
  }
  return std::string(comments) + Serialized(doc, bytes.find('\n') != std::string_view::npos);
}

std::vector<std::optional<std::string>> JsonStringsAt(
    std::string_view bytes, const std::vector<std::vector<std::string>>& paths) {
  std::vector<std::optional<std::string>> strings(paths.size());
  rapidjson::Document doc;
  if (!ParseObject("", SplitComments(bytes).second, doc).ok()) return strings;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const Value* value = &doc;
    for (const std::string& name : paths[i]) {
      if (!value->IsObject()) {
        value = nullptr;
        break;
      }
      auto member = value->FindMember(name.c_str());
      value = member != value->MemberEnd() ? &member->value : nullptr;
      if (value == nullptr) break;
    }
    if (value != nullptr && value->IsString()) {
      strings[i] = std::string(value->GetString(), value->GetStringLength());
    }
  }
  return strings;
}

}  // namespace mojoup::sandbox

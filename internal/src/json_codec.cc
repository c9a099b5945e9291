#include "mojoup/internal/json_codec.h"

#include "fmt/format.h"

namespace mojoup::internal::json {

namespace {

// The places from the root down to `path`, the root itself left out.
std::vector<const Path*> FromRoot(const Path& path) {
  std::vector<const Path*> chain;
  for (const Path* at = &path; at != nullptr && at->parent != nullptr; at = at->parent) {
    chain.push_back(at);
  }
  return {chain.rbegin(), chain.rend()};
}

}  // namespace

std::string FormatPath(const Path& path) {
  std::string text;
  for (const Path* at : FromRoot(path)) {
    if (at->is_index) {
      text += fmt::format("[{}]", at->index);
    } else {
      if (!text.empty()) text += '.';
      text.append(at->name);
    }
  }
  return text;
}

std::string FormatPointer(const Path& path) {
  std::string text;
  for (const Path* at : FromRoot(path)) {
    text += '/';
    if (at->is_index) {
      text += std::to_string(at->index);
      continue;
    }
    for (char c : at->name) {
      if (c == '~') {
        text += "~0";
      } else if (c == '/') {
        text += "~1";
      } else {
        text += c;
      }
    }
  }
  return text;
}

bool Error::Set(Kind kind_, const Path& at, std::string_view expected_) {
  kind = kind_;
  path = FormatPath(at);
  pointer = FormatPointer(at);
  expected = std::string(expected_);
  if (path.empty()) {
    message = fmt::format("the JSON value must be {}", expected);
  } else if (kind == Kind::kMissing) {
    message = fmt::format("field \"{}\" is missing", path);
  } else if (kind == Kind::kUnknown) {
    message = fmt::format("field \"{}\" is not one this message has", path);
  } else {
    message = fmt::format("field \"{}\" must be {}", path, expected);
  }
  return false;
}

bool Const::Check(const rapidjson::Value& object, const Path& parent, Error& error) const {
  const Path path{&parent, name_};
  const auto found = object.FindMember(name_);
  if (found == object.MemberEnd()) return error.Set(Error::Kind::kMissing, path);
  const rapidjson::Value& v = found->value;
  if (!v.IsString() || std::string_view(v.GetString(), v.GetStringLength()) != value_) {
    return error.Set(Error::Kind::kWrongType, path, fmt::format("\"{}\"", value_));
  }
  return true;
}

}  // namespace mojoup::internal::json

#include "mojoup/policy/node_config.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "fmt/format.h"

namespace mojoup::policy {
namespace {

bool IsAbsolutePath(std::string_view value) { return !value.empty() && value.front() == '/'; }

bool IsUserList(std::string_view value) {
  if (value == "*") return true;
  static const std::regex kUser("[a-z_][a-z0-9_-]{0,31}\\$?");
  std::string list(value);
  std::stringstream parts(list);
  std::string user;
  int count = 0;
  while (std::getline(parts, user, ',')) {
    if (!std::regex_match(user, kUser)) return false;
    ++count;
  }
  return count > 0 && list.back() != ',';
}

bool IsImageReference(std::string_view value) {
  static const std::regex kImage("[a-z0-9][a-z0-9._/:@-]{0,254}");
  return std::regex_match(value.begin(), value.end(), kImage);
}

// 1-based line and column of a byte offset.
std::pair<int, int> LineColumn(std::string_view text, std::size_t offset) {
  int line = 1;
  int column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

}  // namespace

const std::vector<ConfigKey>& ConfigKeys() {
  static const std::vector<ConfigKey> kKeys = {
      {"node.sandbox.engine", "docker", "the container engine sandboxes run on", false},
      {"node.sandbox.role", "true or false", "run agents in per-session containers", true},
      {"node.sandbox.runtime", "openshell or native", "who builds the sandbox", false},
      {"node.sandbox.image", "an image reference", "the sandbox image", false},
      {"node.sandbox.allowed_users", "comma-separated user names, or *",
       "who may run agents in its sandboxes", false},
      {"node.sandbox.openshell_path", "an absolute path", "the openshell binary", false},
      {"policy.org", "an absolute path", "the organisation's hub policy", false},
      {"policy.team", "an absolute path", "the team's hub policy", false},
  };
  return kKeys;
}

absl::Status ValidateConfigValue(std::string_view key, std::string_view value) {
  const ConfigKey* found = nullptr;
  for (const ConfigKey& known : ConfigKeys()) {
    if (known.name == key) found = &known;
  }
  if (found == nullptr) {
    std::string names;
    for (const ConfigKey& known : ConfigKeys()) {
      names += (names.empty() ? "" : ", ") + std::string(known.name);
    }
    return absl::InvalidArgumentError(
        fmt::format("unknown config key \"{}\"; known keys: {}", key, names));
  }
  bool ok = false;
  if (key == "node.sandbox.engine")
    ok = value == "docker";
  else if (key == "node.sandbox.role")
    ok = value == "true" || value == "false";
  else if (key == "node.sandbox.runtime")
    ok = value == "openshell" || value == "native";
  else if (key == "node.sandbox.image")
    ok = IsImageReference(value);
  else if (key == "node.sandbox.allowed_users")
    ok = IsUserList(value);
  else
    ok = IsAbsolutePath(value);
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      fmt::format("\"{}\" is not a valid value for {}: expected {}", value, key, found->accepted));
}

std::string DefaultConfigPath() {
  if (const char* path = std::getenv("MOJOUP_NODE_CONFIG"); path != nullptr && *path != '\0') {
    return path;
  }
  if (geteuid() == 0) return "/etc/mojoup/node.json";
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg == '/') {
    return std::string(xdg) + "/mojoup/node.json";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "") + "/.config/mojoup/node.json";
}

absl::StatusOr<NodeConfig> NodeConfig::Load(const std::string& path) {
  NodeConfig config;
  config.path_ = path;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return config;
    return absl::PermissionDeniedError(
        fmt::format("{}: cannot read the node config: {}", path, std::strerror(errno)));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseStopWhenDoneFlag>(text.c_str(), text.size());
  if (doc.HasParseError()) {
    auto [line, column] = LineColumn(text, doc.GetErrorOffset());
    return absl::InvalidArgumentError(
        fmt::format("{}:{}:{}: the node config is not valid JSON: {}", path, line, column,
                    rapidjson::GetParseError_En(doc.GetParseError())));
  }
  if (!doc.IsObject()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: the node config must be a JSON object of \"key\": value", path));
  }
  for (const auto& member : doc.GetObject()) {
    const std::string key = member.name.GetString();
    if (key == "schema") {
      if (!member.value.IsString() || member.value.GetString() != kNodeConfigSchema) {
        return absl::InvalidArgumentError(fmt::format(
            "{}: /schema: expected \"{}\", the only node config schema this build reads", path,
            kNodeConfigSchema));
      }
      continue;
    }
    std::string value;
    if (member.value.IsBool()) {
      value = member.value.GetBool() ? "true" : "false";
    } else if (member.value.IsString()) {
      value = member.value.GetString();
    } else {
      return absl::InvalidArgumentError(
          fmt::format("{}: /{}: expected a string or true/false", path, key));
    }
    if (absl::Status valid = ValidateConfigValue(key, value); !valid.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: /{}: {}", path, key, std::string(valid.message())));
    }
    config.values_[key] = value;
  }
  return config;
}

std::optional<std::string> NodeConfig::Get(std::string_view key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

probe::ProbeOptions ProbeOptionsFor(const NodeConfig& config) {
  probe::ProbeOptions options;
  options.openshell_path = config.Get("node.sandbox.openshell_path");
  options.require_openshell = config.Get("node.sandbox.runtime").value_or("openshell") != "native";
  return options;
}

}  // namespace mojoup::policy

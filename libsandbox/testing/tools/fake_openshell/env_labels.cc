// Validation the CLI and the gateway do on --env pairs and --label pairs.

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {

// --env KEY=VALUE pairs, checked as the CLI checks them. Empty `error` on success.
StringMap ParseEnv(const std::vector<std::string>& items, std::string& error) {
  StringMap env;
  for (const std::string& item : items) {
    auto eq = item.find('=');
    std::string key = item.substr(0, eq);
    if (eq == std::string::npos || key.empty()) {
      error = fmt::format("--env expects KEY=VALUE; got '{}'", item);
      return {};
    }
    bool valid = !std::isdigit(static_cast<unsigned char>(key[0])) &&
                 std::all_of(key.begin(), key.end(),
                             [](unsigned char c) { return std::isalnum(c) || c == '_'; });
    if (!valid) {
      error = fmt::format("--env key must match [A-Za-z_][A-Za-z0-9_]*; got '{}'", key);
      return {};
    }
    if (key.starts_with("OPENSHELL_")) {
      error = fmt::format("--env keys starting with OPENSHELL_ are reserved; got '{}'", key);
      return {};
    }
    env[key] = item.substr(eq + 1);
  }
  return env;
}

bool LabelChars(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.';
  });
}

bool AlnumAtEnds(std::string_view text) {
  return !text.empty() && std::isalnum(static_cast<unsigned char>(text.front())) &&
         std::isalnum(static_cast<unsigned char>(text.back()));
}

// Kubernetes label rules, which the gateway enforces. Empty when valid.
std::string LabelProblem(const std::string& key, const std::string& value) {
  std::string_view name = key;
  if (auto slash = key.find('/'); slash != std::string::npos) {
    std::string_view prefix = std::string_view(key).substr(0, slash);
    name = std::string_view(key).substr(slash + 1);
    bool dns = !prefix.empty() && prefix.size() <= 253 &&
               std::all_of(prefix.begin(), prefix.end(),
                           [](unsigned char c) {
                             return std::islower(c) || std::isdigit(c) || c == '-' || c == '.';
                           }) &&
               std::isalnum(static_cast<unsigned char>(prefix.front())) &&
               std::isalnum(static_cast<unsigned char>(prefix.back())) &&
               prefix.find("..") == std::string_view::npos;
    if (!dns) return fmt::format("label key prefix must be a DNS subdomain: '{}'", key);
  }
  if (key.size() > 253 || name.empty() || name.size() > 63 || !LabelChars(name) ||
      !AlnumAtEnds(name)) {
    return fmt::format(
        "label key name segment must be 1 to 63 characters of alphanumerics, '-', '_' or '.', "
        "starting and ending with an alphanumeric: '{}'",
        key);
  }
  if (!value.empty() && (value.size() > 63 || !LabelChars(value) || !AlnumAtEnds(value))) {
    return fmt::format(
        "label value must be at most 63 characters of alphanumerics, '-', '_' or '.', starting "
        "and ending with an alphanumeric: '{}'",
        value);
  }
  return {};
}

}  // namespace mojoup::fake_openshell

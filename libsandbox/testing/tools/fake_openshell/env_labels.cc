// Validation the CLI and the gateway do on --env pairs and --label pairs.

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <map>
#include <optional>
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

bool Alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// The gateway's Kubernetes label rules, each with its own message, in the
// order it checks them (v0.0.37..v0.0.111 crates/openshell-server/src/grpc/
// validation.rs validate_label_key). Rust's is_alphanumeric is Unicode-wide;
// ASCII is what this double checks. Empty when valid.
std::string LabelKeyProblem(const std::string& key) {
  if (key.empty()) return "label key cannot be empty";
  if (key.size() > 253) return fmt::format("label key exceeds 253 characters: '{}'", key);
  std::string_view name = key;
  std::optional<std::string_view> prefix;
  if (auto slash = key.find('/'); slash != std::string::npos) {
    prefix = std::string_view(key).substr(0, slash);
    name = std::string_view(key).substr(slash + 1);
  }
  if (name.empty()) return fmt::format("label key name segment cannot be empty: '{}'", key);
  if (name.size() > 63) {
    return fmt::format("label key name segment exceeds 63 characters: '{}'", key);
  }
  if (!LabelChars(name)) {
    return fmt::format(
        "label key name segment contains invalid characters (must be alphanumeric, '-', '_', or "
        "'.'): '{}'",
        key);
  }
  if (!Alnum(name.front())) {
    return fmt::format("label key name segment must start with alphanumeric character: '{}'", key);
  }
  if (!Alnum(name.back())) {
    return fmt::format("label key name segment must end with alphanumeric character: '{}'", key);
  }
  if (prefix) {
    if (prefix->empty()) {
      return fmt::format("label key prefix cannot be empty when '/' is present: '{}'", key);
    }
    if (prefix->size() > 253)
      return fmt::format("label key prefix exceeds 253 characters: '{}'", key);
    bool dns = std::all_of(prefix->begin(), prefix->end(), [](unsigned char c) {
      return std::islower(c) || std::isdigit(c) || c == '-' || c == '.';
    });
    if (!dns) {
      return fmt::format(
          "label key prefix must be a DNS subdomain (lowercase alphanumeric, '-', '.'): '{}'", key);
    }
    if (prefix->front() == '-' || prefix->front() == '.' || prefix->back() == '-' ||
        prefix->back() == '.') {
      return fmt::format("label key prefix cannot start or end with '-' or '.': '{}'", key);
    }
    if (prefix->find("..") != std::string_view::npos) {
      return fmt::format("label key prefix cannot contain consecutive dots: '{}'", key);
    }
  }
  return {};
}

// validate_label_value, same file and tags: empty is allowed.
std::string LabelValueProblem(const std::string& value) {
  if (value.empty()) return {};
  if (value.size() > 63) return fmt::format("label value exceeds 63 characters: '{}'", value);
  if (!LabelChars(value)) {
    return fmt::format(
        "label value contains invalid characters (must be alphanumeric, '-', '_', or '.'): '{}'",
        value);
  }
  if (!Alnum(value.front())) {
    return fmt::format("label value must start with alphanumeric character: '{}'", value);
  }
  if (!Alnum(value.back())) {
    return fmt::format("label value must end with alphanumeric character: '{}'", value);
  }
  return {};
}

std::string LabelProblem(const std::string& key, const std::string& value) {
  std::string problem = LabelKeyProblem(key);
  return problem.empty() ? LabelValueProblem(value) : problem;
}

// A sandbox name as validate_sandbox_spec checks it: up to 253 bytes before
// v0.0.88; from v0.0.88 at most MAX_ROUTABLE_NAME_LEN (19) bytes and a
// DNS-1123 label (v0.0.88..v0.0.111 crates/openshell-server/src/grpc/
// validation.rs validate_sandbox_spec, validate_dns1123_label; grpc/mod.rs
// MAX_ROUTABLE_NAME_LEN). An empty name means "generate one". Empty when valid.
std::string SandboxNameProblem(const std::string& name, const Version& version) {
  if (name.empty()) return {};
  if (version < Release(88)) {
    if (name.size() > 253)
      return fmt::format("name exceeds maximum length ({} > 253)", name.size());
    return {};
  }
  if (name.size() > 19) return fmt::format("name exceeds maximum length ({} > 19)", name.size());
  bool dns = std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::islower(c) || std::isdigit(c) || c == '-';
  });
  if (!dns) return "name must contain only lowercase alphanumeric characters or hyphens";
  if (name.front() == '-' || name.back() == '-') return "name must not start or end with a hyphen";
  if (name.find("--") != std::string::npos) return "name must not contain consecutive hyphens";
  return {};
}

}  // namespace mojoup::fake_openshell

// The policy's process identity (run_as_user / run_as_group), checked as each
// release checks it.

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "fake_openshell.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {

std::string Trim(std::string_view text) {
  auto begin = text.find_first_not_of(" \t\r\n\v\f");
  if (begin == std::string_view::npos) return {};
  auto end = text.find_last_not_of(" \t\r\n\v\f");
  return std::string(text.substr(begin, end - begin + 1));
}

std::string Unquote(std::string text) {
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') &&
      text.back() == text.front()) {
    return text.substr(1, text.size() - 2);
  }
  return text;
}

// process.run_as_user / run_as_group from a policy YAML, by lines: the
// `process:` block's indented `key: value` entries.
ProcessIdentity ReadProcessIdentity(const std::string& yaml) {
  ProcessIdentity identity;
  std::istringstream lines(yaml);
  bool in_process = false;
  for (std::string line; std::getline(lines, line);) {
    if (auto hash = line.find(" #"); hash != std::string::npos) line.resize(hash);
    std::string trimmed = Trim(line);
    if (trimmed.empty() || trimmed.front() == '#') continue;
    if (line.front() != ' ' && line.front() != '\t') {
      in_process = trimmed.starts_with("process:");
      continue;
    }
    if (!in_process) continue;
    auto colon = trimmed.find(':');
    if (colon == std::string::npos) continue;
    std::string key = Trim(std::string_view(trimmed).substr(0, colon));
    std::string value = Unquote(Trim(std::string_view(trimmed).substr(colon + 1)));
    if (key == "run_as_user") identity.user = value;
    if (key == "run_as_group") identity.group = value;
  }
  return identity;
}

std::optional<std::uint32_t> NumericId(const std::string& text) {
  if (text.empty() || text.size() > 10 ||
      !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return std::nullopt;
  }
  std::uint64_t value = std::stoull(text);
  if (value >= 0xFFFFFFFFull) return std::nullopt;
  return static_cast<std::uint32_t>(value);
}

// What a release accepts for run_as_user / run_as_group: `sandbox` only
// before 0.0.76, a uid >= 1000 from 0.0.76, >= 1 from 0.0.110.
std::string IdentityProblem(std::string_view field, const std::string& value,
                            const Version& version) {
  if (value.empty() || value == "sandbox") return {};
  auto id = NumericId(value);
  if (version < Release(76)) {
    return fmt::format("policy validation failed: process.{} must be \"sandbox\"; got '{}'", field,
                       value);
  }
  const std::uint32_t least = version < Release(110) ? 1000 : 1;
  if (!id || *id < least) {
    return fmt::format(
        "policy validation failed: process.{} must be \"sandbox\" or a numeric id of at least {}; "
        "got '{}'",
        field, least, value);
  }
  return {};
}

// The gateway's refusal of a network endpoint host that is a "*." or "**."
// wildcard of two labels or fewer (PolicyViolation::TldWildcard in
// crates/openshell-policy/src/lib.rs, v0.0.37 to v0.0.111), as
// validate_policy_safety (crates/openshell-server/src/grpc/validation.rs)
// words it; "" when there is none. The entry's name is its `name:` when it
// has one, else its key. By lines, as the policies mojoup writes them.
std::string TldWildcardProblem(const std::string& yaml) {
  std::istringstream lines(yaml);
  bool in_policies = false;
  std::string key;
  std::string name;
  for (std::string line; std::getline(lines, line);) {
    std::string trimmed = Trim(line);
    if (trimmed.empty() || trimmed.front() == '#') continue;
    const std::size_t indent = line.find_first_not_of(' ');
    if (indent == 0) {
      in_policies = trimmed.starts_with("network_policies:");
      continue;
    }
    if (!in_policies) continue;
    if (indent == 2 && trimmed.back() == ':') {
      key = trimmed.substr(0, trimmed.size() - 1);
      name.clear();
      continue;
    }
    if (indent == 4 && trimmed.starts_with("name:")) {
      name = Unquote(Trim(std::string_view(trimmed).substr(5)));
      continue;
    }
    const std::size_t at = trimmed.find("host:");
    if (at == std::string::npos) continue;
    std::string host = Trim(std::string_view(trimmed).substr(at + 5));
    if (auto end = host.find_first_of(",}"); end != std::string::npos) host.resize(end);
    host = Unquote(Trim(host));
    const bool wild = host.starts_with("*.") || host.starts_with("**.");
    if (wild && std::count(host.begin(), host.end(), '.') + 1 <= 2) {
      return fmt::format(
          "policy contains unsafe content: network policy '{}': TLD wildcard '{}' is not "
          "allowed; use subdomain wildcards like '*.example.com' instead",
          name.empty() ? key : name, host);
    }
  }
  return {};
}

}  // namespace mojoup::fake_openshell

// ToolProfile: what the node knows about each agent tool, as data in one
// place: its own service hosts (allowed when a policy's tool_services is on),
// its sign-in files, the variable that moves them, and the CA variables it
// reads. Checked against the tools' sources and docs on kToolProfilesChecked;
// re-check against the version in use.
#pragma once

#include <string_view>
#include <vector>

namespace mojoup::policy {

inline constexpr std::string_view kToolProfilesChecked = "2026-09-01";

struct ToolProfile {
  std::string_view name;                        // the --tool value
  std::vector<std::string_view> service_hosts;  // exact hosts or "*.domain"
  std::vector<std::string_view> sign_in_files;  // home-relative
  std::string_view relocation_variable;         // moves the sign-in files
  std::vector<std::string_view> ca_variables;   // where it reads extra CAs
};

// claude-code, codex, copilot, opencode, kilocode.
const std::vector<ToolProfile>& ToolProfiles();

// The profile named `name`, or nullptr.
const ToolProfile* FindToolProfile(std::string_view name);

// "claude-code, codex, copilot, opencode, kilocode", for error messages.
std::string_view ToolNames();

}  // namespace mojoup::policy

#include "mojoup/policy/tool_profiles.h"

namespace mojoup::policy {

const std::vector<ToolProfile>& ToolProfiles() {
  // Source: the design's FACTS.md, "The agent tools" (read 2026-08/09).
  static const std::vector<ToolProfile> kProfiles = {
      {"claude-code",
       {"api.anthropic.com", "claude.ai", "claude.com", "platform.claude.com",
        "mcp-proxy.anthropic.com"},
       {".claude/.credentials.json", ".claude.json"},
       "CLAUDE_CONFIG_DIR",
       {"NODE_EXTRA_CA_CERTS"}},
      {"codex",
       {"auth.openai.com", "chatgpt.com", "api.openai.com"},
       {".codex/auth.json"},
       "CODEX_HOME",
       {"CODEX_CA_CERTIFICATE", "SSL_CERT_FILE"}},
      {"copilot",
       {"github.com", "api.github.com", "*.githubcopilot.com"},
       {".copilot/config.json"},
       "COPILOT_HOME",
       {"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE"}},
      {"opencode",
       {"opencode.ai", "models.dev"},
       {".local/share/opencode/auth.json", ".local/share/opencode/opencode.db"},
       "XDG_DATA_HOME",
       {"NODE_EXTRA_CA_CERTS"}},
      {"kilocode",
       {"api.kilo.ai"},
       {".local/share/kilo/auth.json", ".kilocode/cli/config.json"},
       "XDG_DATA_HOME",
       {"NODE_EXTRA_CA_CERTS"}},
  };
  return kProfiles;
}

const ToolProfile* FindToolProfile(std::string_view name) {
  for (const ToolProfile& profile : ToolProfiles()) {
    if (profile.name == name) return &profile;
  }
  return nullptr;
}

std::string_view ToolNames() { return "claude-code, copilot, codex, opencode, kilocode"; }

}  // namespace mojoup::policy

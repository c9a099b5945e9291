#include "mojoup/policy/tool_profiles.h"

#include <iterator>

namespace mojoup::policy {

namespace {

constexpr std::string_view kClaudeFile = ".claude/.credentials.json";
constexpr std::string_view kCodexFile = ".codex/auth.json";
constexpr std::string_view kCopilotFile = ".copilot/config.json";
constexpr std::string_view kOpenCodeFile = ".local/share/opencode/auth.json";
constexpr std::string_view kKiloFile = ".local/share/kilo/auth.json";

// Where Copilot CLI sends its GitHub token (seen in its traffic, 1.0.102):
// api.github.com (copilot_internal/*, release checks), and the Copilot API
// its copilot_internal/user answer names, per plan.
constexpr std::string_view kCopilotHosts[] = {
    "api.github.com",           "github.com",
    "api.githubcopilot.com",    "api.individual.githubcopilot.com",
    "api.business.githubcopilot.com", "api.enterprise.githubcopilot.com"};

// Copilot CLI 1.0.102's ~/.copilot/config.json (its comment lines aside)
// keeps the plaintext token twice: copilotTokens["<host>:<login>"] and
// authTokens["<host>:<login>:github"].token, and still reads the older
// copilot_tokens. A gho_ token does not expire: nothing refreshes it.
std::vector<SignInSecret> CopilotSecrets() {
  const std::vector<std::string_view> hosts(std::begin(kCopilotHosts), std::end(kCopilotHosts));
  return {{kCopilotFile, "copilotTokens/*", TokenRole::kAccess, hosts, {}},
          {kCopilotFile, "copilot_tokens/*", TokenRole::kAccess, hosts, {}},
          {kCopilotFile, "authTokens/*/token", TokenRole::kAccess, hosts, {}}};
}

// opencode's auth.json (and Kilo's) keys its sign-ins by provider id. The
// providers whose hosts are known here get their tokens swapped; any other
// provider's are stand-ins bound nowhere (kSecretNameEndings).
std::vector<SignInSecret> OpenCodeSecrets(std::string_view file) {
  const std::vector<std::string_view> copilot(std::begin(kCopilotHosts), std::end(kCopilotHosts));
  return {
      // The ChatGPT sign-in opencode 1.18 and Kilo 7.7 have built in: the
      // access token (a JWT) to chatgpt.com's Codex API, the refresh token
      // form-encoded to auth.openai.com (both seen in their traffic).
      {file, "openai/access", TokenRole::kAccess, {"chatgpt.com"}, {}},
      {file, "openai/refresh", TokenRole::kRefresh, {},
       {{"auth.openai.com", "/oauth/token", true, "refresh_token"}}},
      // Their GitHub Copilot sign-in keeps the gho_ token as both "refresh"
      // and "access", sent as the bearer token to the Copilot API.
      {file, "github-copilot/access", TokenRole::kAccess, copilot, {}},
      {file, "github-copilot/refresh", TokenRole::kAccess, copilot, {}},
      // An Anthropic OAuth entry comes from a third-party plugin
      // (opencode-anthropic-auth); neither build has one of its own.
      {file, "anthropic/access", TokenRole::kAccess, {"api.anthropic.com"}, {}},
      {file, "anthropic/refresh", TokenRole::kRefresh, {},
       {{"console.anthropic.com", "/v1/oauth/token", false, "refresh_token"}, {"platform.claude.com", "/v1/oauth/token", false, "refresh_token"}}},
      {file, "anthropic/key", TokenRole::kApiKey, {"api.anthropic.com"}, {}},
      {file, "openai/key", TokenRole::kApiKey, {"api.openai.com"}, {}},
      {file, "openrouter/key", TokenRole::kApiKey, {"openrouter.ai"}, {}},
  };
}

}  // namespace

const std::vector<ToolProfile>& ToolProfiles() {
  // Source: the design's FACTS.md, "The agent tools" (read 2026-08/09).
  // Credential headers: what each tool's API client sends its key in
  //   claude-code  ANTHROPIC_API_KEY as x-api-key, ANTHROPIC_AUTH_TOKEN and the
  //                sign-in's OAuth token as Authorization: Bearer (Anthropic
  //                API overview; Claude Code settings, "Environment variables")
  //   codex        OPENAI_API_KEY and the ChatGPT sign-in as Authorization:
  //                Bearer; api-key for an Azure provider (Codex config docs,
  //                "model_providers")
  //   copilot      the GitHub token as Authorization: Bearer or token
  //   opencode     per provider through the AI SDK: x-api-key (Anthropic),
  //   kilocode     Authorization: Bearer (OpenAI and compatibles, Kilo's
  //                gateway), api-key (Azure), x-goog-api-key (Google)
  // Base URLs (FACTS.md): Claude Code reads ANTHROPIC_BASE_URL, the OpenAI
  // SDKs OPENAI_BASE_URL, Kilo KILO_API_URL.
  // Seen in real sessions (tests/agents, 2026-11-30; the versions of
  // image/agents.txt): Claude Code, OpenCode and Kilo (Bun) read
  // NODE_EXTRA_CA_CERTS or SSL_CERT_FILE, Codex CODEX_CA_CERTIFICATE or
  // SSL_CERT_FILE; all five honour HTTPS_PROXY. OpenCode 1.18 fetches its
  // model catalogue from models.opencode.ai, Kilo 7.7 from models.dev.
  static const std::vector<ToolProfile> kProfiles = {
      {"claude-code",
       {"api.anthropic.com", "claude.ai", "claude.com", "platform.claude.com",
        "mcp-proxy.anthropic.com"},
       {{".claude/.credentials.json", ".credentials.json", SignInFormat::kClaudeCredentials},
        {".claude.json", ".claude.json", std::nullopt}},
       "CLAUDE_CONFIG_DIR",
       {"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE"},
       {"x-api-key", "authorization"},
       {{"ANTHROPIC_API_KEY", {"api.anthropic.com"}}},
       "ANTHROPIC_BASE_URL",
       "api.anthropic.com",
       {{kClaudeFile, "claudeAiOauth/accessToken", TokenRole::kAccess, {"api.anthropic.com"}, {}},
        {kClaudeFile, "claudeAiOauth/refreshToken", TokenRole::kRefresh, {},
         {{"platform.claude.com", "/v1/oauth/token", false, "refresh_token"},
          {"console.anthropic.com", "/v1/oauth/token", false, "refresh_token"}}}},
       {{kClaudeFile, "claudeAiOauth/expiresAt", RefreshStamp::kExpiresAtMs}}},
      {"codex",
       {"auth.openai.com", "chatgpt.com", "api.openai.com"},
       {{".codex/auth.json", "auth.json", SignInFormat::kCodexAuth}},
       "CODEX_HOME",
       {"CODEX_CA_CERTIFICATE", "SSL_CERT_FILE"},
       {"authorization", "api-key"},
       // `codex exec` 0.171 authenticates with CODEX_API_KEY; OPENAI_API_KEY
       // alone sends no key (it needs `codex login --with-api-key`). Seen
       // end to end in tests/agents.
       {{"OPENAI_API_KEY", {"api.openai.com"}}, {"CODEX_API_KEY", {"api.openai.com"}}},
       "OPENAI_BASE_URL",
       "api.openai.com/v1",
       {{kCodexFile, "OPENAI_API_KEY", TokenRole::kApiKey, {"api.openai.com"}, {}},
        {kCodexFile, "tokens/access_token", TokenRole::kAccess, {"chatgpt.com", "api.openai.com"}, {}},
        {kCodexFile, "tokens/id_token", TokenRole::kId, {}, {}},
        {kCodexFile, "tokens/refresh_token", TokenRole::kRefresh, {},
         {{"auth.openai.com", "/oauth/token", false, "refresh_token"}}}},
       {{kCodexFile, "last_refresh", RefreshStamp::kRefreshedAt}}},
      {"copilot",
       {"github.com", "api.github.com", "*.githubcopilot.com"},
       {{".copilot/config.json", "config.json", std::nullopt}},
       "COPILOT_HOME",
       {"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE"},
       {"authorization"},
       {{"GITHUB_TOKEN", {"api.github.com", "github.com"}},
        {"GH_TOKEN", {"api.github.com", "github.com"}}},
       "",
       "",
       CopilotSecrets(),
       {}},
      {"opencode",
       {"opencode.ai", "models.opencode.ai", "models.dev"},
       {{".local/share/opencode/auth.json", "opencode/auth.json", SignInFormat::kOpenCodeAuth},
        {".local/share/opencode/opencode.db", "opencode/opencode.db", std::nullopt}},
       "XDG_DATA_HOME",
       {"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE"},
       {"authorization", "x-api-key", "api-key", "x-goog-api-key"},
       {},
       "",
       "",
       OpenCodeSecrets(kOpenCodeFile),
       {{kOpenCodeFile, "*/expires", RefreshStamp::kExpiresAtMs}}},
      {"kilocode",
       {"api.kilo.ai", "models.dev"},
       {{".local/share/kilo/auth.json", "kilo/auth.json", SignInFormat::kOpenCodeAuth},
        {".kilocode/cli/config.json", "", std::nullopt}},  // legacy, never moved
       "XDG_DATA_HOME",
       {"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE"},
       {"authorization", "x-api-key", "api-key", "x-goog-api-key"},
       {{"KILO_API_KEY", {}}},
       "KILO_API_URL",
       "api.kilo.ai",
       OpenCodeSecrets(kKiloFile),
       {{kKiloFile, "*/expires", RefreshStamp::kExpiresAtMs}}},
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

// ToolProfile: what the node knows about each agent tool, as data in one
// place: its own service hosts (allowed when a policy's tool_services is on),
// its sign-in files, the variable that moves them, the CA variables it
// reads, its API-key variables and the hosts they are bound to by default,
// the variable that points its API traffic elsewhere, and the request
// headers its API keys travel in. Checked against the tools' sources and
// docs on kToolProfilesChecked; re-check against the version in use.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace mojoup::policy {

inline constexpr std::string_view kToolProfilesChecked = "2026-11-30";

// An API key the tool reads from the environment, and the hosts a
// credential of that name is bound to when given without hosts.
struct ApiKeyVariable {
  std::string_view name;                // "ANTHROPIC_API_KEY"
  std::vector<std::string_view> hosts;  // empty: no default binding
};

// The credential files that may come back to the host, by their format.
// Only pure credential files come back, and only as a refresh of the sign-in
// staged: a settings file (.claude.json holds mcpServers commands) written
// back would let an agent plant a command the host runs later, outside any
// sandbox, and a database copied over a live one can lose or corrupt it.
enum class SignInFormat {
  kClaudeCredentials,  // Claude Code's .credentials.json
  kCodexAuth,          // Codex's auth.json
  kOpenCodeAuth,       // opencode's and Kilo's auth.json
};

// One file of a tool's sign-in (FACTS.md of the design, "The agent tools").
struct ToolSignInFile {
  std::string_view home_relative;  // its default place, under the home
  // Its place under the tool's relocation variable when that is set; empty
  // when the variable does not move it.
  std::string_view under_variable;
  std::optional<SignInFormat> write_back;  // nullopt: it never comes back
};

// What a secret in a sign-in file is to the tool.
enum class TokenRole {
  kAccess,   // sent as a bearer token to the tool's API hosts
  kRefresh,  // sent only to a token endpoint, to get new tokens
  kId,       // an OpenID Connect id token: read by the tool, sent nowhere
  kApiKey,   // an API key kept in the file, sent like an access token
};

// Where a refresh token goes: one field of the body of a POST to one exact
// host and path. `form`: application/x-www-form-urlencoded, else JSON.
struct TokenEndpoint {
  std::string_view host;
  std::string_view path;
  bool form = false;
  std::string_view field = "refresh_token";
};

// How a sign-in file records a refresh besides its tokens.
enum class RefreshStamp {
  kExpiresAtMs,   // milliseconds since the epoch when the access token expires
  kRefreshedAt,   // RFC 3339 time of the refresh ("2026-12-01T10:00:00Z")
};

// A secret in a sign-in file, by its place: member names from the top joined
// by '/', "*" for any one name. The secrets of one JSON object (the member
// names' parent) are one sign-in: a token endpoint's answer renews them
// together. Any other string in the file that looks like a secret (see
// kSecretNameEndings) becomes a stand-in bound nowhere.
struct SignInSecret {
  std::string_view file;  // the ToolSignInFile's home_relative
  std::string_view path;  // "claudeAiOauth/accessToken"
  TokenRole role;
  // kAccess and kApiKey: the exact hosts it goes to, in credential headers.
  std::vector<std::string_view> hosts;
  // kRefresh: where it goes.
  std::vector<TokenEndpoint> endpoints;
};

// Bookkeeping beside a sign-in's tokens that follows what the provider
// answered a refresh with; `path` as in SignInSecret.
struct SignInStamp {
  std::string_view file;
  std::string_view path;  // "claudeAiOauth/expiresAt"
  RefreshStamp kind;
};

// Member names whose string values are secrets wherever they are in a JSON
// sign-in file, compared without case: names that end in one of
// kSecretNameEndings ("accessToken", "refresh_token", "OPENAI_API_KEY",
// "GITHUB_TOKEN" in an MCP server's env), and kSecretNames (opencode's
// "access" and "refresh"). They cover a file's unlisted secrets: an MCP
// server's OAuth tokens in Claude Code's, a provider opencode added.
inline constexpr std::string_view kSecretNameEndings[] = {"token", "key", "secret", "password"};
inline constexpr std::string_view kSecretNames[] = {"access", "refresh"};

// Prefixes of well-known secrets, taken as secrets wherever they are:
// GitHub's tokens (github.blog, "Behind GitHub's new authentication token
// formats"), Anthropic's and OpenAI's keys and tokens.
inline constexpr std::string_view kSecretPrefixes[] = {"gho_", "ghu_", "ghp_", "ghs_", "ghr_",
                                                       "github_pat_", "sk-"};

struct ToolProfile {
  std::string_view name;                        // the --tool value
  std::vector<std::string_view> service_hosts;  // exact hosts or "*.domain"
  std::vector<ToolSignInFile> sign_in_files;
  std::string_view relocation_variable;        // moves the sign-in files
  std::vector<std::string_view> ca_variables;  // where it reads extra CAs
  // Request headers (lowercase) whose value is an API key the tool sends:
  // where the credential proxy swaps a stand-in for the real key. Added to
  // kCommonCredentialHeaders.
  std::vector<std::string_view> credential_headers;
  std::vector<ApiKeyVariable> api_key_variables;
  // The variable that sends the tool's API traffic to another base URL
  // ("ANTHROPIC_BASE_URL"), and the upstream it stands for, host and path
  // ("api.openai.com/v1"); empty when the tool has none.
  std::string_view base_url_variable;
  std::string_view base_url_upstream;
  // The secrets of its sign-in files, and where each may go.
  std::vector<SignInSecret> sign_in_secrets;
  std::vector<SignInStamp> sign_in_stamps;
};

// CA variables read whatever the tool: by OpenSSL (SSL_CERT_FILE), Python
// requests, curl and git. Each names a whole trust store.
inline constexpr std::string_view kCommonCaVariables[] = {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE",
                                                          "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"};
// The CA variables (of kCommonCaVariables and the profiles' ca_variables)
// read as certificates added to the system's store rather than replacing it.
inline constexpr std::string_view kExtraCaVariables[] = {"NODE_EXTRA_CA_CERTS"};

// The request headers (lowercase) an API key travels in whatever the tool:
// what the credential proxy uses for a credential given without --tool.
//   authorization   "Bearer KEY" (RFC 6750: OpenAI, OpenRouter, Groq, Mistral,
//                   Anthropic's ANTHROPIC_AUTH_TOKEN, GitHub), "token KEY"
//                   (GitHub REST API docs, "Authenticating to the REST API"),
//                   "Basic base64(user:KEY)" (RFC 7617: git over https)
//   x-api-key       Anthropic API (docs.anthropic.com/en/api/overview)
//   api-key         Azure OpenAI (learn.microsoft.com, Azure OpenAI REST
//                   reference, "Authentication"; openai-node's AzureOpenAI)
//   x-goog-api-key  Gemini API (ai.google.dev/api, "API keys")
inline constexpr std::string_view kCommonCredentialHeaders[] = {"authorization", "x-api-key",
                                                                "api-key", "x-goog-api-key"};

// claude-code, codex, copilot, opencode, kilocode.
const std::vector<ToolProfile>& ToolProfiles();

// The profile named `name`, or nullptr.
const ToolProfile* FindToolProfile(std::string_view name);

// "claude-code, codex, copilot, opencode, kilocode", for error messages.
std::string_view ToolNames();

}  // namespace mojoup::policy

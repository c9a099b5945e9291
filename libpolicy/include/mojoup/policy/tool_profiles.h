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

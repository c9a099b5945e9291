// Sign-in files shaped like the agent tools' own (see the rules in
// libsandbox/src/staging/signin_account.cc), for one account and one refresh: refresh
// `n + 1` of an account is what the tool writes when it refreshes refresh
// `n`. Tokens are made up; JWTs are unsigned, as write-back only compares
// their claims with the staged ones.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "mojoup/credproxy/vault.h"
#include "mojoup/sandbox/signin.h"
#include "signin_tokens.h"

namespace mojoup::test {

// ~/.claude/.credentials.json. `plan` and `tier` are what the file has in
// place of an account id.
inline std::string ClaudeCredentials(const std::string& account, int n,
                                     const std::string& plan = "max",
                                     const std::string& tier = "default_claude_max_20x") {
  const std::string tag = account + "-" + std::to_string(n);
  return R"({"claudeAiOauth":{"accessToken":"sk-ant-oat01-)" + tag +
         R"(","refreshToken":"sk-ant-ort01-)" + tag + R"(","expiresAt":)" +
         std::to_string(ExpiresMs(n)) +
         R"(,"scopes":["user:inference","user:profile","user:sessions:claude_code"],)"
         R"("subscriptionType":")" +
         plan + R"(","rateLimitTier":")" + tier + R"("}})";
}

// ~/.codex/auth.json, signed in with ChatGPT.
inline std::string CodexAuth(const std::string& account, int n) {
  const std::string tag = account + "-" + std::to_string(n);
  return R"({"OPENAI_API_KEY":null,"tokens":{"id_token":")" + Jwt(OpenAiClaims(account, n)) +
         R"(","access_token":")" + Jwt(OpenAiClaims(account, n)) + R"(","refresh_token":"rt_)" +
         tag + R"(","account_id":"acct-)" + account + R"("},"last_refresh":"2026-09-0)" +
         std::to_string(n % 10) + R"(T10:00:00Z"})";
}

// opencode's (and Kilo's) auth.json: Anthropic by OAuth, OpenAI by OAuth with
// a JWT access token, OpenRouter by API key.
inline std::string OpenCodeAuth(const std::string& account, int n) {
  const std::string tag = account + "-" + std::to_string(n);
  const std::string expires = std::to_string(ExpiresMs(n));
  return R"({"anthropic":{"type":"oauth","refresh":"sk-ant-ort01-)" + tag +
         R"(","access":"sk-ant-oat01-)" + tag + R"(","expires":)" + expires +
         R"(},"openai":{"type":"oauth","refresh":"rt_)" + tag + R"(","access":")" +
         Jwt(OpenAiClaims(account, n)) + R"(","expires":)" + expires + R"(,"accountId":"acct-)" +
         account + R"("},"openrouter":{"type":"api","key":"sk-or-v1-)" + account + R"("}})";
}

// Staging as a node before stand-ins did it: the host files copied as they
// are, stand_ins false, no secrets. What such a node's records hold, and so
// what WriteBackSignIn's kept-aside path is for.
inline absl::StatusOr<sandbox::SignInStaging> StageAsBefore(std::string_view tool,
                                                           const std::string& host_home,
                                                           const sandbox::Getenv& getenv,
                                                           const std::string& staging_home) {
  credproxy::Vault vault;
  auto staging = sandbox::StageSignIn(tool, host_home, getenv, staging_home, vault);
  if (!staging.ok()) return staging;
  for (sandbox::SignInFile& file : staging->files) {
    std::ifstream in(file.host_path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    std::ofstream(file.staged_path, std::ios::binary | std::ios::trunc) << bytes.str();
    ::chmod(file.staged_path.c_str(), file.mode);
    file.stand_ins = false;
  }
  staging->secrets.clear();
  return staging;
}

}  // namespace mojoup::test

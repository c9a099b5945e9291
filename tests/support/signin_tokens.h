// Tokens shaped like the providers' own, for the sign-in tests: unsigned
// JWTs, their expiry and OpenAI's claims for an account's refresh `n`
// (signin_files.h builds the tools' sign-in files from them). No layer
// of the project: the proxy's tests use them too.
#pragma once

#include <string>

#include "absl/strings/escaping.h"

namespace mojoup::test {

// A JWT with `payload`: header.payload.signature, base64url without padding.
inline std::string Jwt(const std::string& payload) {
  return absl::WebSafeBase64Escape(R"({"alg":"RS256","typ":"JWT"})") + "." +
         absl::WebSafeBase64Escape(payload) + ".c2lnbmF0dXJl";
}

// When refresh `n`'s access token expires: eight hours after the last, in ms.
inline long long ExpiresMs(int n) { return 1790000000000LL + n * 28800000LL; }

// The claims OpenAI puts in Codex's id_token and access_token for `account`.
inline std::string OpenAiClaims(const std::string& account, int n) {
  return R"({"iss":"https://auth.openai.com","sub":"auth0|)" + account + R"(","email":")" +
         account + R"(@example.com","exp":)" + std::to_string(ExpiresMs(n) / 1000) +
         R"(,"https://api.openai.com/auth":{"chatgpt_account_id":"acct-)" + account +
         R"(","chatgpt_user_id":"user-)" + account + R"(","chatgpt_plan_type":"plus"}})";
}

}  // namespace mojoup::test

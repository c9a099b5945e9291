// The bodies of a sign-in's token refresh, apart from any I/O: the request's,
// in which the stand-in of a refresh token becomes the real one in exactly
// one field, and the provider's answer, whose new tokens become stand-ins on
// their way to the sandbox. Kept apart so that both can be tested and fuzzed
// on their own.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "mojoup/credproxy/vault.h"

namespace mojoup::credproxy {

// A request body to a token endpoint, with the refresh token's stand-in
// swapped where it belongs.
struct TokenRequest {
  enum class Outcome {
    kSwapped,    // `body` carries the real refresh token of `refresh`
    kNoStandIn,  // no stand-in anywhere: a request of the sandbox's own, sent as it is
    kRefused,    // a stand-in where it may not go, or a body the proxy cannot read
  };
  Outcome outcome = Outcome::kNoStandIn;
  std::string body;
  const Credential* refresh = nullptr;    // kSwapped
  const Credential* misplaced = nullptr;  // kRefused: the stand-in found, when one was
  std::string why;                        // kRefused: for people
};

// `body` of a POST to https://host/path, whose Content-Type is
// `content_type`. The swap is made only when the body is exactly what the
// endpoint takes (a JSON object, or form fields, with no name twice) and the
// endpoint's field holds exactly the stand-in of a live refresh token bound
// to that host and path. Any other stand-in anywhere in the body (live or
// retired, escaped in JSON or percent-encoded in a form) is refused, and so
// is a body that holds a stand-in and cannot be read.
TokenRequest SwapRefreshToken(std::string_view body, std::string_view content_type,
                              const Vault& vault, std::string_view host, std::string_view path);

// A token endpoint's JSON answer with each of its access_token,
// refresh_token and id_token strings passed through `replace` (role, real
// value -> what the sandbox gets instead), and its expires_in (seconds) when
// it has one. nullopt when the body is not a JSON object or `replace`
// refused a token (returned nullopt): the answer must then not reach the
// sandbox.
struct TokenAnswer {
  std::string body;
  std::optional<double> expires_in;
  bool had_tokens = false;
};
std::optional<TokenAnswer> ReplaceAnswerTokens(
    std::string_view body,
    const std::function<std::optional<std::string>(TokenRole, const std::string&)>& replace);

}  // namespace mojoup::credproxy

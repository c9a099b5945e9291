// Vault: the session's real secrets, kept in the proxy's memory, and the
// stand-ins the sandbox sees instead.
//
// A stand-in keeps the real key's prefix, length and alphabet, so SDKs that
// check a key's shape accept it; its other characters are drawn uniformly
// from that alphabet, so it tells nothing of the key's own letters and
// digits, not even which positions hold which:
//   real      sk-ant-api03-Xq3...9Zk   (108 characters)
//   stand-in  sk-ant-api03-7_b...Qa2   (108 characters, random, per session)
// The proxy swaps a stand-in for the real value only on the way to the hosts
// that credential is bound to, and only in credential headers; anywhere else
// the request is refused. Responses from those hosts are scrubbed: a real
// value sent back becomes the stand-in again.
//
//   Vault vault;
//   auto stand_in = vault.Add("ANTHROPIC_API_KEY", real_key, {"api.anthropic.com"});
//   env["ANTHROPIC_API_KEY"] = *stand_in;
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "mojoup/policy/tool_profiles.h"

namespace mojoup::credproxy {

using policy::TokenRole;

// Where a sign-in's refresh token may go: the `field` of the body of a POST
// to exactly https://host/path, JSON or (`form`) form-encoded.
struct TokenEndpoint {
  std::string host;
  std::string path;
  bool form = false;
  std::string field = "refresh_token";

  bool operator==(const TokenEndpoint&) const = default;
};

struct Credential {
  std::string name;                // the environment variable, "ANTHROPIC_API_KEY"
  std::string stand_in;            // what the sandbox sees
  std::vector<std::string> hosts;  // exact hosts the real value may go to, in credential headers
  // A token of a staged sign-in (AddToken): the sign-in it belongs to, what
  // it is, and for a refresh token where it may go. Empty for an API key.
  std::string sign_in;
  TokenRole role = TokenRole::kApiKey;
  std::vector<TokenEndpoint> endpoints;
  // Replaced by a refresh: still known, so that it is refused wherever it
  // turns up, and never swapped again.
  bool retired = false;

  // Whether the real value may be sent to `host`: one of its hosts, or the
  // host of one of its token endpoints.
  bool MayGoTo(std::string_view host) const;
};

// A token of a staged sign-in, for Vault::AddToken.
struct SignInToken {
  std::string name;     // unique: "codex .codex/auth.json tokens.access_token"
  std::string value;    // the real token
  std::string sign_in;  // the sign-in it belongs to; its tokens are renewed together
  TokenRole role = TokenRole::kAccess;
  std::vector<std::string> hosts;        // kAccess, kApiKey: may be empty (bound nowhere)
  std::vector<TokenEndpoint> endpoints;  // kRefresh
};

// The hosts a well-known credential is bound to when none are given:
// ANTHROPIC_API_KEY, OPENAI_API_KEY, GITHUB_TOKEN, GH_TOKEN. Empty otherwise.
std::vector<std::string> DefaultBinding(std::string_view name);

class Vault {
 public:
  // Keeps `value` and returns its stand-in. Errors: an empty or too short
  // value (under 8 characters cannot be told apart from ordinary text), one
  // with no key characters to draw a stand-in from ("--------"), no hosts, a
  // host that is not an exact host name, or a name used twice.
  absl::StatusOr<std::string> Add(const std::string& name, const std::string& value,
                                  std::vector<std::string> hosts);

  // Keeps a sign-in's token and returns its stand-in (MakeTokenStandIn).
  // Unlike Add, a token may be bound to nothing: its stand-in is then only
  // ever refused. Errors: as Add's, and a refresh token with no endpoint or
  // an endpoint that is not an exact host and an absolute path.
  absl::StatusOr<std::string> AddToken(SignInToken token);

  // A provider's new token for credential `name` (a refresh): the real value
  // becomes `value`, with a fresh stand-in shaped like it, returned; the old
  // stand-in is kept retired. Errors: no such live credential, or a value too
  // short.
  absl::StatusOr<std::string> Renew(const std::string& name, const std::string& value);

  // The credential `name` now stands for `value` (the user refreshed on the
  // host); its stand-in is unchanged. Errors: as Renew's.
  absl::Status Rebind(const std::string& name, const std::string& value);

  const std::vector<Credential>& credentials() const { return credentials_; }

  // The live credential whose stand-in `text` is exactly, bound to a token
  // endpoint at `host` and `path`; its real value in `real`. Null otherwise.
  const Credential* RefreshTokenAt(std::string_view text, std::string_view host,
                                   std::string_view path, std::string* real) const;

  // True when a live refresh token may go to `host` (at some path).
  bool IsTokenHost(std::string_view host) const;

  // The endpoint at exactly `host` and `path` of a live refresh token, or null.
  const TokenEndpoint* EndpointAt(std::string_view host, std::string_view path) const;

  // A stand-in found in a request, and what to do with it.
  struct Found {
    const Credential* credential = nullptr;
    bool bound_here = false;  // the request's host is one the credential is bound to
  };

  // Every stand-in that occurs in `text`.
  std::vector<Found> Scan(std::string_view text, std::string_view host) const;

  // The real value for `text` when `text` is exactly the stand-in of a
  // credential bound to `host`; nullopt otherwise. The proxy swaps only whole
  // credential header values (and the parts of Authorization that hold a
  // key), never text inside other text.
  std::optional<std::string> RealValue(std::string_view text, std::string_view host) const;

  // A real value as an upstream could send it back, and the same-length text
  // the sandbox sees instead: each real value itself (in any case), its hex
  // encoding, and the stretches of its base64 encoding that do not depend on
  // the bytes around it (at each of the three alignments, standard and
  // URL-safe alphabets), these also of the value in upper, lower and swapped
  // case, each against the stand-in's. The proxy scrubs every response it
  // could have carried a real value into with these, after undoing percent,
  // JSON and \x escapes.
  struct Reflection {
    std::string real;
    std::string shown;
    bool any_case = false;  // `real` is found whatever the case of its letters
  };
  std::vector<Reflection> Reflections() const;
  // Those of the real values `host` can know: the credentials that may go
  // to it, and every token of a sign-in any of whose tokens may go to it
  // (the host may be the one that issued them). A real value goes nowhere
  // else, so no other host can send it back.
  std::vector<Reflection> Reflections(std::string_view host) const;

  // True when `text` holds a real secret (for log and error redaction tests).
  bool ContainsSecret(std::string_view text) const;

 private:
  std::vector<Credential> credentials_;
  std::vector<std::string> values_;  // parallel to credentials_
};

// A random stand-in shaped like `value`: its prefix (up to the last '-' or
// '_' in its first 24 characters) kept; after it, each letter, digit, '-',
// '_', '+' and '/' replaced by one drawn uniformly from the alphabet of what
// follows the prefix ([a-z], [A-Z] and [0-9] for each class it has, [a-f] or
// [A-F] when it is hex, and those symbols it has); any other character (a '.',
// '=' padding, a space, non-ASCII) kept in place. A value whose part after
// the prefix has nothing to draw from is drawn whole.
std::string MakeStandIn(std::string_view value);

// MakeStandIn, except for a JWT (three base64url parts, the first a JSON
// object): its header and payload are kept, as tools read the claims and
// they are not secret, and its signature is drawn anew from the signature's
// alphabet.
std::string MakeTokenStandIn(std::string_view value);

}  // namespace mojoup::credproxy

#include "mojoup/credproxy/vault.h"

#include <openssl/rand.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "absl/strings/escaping.h"
#include "fmt/format.h"
#include "mojoup/policy/policy.h"
#include "mojoup/policy/tool_profiles.h"
#include "scrubber.h"

namespace mojoup::credproxy {
namespace {

constexpr std::size_t kMinSecret = 8;
constexpr std::size_t kPrefixWindow = 24;

char RandomFrom(std::string_view alphabet) {
  unsigned char byte = 0;
  // Rejection sampling keeps every character equally likely.
  const auto limit = static_cast<unsigned>(256 - 256 % alphabet.size());
  do {
    if (RAND_bytes(&byte, 1) != 1) throw std::runtime_error("RAND_bytes failed");
  } while (byte >= limit);
  return alphabet[byte % alphabet.size()];
}

// The characters a key's random part is drawn from besides letters and
// digits: those of base64 and its URL-safe form. Anything else (a '.' between
// a token's parts, '=' padding, a space, non-ASCII bytes) is the key's
// structure and stays where it is.
bool IsAlphabetSymbol(char c) { return c == '-' || c == '_' || c == '+' || c == '/'; }

bool InAlphabet(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         IsAlphabetSymbol(c);
}

// What a stand-in's random part is drawn from, uniformly: the natural
// alphabet of the key's own random part, not each position's class (which
// would hand the sandbox the key's pattern of letters and digits). [a-z],
// [A-Z] and [0-9] for each class the key has ([a-f] or [A-F] for a hex key),
// and the symbols of base64 it has.
std::string StandInAlphabet(std::string_view random_part) {
  bool lower = false, upper = false, digit = false, lower_hex = true, upper_hex = true;
  std::string others;
  for (char c : random_part) {
    if (c >= 'a' && c <= 'z') {
      lower = true;
      lower_hex = lower_hex && c <= 'f';
    } else if (c >= 'A' && c <= 'Z') {
      upper = true;
      upper_hex = upper_hex && c <= 'F';
    } else if (c >= '0' && c <= '9') {
      digit = true;
    } else if (IsAlphabetSymbol(c) && others.find(c) == std::string::npos) {
      others += c;
    }
  }
  // Hex keys stay hex: letters only up to f, and in one case.
  const bool hex = digit && (lower != upper) && (lower ? lower_hex : upper_hex);
  std::string alphabet;
  if (lower) alphabet += hex ? "abcdef" : "abcdefghijklmnopqrstuvwxyz";
  if (upper) alphabet += hex ? "ABCDEF" : "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  if (digit) alphabet += "0123456789";
  std::sort(others.begin(), others.end());
  return alphabet + others;
}

std::size_t StandInPrefix(std::string_view value) {
  std::size_t keep = 0;
  for (std::size_t i = 0; i < std::min(value.size(), kPrefixWindow); ++i) {
    if (value[i] == '-' || value[i] == '_') keep = i + 1;
  }
  // A key that is all prefix ("sk-test-") has nothing random after it: then
  // all of it is drawn.
  if (StandInAlphabet(value.substr(keep)).size() < 2) keep = 0;
  return keep;
}

}  // namespace

std::vector<std::string> DefaultBinding(std::string_view name) {
  for (const policy::ToolProfile& profile : policy::ToolProfiles()) {
    for (const policy::ApiKeyVariable& variable : profile.api_key_variables) {
      if (variable.name == name) return {variable.hosts.begin(), variable.hosts.end()};
    }
  }
  return {};
}

std::string MakeStandIn(std::string_view value) {
  const std::size_t keep = StandInPrefix(value);
  const std::string alphabet = StandInAlphabet(value.substr(keep));
  std::string out(value.substr(0, keep));
  for (std::size_t i = keep; i < value.size(); ++i) {
    const char c = value[i];
    out += alphabet.size() >= 2 && InAlphabet(c) ? RandomFrom(alphabet) : c;
  }
  return out;
}

namespace {

// "header.payload.signature", each part base64url, the header a JSON
// object: the length of "header.payload." when `value` is one, else 0.
std::size_t JwtSignedPart(std::string_view value) {
  const std::size_t first = value.find('.');
  if (first == std::string_view::npos || first == 0) return 0;
  const std::size_t second = value.find('.', first + 1);
  if (second == std::string_view::npos || second == first + 1 ||
      value.find('.', second + 1) != std::string_view::npos) {
    return 0;
  }
  for (char c : value) {
    const bool url_safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!url_safe) return 0;
  }
  std::string header;
  if (!absl::WebSafeBase64Unescape(std::string(value.substr(0, first)), &header) ||
      header.empty() || header.front() != '{') {
    return 0;
  }
  return second + 1;
}

// Each character of `part` drawn anew from the part's own alphabet.
std::string Redrawn(std::string_view part) {
  const std::string alphabet = StandInAlphabet(part);
  std::string out;
  for (char c : part) out += alphabet.size() >= 2 && InAlphabet(c) ? RandomFrom(alphabet) : c;
  return out;
}

absl::Status CheckSecret(const std::string& name, const std::string& value) {
  if (value.size() < kMinSecret) {
    return absl::InvalidArgumentError(fmt::format(
        "credential {} is {} characters long; a secret needs at least {} so that its stand-in "
        "cannot be mistaken for ordinary text",
        name, value.size(), kMinSecret));
  }
  if (StandInAlphabet(value.substr(StandInPrefix(value))).size() < 2) {
    return absl::InvalidArgumentError(fmt::format(
        "credential {} has no letters, digits or other characters of a key to draw its stand-in "
        "from",
        name));
  }
  return absl::OkStatus();
}

absl::Status CheckHosts(const std::string& name, std::vector<std::string>& hosts) {
  for (std::string& host : hosts) {
    auto normal = policy::NormalizeHostPattern(host);
    if (!normal.ok() || normal->front() == '*') {
      return absl::InvalidArgumentError(fmt::format(
          "credential {} is bound to \"{}\", which is not an exact host name", name, host));
    }
    host = *normal;
  }
  return absl::OkStatus();
}

// A stand-in for `value` that is not `value` and no stand-in already given.
std::string FreshStandIn(std::string_view value, const std::vector<Credential>& given) {
  for (;;) {
    std::string stand_in = MakeTokenStandIn(value);
    if (stand_in == value) continue;
    if (std::none_of(given.begin(), given.end(),
                     [&](const Credential& c) { return c.stand_in == stand_in; })) {
      return stand_in;
    }
  }
}

}  // namespace

std::string MakeTokenStandIn(std::string_view value) {
  const std::size_t signed_part = JwtSignedPart(value);
  if (signed_part == 0 || signed_part == value.size()) return MakeStandIn(value);
  return std::string(value.substr(0, signed_part)) + Redrawn(value.substr(signed_part));
}

absl::StatusOr<std::string> Vault::AddToken(SignInToken token) {
  if (absl::Status secret = CheckSecret(token.name, token.value); !secret.ok()) return secret;
  if (absl::Status hosts = CheckHosts(token.name, token.hosts); !hosts.ok()) return hosts;
  if (token.role == TokenRole::kRefresh && token.endpoints.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("refresh token {} has no token endpoint to go to", token.name));
  }
  for (TokenEndpoint& endpoint : token.endpoints) {
    auto normal = policy::NormalizeHostPattern(endpoint.host);
    if (!normal.ok() || normal->front() == '*' || endpoint.path.empty() ||
        endpoint.path.front() != '/' || endpoint.field.empty()) {
      return absl::InvalidArgumentError(fmt::format(
          "refresh token {} names the token endpoint \"{}{}\", which is not an exact host and "
          "an absolute path",
          token.name, endpoint.host, endpoint.path));
    }
    endpoint.host = *normal;
  }
  for (const Credential& existing : credentials_) {
    if (existing.name == token.name) {
      return absl::InvalidArgumentError(fmt::format("credential {} is given twice", token.name));
    }
  }
  Credential credential{token.name,
                        FreshStandIn(token.value, credentials_),
                        std::move(token.hosts),
                        std::move(token.sign_in),
                        token.role,
                        std::move(token.endpoints)};
  std::string stand_in = credential.stand_in;
  credentials_.push_back(std::move(credential));
  values_.push_back(std::move(token.value));
  return stand_in;
}

absl::StatusOr<std::string> Vault::Renew(const std::string& name, const std::string& value) {
  if (absl::Status secret = CheckSecret(name, value); !secret.ok()) return secret;
  for (std::size_t i = 0; i < credentials_.size(); ++i) {
    if (credentials_[i].name != name || credentials_[i].retired) continue;
    Credential old = credentials_[i];
    old.name = fmt::format("{} (replaced by a refresh)", name);
    old.hosts.clear();
    old.endpoints.clear();
    old.retired = true;
    std::string old_value = values_[i];
    credentials_[i].stand_in = FreshStandIn(value, credentials_);
    values_[i] = value;
    std::string stand_in = credentials_[i].stand_in;
    credentials_.push_back(std::move(old));
    values_.push_back(std::move(old_value));
    return stand_in;
  }
  return absl::NotFoundError(fmt::format("no live credential {} to renew", name));
}

absl::Status Vault::Rebind(const std::string& name, const std::string& value) {
  if (absl::Status secret = CheckSecret(name, value); !secret.ok()) return secret;
  for (std::size_t i = 0; i < credentials_.size(); ++i) {
    if (credentials_[i].name != name || credentials_[i].retired) continue;
    values_[i] = value;
    return absl::OkStatus();
  }
  return absl::NotFoundError(fmt::format("no live credential {} to rebind", name));
}

const Credential* Vault::RefreshTokenAt(std::string_view text, std::string_view host,
                                        std::string_view path, std::string* real) const {
  for (std::size_t i = 0; i < credentials_.size(); ++i) {
    const Credential& credential = credentials_[i];
    if (credential.retired || credential.stand_in != text) continue;
    for (const TokenEndpoint& endpoint : credential.endpoints) {
      if (endpoint.host == host && endpoint.path == path) {
        if (real != nullptr) *real = values_[i];
        return &credential;
      }
    }
  }
  return nullptr;
}

bool Vault::IsTokenHost(std::string_view host) const {
  for (const Credential& credential : credentials_) {
    if (credential.retired) continue;
    for (const TokenEndpoint& endpoint : credential.endpoints) {
      if (endpoint.host == host) return true;
    }
  }
  return false;
}

const TokenEndpoint* Vault::EndpointAt(std::string_view host, std::string_view path) const {
  for (const Credential& credential : credentials_) {
    if (credential.retired) continue;
    for (const TokenEndpoint& endpoint : credential.endpoints) {
      if (endpoint.host == host && endpoint.path == path) return &endpoint;
    }
  }
  return nullptr;
}

absl::StatusOr<std::string> Vault::Add(const std::string& name, const std::string& value,
                                       std::vector<std::string> hosts) {
  if (hosts.empty()) {
    return absl::InvalidArgumentError(fmt::format(
        "credential {} is bound to no host; name its hosts as {}=HOST[,HOST...]", name, name));
  }
  return AddToken({name, value, "", TokenRole::kApiKey, std::move(hosts), {}});
}

std::vector<Vault::Found> Vault::Scan(std::string_view text, std::string_view host) const {
  std::vector<Found> found;
  for (const Credential& credential : credentials_) {
    if (text.find(credential.stand_in) == std::string_view::npos) continue;
    bool bound =
        std::find(credential.hosts.begin(), credential.hosts.end(), host) != credential.hosts.end();
    found.push_back({&credential, bound});
  }
  return found;
}

std::optional<std::string> Vault::RealValue(std::string_view text, std::string_view host) const {
  for (std::size_t i = 0; i < credentials_.size(); ++i) {
    const Credential& credential = credentials_[i];
    if (text == credential.stand_in && std::find(credential.hosts.begin(), credential.hosts.end(),
                                                 host) != credential.hosts.end()) {
      return values_[i];
    }
  }
  return std::nullopt;
}

std::vector<Vault::Reflection> Vault::Reflections() const {
  std::vector<Reflection> out;
  for (std::size_t i = 0; i < credentials_.size(); ++i) {
    for (Scrubber::Pair& pair : ReflectedForms(values_[i], credentials_[i].stand_in)) {
      out.push_back({std::move(pair.from), std::move(pair.to), pair.any_case});
    }
  }
  return out;
}

bool Credential::MayGoTo(std::string_view host) const {
  return std::find(hosts.begin(), hosts.end(), host) != hosts.end() ||
         std::any_of(endpoints.begin(), endpoints.end(),
                     [&](const TokenEndpoint& endpoint) { return endpoint.host == host; });
}

std::vector<Vault::Reflection> Vault::Reflections(std::string_view host) const {
  std::set<std::string, std::less<>> sign_ins;
  for (const Credential& credential : credentials_) {
    if (!credential.sign_in.empty() && credential.MayGoTo(host)) {
      sign_ins.insert(credential.sign_in);
    }
  }
  std::vector<Reflection> out;
  for (std::size_t i = 0; i < credentials_.size(); ++i) {
    const Credential& credential = credentials_[i];
    if (!credential.MayGoTo(host) && !sign_ins.contains(credential.sign_in)) continue;
    for (Scrubber::Pair& pair : ReflectedForms(values_[i], credential.stand_in)) {
      out.push_back({std::move(pair.from), std::move(pair.to), pair.any_case});
    }
  }
  return out;
}

bool Vault::ContainsSecret(std::string_view text) const {
  return std::any_of(values_.begin(), values_.end(), [&](const std::string& value) {
    return text.find(value) != std::string_view::npos;
  });
}

}  // namespace mojoup::credproxy

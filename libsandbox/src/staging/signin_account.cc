#include "staging/signin_account.h"

#include <rapidjson/document.h>

#include <cstddef>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/escaping.h"
#include "fmt/format.h"
#include "mojoup/internal/bounded_json.h"
#include "staging/signin_standins.h"

namespace mojoup::sandbox {
namespace {

using Value = rapidjson::Value;

// What a field of a credential file is to write-back. A field no row names
// must come back exactly as it was staged: nothing else changes in a refresh.
enum class FieldKind {
  kAccount,  // names the account, or stands in for it: must come back as staged
  kToken,    // a token a refresh replaces; a JWT must go on naming the same account
  kExpiry,   // when the access token expires (a number); a refresh moves it later, never back
  kStamp,    // bookkeeping the tool rewrites when it refreshes
};

struct Field {
  SignInFormat format;
  std::string_view path;  // member names from the top, joined by '/'; "*" is any one name
  FieldKind kind;
  // For a refresh token, the access token beside it. Every refresh hands out
  // a new access token, so a new refresh token beside the old access token
  // did not come from a refresh: it was put there.
  std::string_view renewed_with = {};
};

// Per format, the fields that identify the account and those a refresh
// rewrites. Where each comes from:
//
// Claude Code's .credentials.json is {"claudeAiOauth": {accessToken,
// refreshToken, expiresAt (ms since the epoch), scopes, subscriptionType,
// rateLimitTier}} (anthropics/claude-code issues quote it, e.g. #34262; its
// refresh, POST /v1/oauth/token, returns a new access token, a rotated
// refresh token and a new expiry, per #53063). The file names no account, so
// the plan, its rate-limit tier and the scopes stand in: an agent holding
// another account's sign-in of the same plan and tier gets past this check.
// CLAUDE_CODE_OAUTH_TOKEN, which is never written back, avoids that.
//
// Codex's auth.json is AuthDotJson in openai/codex (codex-rs login crate,
// auth/storage.rs): OPENAI_API_KEY, auth_mode, tokens (TokenData: id_token
// and access_token are JWTs, refresh_token, account_id), last_refresh,
// agent_identity. Its refresh replaces the three tokens and last_refresh.
//
// opencode's auth.json (sst/opencode packages/opencode/src/auth/index.ts) is
// an object keyed by provider id, each {type: "oauth", refresh, access,
// expires (ms), accountId?, enterpriseUrl?}, {type: "api", key, metadata?} or
// {type: "wellknown", key, token}. Kilo's CLI is built on opencode and keeps
// the same file under its own name. A provider's refresh replaces refresh,
// access and expires; an API key is never refreshed. A provider whose tokens
// are opaque (Anthropic's) names no account in the file: another account's
// tokens for it get past this check, as with Claude Code's own file.
constexpr Field kFields[] = {
    {SignInFormat::kClaudeCredentials, "claudeAiOauth/subscriptionType", FieldKind::kAccount},
    {SignInFormat::kClaudeCredentials, "claudeAiOauth/rateLimitTier", FieldKind::kAccount},
    {SignInFormat::kClaudeCredentials, "claudeAiOauth/scopes", FieldKind::kAccount},
    {SignInFormat::kClaudeCredentials, "claudeAiOauth/accessToken", FieldKind::kToken},
    {SignInFormat::kClaudeCredentials, "claudeAiOauth/refreshToken", FieldKind::kToken,
     "accessToken"},
    {SignInFormat::kClaudeCredentials, "claudeAiOauth/expiresAt", FieldKind::kExpiry},

    {SignInFormat::kCodexAuth, "OPENAI_API_KEY", FieldKind::kAccount},
    {SignInFormat::kCodexAuth, "auth_mode", FieldKind::kAccount},
    {SignInFormat::kCodexAuth, "agent_identity", FieldKind::kAccount},
    {SignInFormat::kCodexAuth, "tokens/account_id", FieldKind::kAccount},
    {SignInFormat::kCodexAuth, "tokens/id_token", FieldKind::kToken},
    {SignInFormat::kCodexAuth, "tokens/access_token", FieldKind::kToken},
    {SignInFormat::kCodexAuth, "tokens/refresh_token", FieldKind::kToken, "access_token"},
    {SignInFormat::kCodexAuth, "last_refresh", FieldKind::kStamp},

    {SignInFormat::kOpenCodeAuth, "*/type", FieldKind::kAccount},
    {SignInFormat::kOpenCodeAuth, "*/accountId", FieldKind::kAccount},
    {SignInFormat::kOpenCodeAuth, "*/enterpriseUrl", FieldKind::kAccount},
    {SignInFormat::kOpenCodeAuth, "*/key", FieldKind::kAccount},
    {SignInFormat::kOpenCodeAuth, "*/token", FieldKind::kAccount},
    {SignInFormat::kOpenCodeAuth, "*/metadata", FieldKind::kAccount},
    {SignInFormat::kOpenCodeAuth, "*/access", FieldKind::kToken},
    {SignInFormat::kOpenCodeAuth, "*/refresh", FieldKind::kToken, "access"},
    {SignInFormat::kOpenCodeAuth, "*/expires", FieldKind::kExpiry},
};

// The claims of a JWT that say whose it is: OpenID Connect's issuer, subject
// and e-mail (OpenID Connect Core 1.0, sections 2 and 5.1), and the ChatGPT
// account and user under OpenAI's namespaced claims (codex-rs token_data.rs
// reads chatgpt_account_id and chatgpt_user_id there; the access token
// carries the profile e-mail). "" is the top of the payload.
struct Claim {
  std::string_view object;
  std::string_view name;
};
constexpr Claim kIdentityClaims[] = {
    {"", "iss"},
    {"", "sub"},
    {"", "email"},
    {"https://api.openai.com/auth", "chatgpt_account_id"},
    {"https://api.openai.com/auth", "chatgpt_user_id"},
    {"https://api.openai.com/auth", "user_id"},
    {"https://api.openai.com/profile", "email"},
};

using Path = std::vector<std::string>;

// A name from the file as the CLI may print it: printable ASCII, at most 40
// characters. The agent chose it, and it goes to the user's terminal.
std::string Shown(std::string_view name) {
  std::string shown;
  for (char c : name) {
    if (shown.size() >= 40) return shown + "...";
    if (c >= 0x20 && c < 0x7f) {
      shown += c;
    } else {
      shown += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    }
  }
  return shown;
}

std::string Shown(const Path& path) {
  if (path.empty()) return "the top level";
  std::string shown;
  for (const std::string& name : path) {
    if (!shown.empty()) shown += '.';
    shown += Shown(name);
  }
  return shown;
}

const Field* FindField(SignInFormat format, const Path& path) {
  for (const Field& field : kFields) {
    if (field.format == format && PathMatches(field.path, path)) return &field;
  }
  return nullptr;
}

std::string_view TypeName(const Value& value) {
  switch (value.GetType()) {
    case rapidjson::kNullType:
      return "null";
    case rapidjson::kFalseType:
    case rapidjson::kTrueType:
      return "a boolean";
    case rapidjson::kObjectType:
      return "an object";
    case rapidjson::kArrayType:
      return "an array";
    case rapidjson::kStringType:
      return "a string";
    case rapidjson::kNumberType:
      return "a number";
  }
  return "something else";
}

std::string_view StringOf(const Value& value) {
  return {value.GetString(), value.GetStringLength()};
}

SignInComparison Same() { return {}; }
SignInComparison OtherShape(std::string why) {
  return {SignInVerdict::kNotSignInShape, std::move(why)};
}
SignInComparison OtherAccount(std::string why) {
  return {SignInVerdict::kNotSameAccount, std::move(why)};
}

// The same kinds of value at the same places, objects with the same names,
// and no name twice (JSON parsers disagree on which of two they keep, so the
// tool could read one the check did not).
SignInComparison CompareShape(const Value& staged, const Value& refreshed, Path& path) {
  if (TypeName(staged) != TypeName(refreshed)) {
    return OtherShape(fmt::format("{} is {}, where the staged file has {}", Shown(path),
                                  TypeName(refreshed), TypeName(staged)));
  }
  if (!staged.IsObject()) return Same();
  std::set<std::string_view> names;
  for (const auto& member : refreshed.GetObject()) {
    const std::string_view name = StringOf(member.name);
    if (!names.insert(name).second) {
      return OtherShape(fmt::format("{} names \"{}\" twice", Shown(path), Shown(name)));
    }
    if (!staged.HasMember(member.name)) {
      return OtherShape(
          fmt::format("{} has \"{}\", which the staged file has not", Shown(path), Shown(name)));
    }
  }
  for (const auto& member : staged.GetObject()) {
    const auto found = refreshed.FindMember(member.name);
    if (found == refreshed.MemberEnd()) {
      return OtherShape(fmt::format("{} lacks \"{}\", which the staged file has", Shown(path),
                                    Shown(StringOf(member.name))));
    }
    path.emplace_back(StringOf(member.name));
    SignInComparison inner = CompareShape(member.value, found->value, path);
    path.pop_back();
    if (inner.verdict != SignInVerdict::kSame) return inner;
  }
  return Same();
}

// The payload of a JWT (header.payload.signature, base64url), unverified: it
// is only compared with the staged token's, which the tool itself accepted.
std::optional<rapidjson::Document> JwtPayload(std::string_view token) {
  const std::size_t first = token.find('.');
  if (first == std::string_view::npos) return std::nullopt;
  const std::size_t second = token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view encoded = token.substr(first + 1, second - first - 1);
  std::string json;
  if (!absl::WebSafeBase64Unescape(std::string(encoded), &json)) return std::nullopt;
  rapidjson::Document payload;
  if (!internal::ParseBoundedJson(json, payload, "the token's payload",
                                  {.max_bytes = kMaxSignInFileBytes})
           .ok() ||
      !payload.IsObject()) {
    return std::nullopt;
  }
  return payload;
}

const Value* ClaimOf(const Value& payload, const Claim& claim) {
  const Value* object = &payload;
  if (!claim.object.empty()) {
    const Value name(rapidjson::StringRef(claim.object.data(), claim.object.size()));
    const auto found = payload.FindMember(name);
    if (found == payload.MemberEnd() || !found->value.IsObject()) return nullptr;
    object = &found->value;
  }
  const Value name(rapidjson::StringRef(claim.name.data(), claim.name.size()));
  const auto found = object->FindMember(name);
  return found == object->MemberEnd() ? nullptr : &found->value;
}

std::string ClaimName(const Claim& claim) {
  if (claim.object.empty()) return std::string(claim.name);
  return fmt::format("{} of {}", claim.name, claim.object);
}

// A token a refresh replaced. When the staged one is a JWT that names its
// account, the new one must be a JWT naming the same account, expiring no
// earlier.
SignInComparison CompareToken(const Value& staged, const Value& refreshed, const Path& path) {
  std::optional<rapidjson::Document> before = JwtPayload(StringOf(staged));
  if (!before) return Same();  // opaque: nothing in it to compare
  bool names_account = false;
  for (const Claim& claim : kIdentityClaims) names_account |= ClaimOf(*before, claim) != nullptr;
  if (!names_account) return Same();
  std::optional<rapidjson::Document> after = JwtPayload(StringOf(refreshed));
  if (!after) {
    return OtherAccount(fmt::format(
        "{} is no longer a JWT, so it does not say it is the same account", Shown(path)));
  }
  for (const Claim& claim : kIdentityClaims) {
    const Value* was = ClaimOf(*before, claim);
    if (was == nullptr) continue;
    const Value* now = ClaimOf(*after, claim);
    if (now == nullptr || *now != *was) {
      return OtherAccount(
          fmt::format("{} names another account (its {} differs)", Shown(path), ClaimName(claim)));
    }
  }
  const Value* was = ClaimOf(*before, {"", "exp"});
  const Value* now = ClaimOf(*after, {"", "exp"});
  if (was != nullptr && was->IsNumber() &&
      (now == nullptr || !now->IsNumber() || now->GetDouble() < was->GetDouble())) {
    return OtherAccount(fmt::format(
        "{} expires earlier than the staged one, so it is no refresh of it", Shown(path)));
  }
  return Same();
}

// Walks two files of the same shape (CompareShape passed) and checks every
// value that differs against its row in kFields.
class ValueComparer {
 public:
  explicit ValueComparer(SignInFormat format) : format_(format) {}

  SignInComparison Compare(const Value& staged, const Value& refreshed, Path& path) const {
    if (staged == refreshed) return Same();
    const Field* field = FindField(format_, path);
    if (field == nullptr && staged.IsObject()) return CompareMembers(staged, refreshed, path);
    if (field == nullptr) {
      return OtherAccount(fmt::format(
          "{} differs from the staged file's, and a refresh leaves it as it is", Shown(path)));
    }
    switch (field->kind) {
      case FieldKind::kAccount:
        return OtherAccount(fmt::format("{} differs from the staged file's", Shown(path)));
      case FieldKind::kToken:
        if (!staged.IsString()) {
          return OtherShape(fmt::format("{} is {}, not a token", Shown(path), TypeName(staged)));
        }
        return CompareToken(staged, refreshed, path);
      case FieldKind::kExpiry:
        if (!staged.IsNumber()) {
          return OtherShape(fmt::format("{} is {}, not a time", Shown(path), TypeName(staged)));
        }
        if (refreshed.GetDouble() < staged.GetDouble()) {
          return OtherAccount(
              fmt::format("{} is earlier than the staged file's, and a refresh only moves it later",
                          Shown(path)));
        }
        return Same();
      case FieldKind::kStamp:
        return Same();
    }
    return Same();
  }

 private:
  SignInComparison CompareMembers(const Value& staged, const Value& refreshed, Path& path) const {
    for (const auto& member : staged.GetObject()) {
      const Value& now = refreshed.FindMember(member.name)->value;
      path.emplace_back(StringOf(member.name));
      SignInComparison inner = Compare(member.value, now, path);
      // A new refresh token needs a new access token beside it.
      if (inner.verdict == SignInVerdict::kSame && member.value != now) {
        const Field* field = FindField(format_, path);
        if (field != nullptr && !field->renewed_with.empty()) {
          const Value sibling(
              rapidjson::StringRef(field->renewed_with.data(), field->renewed_with.size()));
          const auto was = staged.FindMember(sibling);
          const auto is = refreshed.FindMember(sibling);
          if (was != staged.MemberEnd() && is != refreshed.MemberEnd() && was->value == is->value) {
            inner = OtherAccount(
                fmt::format("{} is new but {} is not, and a refresh always renews both",
                            Shown(path), Shown(field->renewed_with)));
          }
        }
      }
      path.pop_back();
      if (inner.verdict != SignInVerdict::kSame) return inner;
    }
    return Same();
  }

  SignInFormat format_;
};

std::optional<SignInComparison> Parse(std::string_view bytes, rapidjson::Document& doc,
                                      std::string_view which) {
  // Iterative and bounded: a deeply nested file must not overflow the stack.
  if (absl::Status parsed =
          internal::ParseBoundedJson(bytes, doc, which, {.max_bytes = kMaxSignInFileBytes});
      !parsed.ok()) {
    return OtherShape(std::string(parsed.message()));
  }
  if (!doc.IsObject()) {
    return OtherShape(fmt::format("{} is {}, not a JSON object", which, TypeName(doc)));
  }
  return std::nullopt;
}

}  // namespace

SignInComparison CompareSignIn(SignInFormat format, std::string_view staged,
                               std::string_view refreshed) {
  rapidjson::Document before;
  rapidjson::Document after;
  if (auto bad = Parse(staged, before, "the file staged from the host")) return *bad;
  if (auto bad = Parse(refreshed, after, "the sandbox's copy")) return *bad;
  Path path;
  if (SignInComparison shape = CompareShape(before, after, path);
      shape.verdict != SignInVerdict::kSame) {
    return shape;
  }
  return ValueComparer(format).Compare(before, after, path);
}

}  // namespace mojoup::sandbox

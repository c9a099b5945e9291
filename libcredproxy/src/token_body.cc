#include "token_body.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <set>
#include <vector>

#include "fmt/format.h"
#include "mojoup/internal/bounded_json.h"
#include "mojoup/internal/percent_encode.h"
#include "request_head.h"

namespace mojoup::credproxy {
namespace {

// The proxy holds at most 1 MiB of a token request or answer.
constexpr mojoup::internal::JsonBounds kTokenBodyBounds{.max_bytes = 1 << 20, .max_depth = 64};

using Value = rapidjson::Value;

// The media type of a Content-Type, lowercase, without parameters.
std::string MediaType(std::string_view content_type) {
  std::string lower = Lower(content_type.substr(0, content_type.find(';')));
  while (!lower.empty() && (lower.back() == ' ' || lower.back() == '\t')) lower.pop_back();
  return lower;
}

// The first stand-in (live or retired) in `text`, or null.
const Credential* AnyStandIn(const Vault& vault, std::string_view text) {
  std::vector<Vault::Found> found = vault.Scan(text, "");
  return found.empty() ? nullptr : found.front().credential;
}

TokenRequest Refused(const Credential* misplaced, std::string why) {
  TokenRequest refused;
  refused.outcome = TokenRequest::Outcome::kRefused;
  refused.misplaced = misplaced;
  refused.why = std::move(why);
  return refused;
}

TokenRequest Unswapped(std::string_view body) {
  TokenRequest sent;
  sent.body = std::string(body);
  return sent;
}

TokenRequest Swapped(std::string body, const Credential* refresh) {
  TokenRequest sent;
  sent.outcome = TokenRequest::Outcome::kSwapped;
  sent.body = std::move(body);
  sent.refresh = refresh;
  return sent;
}

std::string Serialized(const Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// True when no object in `value` names a member twice (parsers disagree on
// which of two they keep, so the provider could read one the proxy did not).
bool NoNameTwice(const Value& value) {
  if (value.IsArray()) {
    for (const Value& item : value.GetArray()) {
      if (!NoNameTwice(item)) return false;
    }
    return true;
  }
  if (!value.IsObject()) return true;
  std::set<std::string_view> names;
  for (const auto& member : value.GetObject()) {
    if (!names.insert({member.name.GetString(), member.name.GetStringLength()}).second) return false;
    if (!NoNameTwice(member.value)) return false;
  }
  return true;
}

// The JSON body with its refresh-token field swapped. The stand-in is looked
// for in the body as the provider will read it (serialized again, so that
// escapes are undone), and must be nowhere but the field.
TokenRequest SwapJson(std::string_view body, const Vault& vault, std::string_view host,
                      std::string_view path, std::string_view field) {
  rapidjson::Document doc;
  // Bounded in depth as well: NoNameTwice recurses.
  const bool parsed =
      mojoup::internal::ParseBoundedJson(body, doc, "the token request", kTokenBodyBounds).ok();
  const Credential* raw = AnyStandIn(vault, body);
  if (!parsed || !doc.IsObject() || !NoNameTwice(doc)) {
    if (raw == nullptr) return Unswapped(body);
    return Refused(raw, "in a request body that is not one JSON object with no name twice");
  }
  std::string real;
  const Credential* refresh = nullptr;
  auto member = doc.FindMember(Value(rapidjson::StringRef(field.data(), static_cast<rapidjson::SizeType>(field.size()))));
  if (member != doc.MemberEnd() && member->value.IsString()) {
    const std::string_view sent(member->value.GetString(), member->value.GetStringLength());
    refresh = vault.RefreshTokenAt(sent, host, path, &real);
    if (refresh != nullptr) member->value.SetString(real.data(), static_cast<rapidjson::SizeType>(real.size()),
                             doc.GetAllocator());
  }
  std::string swapped = Serialized(doc);
  // With the swap made, no stand-in may be left: not another field, not a
  // retired refresh token sent again.
  if (const Credential* left = AnyStandIn(vault, swapped)) {
    return Refused(left, refresh == nullptr && left->retired
                             ? "in the request body, and a refresh has already replaced it"
                             : "in the request body, where it is not swapped");
  }
  if (refresh == nullptr) return Unswapped(body);
  return Swapped(std::move(swapped), refresh);
}

// "a=1&b=2": the pairs, split but not decoded.
struct FormPair {
  std::string_view name;
  std::string_view value;
  bool has_value = false;  // "a=" rather than "a"
};
std::vector<FormPair> FormPairs(std::string_view body) {
  std::vector<FormPair> pairs;
  std::size_t start = 0;
  while (start <= body.size()) {
    std::size_t end = body.find('&', start);
    if (end == std::string_view::npos) end = body.size();
    const std::string_view pair = body.substr(start, end - start);
    const std::size_t equals = pair.find('=');
    if (!pair.empty()) {
      if (equals == std::string_view::npos) {
        pairs.push_back({pair, {}, false});
      } else {
        pairs.push_back({pair.substr(0, equals), pair.substr(equals + 1), true});
      }
    }
    start = end + 1;
  }
  return pairs;
}

std::string FormDecoded(std::string_view text) {
  std::string plus(text);
  for (char& c : plus) {
    if (c == '+') c = ' ';
  }
  return PercentDecoded(plus);
}

TokenRequest SwapForm(std::string_view body, const Vault& vault, std::string_view host,
                      std::string_view path, std::string_view field) {
  std::string swapped;
  std::string real;
  const Credential* refresh = nullptr;
  std::set<std::string> names;
  for (const FormPair& pair : FormPairs(body)) {
    const std::string name = FormDecoded(pair.name);
    const std::string value = FormDecoded(pair.value);
    if (!names.insert(name).second) {
      if (const Credential* any = AnyStandIn(vault, body)) {
        return Refused(any, fmt::format("in a form body that names \"{}\" twice", name));
      }
      return Unswapped(body);
    }
    if (!swapped.empty()) swapped += '&';
    const Credential* here =
        name == field ? vault.RefreshTokenAt(value, host, path, &real) : nullptr;
    if (here != nullptr) {
      refresh = here;
      swapped += std::string(pair.name) + "=" + internal::PercentEncode(real);
      continue;
    }
    // Decoded and as sent: a stand-in may not hide behind percent-encoding.
    for (std::string_view text : {std::string_view(name), std::string_view(value), pair.name,
                                  pair.value}) {
      if (const Credential* left = AnyStandIn(vault, text)) {
        return Refused(left, left->retired && name == field
                                 ? "in the request body, and a refresh has already replaced it"
                                 : "in the request body, where it is not swapped");
      }
    }
    swapped += pair.name;
    if (pair.has_value) swapped += "=" + std::string(pair.value);
  }
  if (refresh == nullptr) return Unswapped(body);
  return Swapped(std::move(swapped), refresh);
}

}  // namespace

TokenRequest SwapRefreshToken(std::string_view body, std::string_view content_type,
                              const Vault& vault, std::string_view host, std::string_view path) {
  // The endpoint's own encoding decides how the body is read; a body of
  // another type is read as the one it says it is, so that a stand-in is
  // found in it whichever it is.
  const TokenEndpoint* endpoint = vault.EndpointAt(host, path);
  const std::string type = MediaType(content_type);
  const std::string field = endpoint ? endpoint->field : "refresh_token";
  const bool form = type == "application/x-www-form-urlencoded";
  const bool json = type == "application/json" || (type.size() > 5 && type.ends_with("+json"));
  if (endpoint != nullptr && form == endpoint->form && (form || json)) {
    return form ? SwapForm(body, vault, host, path, field)
                : SwapJson(body, vault, host, path, field);
  }
  // Not what the endpoint takes: nothing is swapped, and a stand-in anywhere
  // in it (escaped or encoded too) is refused.
  TokenRequest read = form ? SwapForm(body, vault, "", "", field) : SwapJson(body, vault, "", "", field);
  if (read.outcome == TokenRequest::Outcome::kRefused) return read;
  if (const Credential* any = AnyStandIn(vault, body)) {
    return Refused(any, "in a request body the token endpoint does not take");
  }
  return Unswapped(body);
}

std::optional<TokenAnswer> ReplaceAnswerTokens(
    std::string_view body,
    const std::function<std::optional<std::string>(TokenRole, const std::string&)>& replace) {
  rapidjson::Document doc;
  if (!mojoup::internal::ParseBoundedJson(body, doc, "the token answer", kTokenBodyBounds).ok() ||
      !doc.IsObject() || !NoNameTwice(doc)) {
    return std::nullopt;
  }
  static constexpr std::pair<const char*, TokenRole> kFields[] = {
      {"access_token", TokenRole::kAccess},
      {"refresh_token", TokenRole::kRefresh},
      {"id_token", TokenRole::kId},
  };
  TokenAnswer answer;
  for (const auto& [name, role] : kFields) {
    auto member = doc.FindMember(name);
    if (member == doc.MemberEnd() || !member->value.IsString()) continue;
    std::optional<std::string> shown =
        replace(role, std::string(member->value.GetString(), member->value.GetStringLength()));
    if (!shown) return std::nullopt;
    member->value.SetString(shown->data(), static_cast<rapidjson::SizeType>(shown->size()),
                           doc.GetAllocator());
    answer.had_tokens = true;
  }
  auto expires = doc.FindMember("expires_in");
  if (expires != doc.MemberEnd() && expires->value.IsNumber()) {
    answer.expires_in = expires->value.GetDouble();
  }
  answer.body = Serialized(doc);
  return answer;
}

}  // namespace mojoup::credproxy

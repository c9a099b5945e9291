#include "request_head.h"

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/beast/core/detail/base64.hpp>

#include "mojoup/internal/host_port.h"
#include "mojoup/policy/network_rules.h"

namespace mojoup::credproxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

std::string DecodeBase64(std::string_view text) {
  // Beast's decoder writes up to two bytes past decoded_size() when the input
  // is not a multiple of four long (as in a malformed header): leave room.
  std::string decoded(beast::detail::base64::decoded_size(text.size()) + 3, '\0');
  auto used = beast::detail::base64::decode(decoded.data(), text.data(), text.size());
  decoded.resize(used.first);
  return decoded;
}

}  // namespace

std::optional<std::pair<std::string, std::uint16_t>> SplitHostPort(std::string_view text,
                                                                   std::uint16_t default_port,
                                                                   bool allow_zero) {
  auto parsed = internal::SplitHostPort(text, default_port, allow_zero);
  if (!parsed) return std::nullopt;
  // One spelling for every decision (rules, pins, bindings, interception).
  auto canonical = policy::CanonicalHost(parsed->host);
  if (!canonical) return std::nullopt;
  return std::make_pair(*canonical, parsed->port);
}

std::string WithoutBrackets(const std::string& host) {
  if (host.size() > 2 && host.front() == '[') return host.substr(1, host.size() - 2);
  return host;
}

bool IsIpLiteral(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(WithoutBrackets(host), ec);
  return !ec;
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  return out;
}

namespace {

bool StartsWithNoCase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && Lower(text.substr(0, prefix.size())) == prefix;
}

std::string EncodeBase64(std::string_view text) {
  std::string encoded(beast::detail::base64::encoded_size(text.size()), '\0');
  encoded.resize(beast::detail::base64::encode(encoded.data(), text.data(), text.size()));
  return encoded;
}

}  // namespace

std::string PercentDecoded(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

namespace {

// One field's value split into where a key may be and what is around it.
struct KeyPlaces {
  enum class Form { kWhole, kToken, kBasic } form = Form::kWhole;
  std::string scheme;    // "Bearer " as written, for kToken and kBasic
  std::string token;     // kWhole: the value; kToken: what follows the scheme
  std::string user;      // kBasic, decoded
  std::string password;  // kBasic, decoded; empty with no ':'
  bool has_colon = false;
};

KeyPlaces SplitKeyPlaces(bool authorization, std::string_view value) {
  KeyPlaces places;
  places.token = std::string(value);
  if (!authorization) return places;
  const std::size_t space = value.find(' ');
  if (space == std::string_view::npos) return places;
  const std::string scheme = Lower(value.substr(0, space));
  std::size_t rest = space;
  while (rest < value.size() && (value[rest] == ' ' || value[rest] == '\t')) ++rest;
  if (scheme == "bearer" || scheme == "token") {
    places.form = KeyPlaces::Form::kToken;
    places.scheme = std::string(value.substr(0, rest));
    places.token = std::string(value.substr(rest));
  } else if (scheme == "basic") {
    places.form = KeyPlaces::Form::kBasic;
    places.scheme = std::string(value.substr(0, rest));
    places.token = std::string(value.substr(rest));
    const std::string decoded = DecodeBase64(places.token);
    const std::size_t colon = decoded.find(':');
    places.has_colon = colon != std::string::npos;
    places.user = decoded.substr(0, colon);
    if (places.has_colon) places.password = decoded.substr(colon + 1);
  }
  return places;
}

bool IsCredentialHeader(const std::string& lower_name,
                        const std::vector<std::string>& credential_headers) {
  return std::find(credential_headers.begin(), credential_headers.end(), lower_name) !=
         credential_headers.end();
}

}  // namespace

bool IsReflectingMethod(const http::request_header<>& header) {
  auto reflecting = [](std::string_view method) {
    const std::string lower = Lower(method);
    return lower == "trace" || lower == "track";
  };
  if (reflecting(std::string_view(header.method_string().data(), header.method_string().size()))) {
    return true;
  }
  for (const char* name : {"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"}) {
    auto range = header.equal_range(name);
    for (auto it = range.first; it != range.second; ++it) {
      if (reflecting(std::string_view(it->value().data(), it->value().size()))) return true;
    }
  }
  return false;
}

bool SameAuthority(std::string_view authority, const std::string& host, std::uint16_t port,
                   std::uint16_t default_port) {
  auto parsed = SplitHostPort(authority, default_port);
  if (!parsed) return false;
  auto strip_dot = [](std::string name) {
    if (name.size() > 1 && name.back() == '.') name.pop_back();
    return name;
  };
  return strip_dot(parsed->first) == strip_dot(Lower(host)) && parsed->second == port;
}

AuthorityCheck CheckAuthority(const http::request_header<>& header, const std::string& host,
                              std::uint16_t port) {
  AuthorityCheck check;
  const std::string target = Str(header.target());
  if (!target.empty() && target.front() == '/') {
    check.origin = target;
  } else if (target == "*" && header.method() == http::verb::options) {
    check.origin = target;
  } else if (StartsWithNoCase(target, "https://") || StartsWithNoCase(target, "http://")) {
    const bool https = StartsWithNoCase(target, "https://");
    const std::string scheme = https ? "https://" : "http://";
    auto parsed =
        ParseAbsoluteTarget(Lower(target.substr(0, scheme.size())) + target.substr(scheme.size()),
                            scheme, https ? 443 : 80);
    const std::size_t end = target.find_first_of("/?#", scheme.size());
    const std::string authority = target.substr(scheme.size(), end - scheme.size());
    if (!parsed) {
      // Userinfo or a bad port: not the host this tunnel was opened to.
      check.named = "the target's authority " + authority;
      return check;
    }
    if (!SameAuthority(authority, host, port, https ? 443 : 80)) {
      check.named = "the target's authority " + authority;
      return check;
    }
    check.origin = parsed->origin;
  } else {
    check.malformed = true;
    return check;
  }
  auto hosts = header.equal_range(http::field::host);
  const auto count = std::distance(hosts.first, hosts.second);
  if (count > 1) {
    check.named = "two Host headers";
  } else if (count == 1) {
    const std::string value = Str(hosts.first->value());
    if (!SameAuthority(value, host, port, 443)) check.named = "Host: " + value;
  }
  return check;
}

std::optional<Misplaced> FindMisplacedStandIn(const http::request_header<>& header,
                                              const Vault& vault, const std::string& host,
                                              const std::vector<std::string>& credential_headers,
                                              bool swap) {
  auto first = [&](const std::string& text, const std::string& where) -> std::optional<Misplaced> {
    auto found = vault.Scan(text, host);
    if (found.empty()) return std::nullopt;
    return Misplaced{found.front().credential, where, found.front().bound_here};
  };
  const std::string target = Str(header.target());
  if (auto found = first(target + "\n" + PercentDecoded(target), "the request target")) {
    return found;
  }
  for (const auto& field : header) {
    const std::string name = Str(field.name_string());
    const std::string value = Str(field.value());
    if (auto found = first(name, "the name of header " + name)) return found;
    const std::string lower = Lower(name);
    // What of this field is not a key in its place: all of it, unless it is
    // a credential header whose key part is exactly a stand-in bound here.
    std::string rest = value;
    // Basic credentials are decoded in any header: Proxy-Authorization, or
    // one an upstream reads as Authorization under another name.
    const KeyPlaces decoded = SplitKeyPlaces(true, value);
    if (decoded.form == KeyPlaces::Form::kBasic) {
      rest += "\n" + decoded.user + (decoded.has_colon ? ":" + decoded.password : "");
    }
    if (swap && IsCredentialHeader(lower, credential_headers)) {
      auto swappable = [&](const std::string& part) {
        return vault.RealValue(part, host).has_value();
      };
      // As SwapStandIns reads the field.
      const KeyPlaces places = SplitKeyPlaces(lower == "authorization", value);
      if (places.form == KeyPlaces::Form::kBasic) {
        const bool user = swappable(places.user);
        const bool password = places.has_colon && swappable(places.password);
        if (user || password) {
          rest = (user ? "" : places.user) + "\n" + (password ? "" : places.password);
        }
      } else if (swappable(places.token)) {
        rest = places.scheme;
      }
    }
    if (auto found = first(rest, "header " + name)) return found;
  }
  return std::nullopt;
}

namespace {

// Notes the name of the credential whose stand-in `text` is, once.
void NoteSwapped(const Vault& vault, std::string_view text, std::vector<std::string>* swapped) {
  if (swapped == nullptr) return;
  for (const Credential& credential : vault.credentials()) {
    if (credential.stand_in != text) continue;
    if (std::find(swapped->begin(), swapped->end(), credential.name) == swapped->end()) {
      swapped->push_back(credential.name);
    }
    return;
  }
}

}  // namespace

std::vector<Scrubber::Pair> SwapStandIns(http::request_header<>& header, const Vault& vault,
                                         const std::string& host,
                                         const std::vector<std::string>& credential_headers,
                                         std::vector<std::string>* swapped) {
  std::vector<Scrubber::Pair> basics;
  std::vector<std::pair<std::string, std::string>> fields;
  bool changed = false;
  for (const auto& field : header) {
    const std::string name = Str(field.name_string());
    std::string value = Str(field.value());
    const std::string lower = Lower(name);
    if (IsCredentialHeader(lower, credential_headers)) {
      const KeyPlaces places = SplitKeyPlaces(lower == "authorization", value);
      if (places.form == KeyPlaces::Form::kBasic) {
        auto user = vault.RealValue(places.user, host);
        auto password = places.has_colon ? vault.RealValue(places.password, host) : std::nullopt;
        if (user) NoteSwapped(vault, places.user, swapped);
        if (password) NoteSwapped(vault, places.password, swapped);
        if (user || password) {
          const std::string sep = places.has_colon ? ":" : "";
          const std::string real = EncodeBase64((user ? *user : places.user) + sep +
                                                (password ? *password : places.password));
          basics.push_back({real, EncodeBase64(places.user + sep + places.password)});
          value = places.scheme + real;
        }
      } else if (auto real = vault.RealValue(places.token, host)) {
        NoteSwapped(vault, places.token, swapped);
        value = places.scheme + *real;
      }
    }
    changed = changed || value != Str(field.value());
    fields.emplace_back(name, std::move(value));
  }
  if (!changed) return basics;
  for (const auto& [name, value] : fields) header.erase(name);
  for (const auto& [name, value] : fields) header.insert(name, value);
  return basics;
}

void DropProxyHeaders(http::request_header<>& header) {
  header.erase("Proxy-Authorization");
  header.erase("Proxy-Connection");
}

namespace {

// "host[:port][/path]" (what follows the scheme, or the base-URL's first
// slash) into host, port and origin-form path; userinfo is refused.
std::optional<AbsoluteTarget> SplitAuthorityPath(std::string_view rest,
                                                 std::uint16_t default_port) {
  const std::size_t end = rest.find_first_of("/?#");
  const std::string_view authority = rest.substr(0, end);
  if (authority.find('@') != std::string_view::npos) return std::nullopt;
  auto parsed = SplitHostPort(authority, default_port);
  if (!parsed) return std::nullopt;
  AbsoluteTarget target{parsed->first, parsed->second,
                        end == std::string_view::npos ? "/" : std::string(rest.substr(end))};
  if (target.origin.front() != '/') target.origin = "/" + target.origin;
  return target;
}

}  // namespace

std::optional<AbsoluteTarget> ParseAbsoluteTarget(std::string_view target, std::string_view scheme,
                                                  std::uint16_t default_port) {
  if (target.substr(0, scheme.size()) != scheme) return std::nullopt;
  return SplitAuthorityPath(target.substr(scheme.size()), default_port);
}

std::optional<AbsoluteTarget> ParseBaseUrlTarget(std::string_view target) {
  if (target.size() < 2 || target.front() != '/') return std::nullopt;
  return SplitAuthorityPath(target.substr(1), 443);
}

}  // namespace mojoup::credproxy

#include "request_head.h"

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core/detail/base64.hpp>

#include "mojoup/policy/network_rules.h"

namespace mojoup::sandbox::credproxy {

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
  std::string host;
  std::string_view rest;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = std::string(text.substr(0, close + 1));
    rest = text.substr(close + 1);
  } else {
    auto colon = text.find(':');
    host = std::string(text.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : text.substr(colon);
  }
  std::uint16_t port = default_port;
  if (!rest.empty()) {
    if (rest.front() != ':' || rest.size() < 2 || rest.size() > 6) return std::nullopt;
    unsigned long value = 0;
    for (char c : rest.substr(1)) {
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + static_cast<unsigned long>(c - '0');
    }
    if ((value == 0 && !allow_zero) || value > 65535) return std::nullopt;
    port = static_cast<std::uint16_t>(value);
  }
  // One spelling for every decision (rules, pins, bindings, interception).
  auto canonical = policy::CanonicalHost(host);
  if (!canonical) return std::nullopt;
  return std::make_pair(*canonical, port);
}

std::string Bare(const std::string& host) {
  if (host.size() > 2 && host.front() == '[') return host.substr(1, host.size() - 2);
  return host;
}

bool IsIpLiteral(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(Bare(host), ec);
  return !ec;
}

std::string Visible(const http::request_header<>& header) {
  std::string text = Str(header.target());
  for (const auto& field : header) {
    text += '\n';
    text += Str(field.value());
    std::string_view value(field.value().data(), field.value().size());
    if (value.size() > 6 && (value.substr(0, 6) == "Basic " || value.substr(0, 6) == "basic ")) {
      text += '\n' + DecodeBase64(value.substr(6));
    }
  }
  return text;
}

void Substitute(http::request_header<>& header, const Vault& vault, const std::string& host) {
  header.target(vault.Substitute(Str(header.target()), host));
  std::vector<std::pair<std::string, std::string>> fields;
  bool changed = false;
  for (const auto& field : header) {
    std::string value = Str(field.value());
    if (value.size() > 6 &&
        (value.compare(0, 6, "Basic ") == 0 || value.compare(0, 6, "basic ") == 0)) {
      std::string decoded = DecodeBase64(std::string_view(value).substr(6));
      std::string swapped = vault.Substitute(decoded, host);
      if (swapped != decoded) {
        std::string encoded(beast::detail::base64::encoded_size(swapped.size()), '\0');
        encoded.resize(
            beast::detail::base64::encode(encoded.data(), swapped.data(), swapped.size()));
        value = value.substr(0, 6) + encoded;
      }
    }
    value = vault.Substitute(value, host);
    changed = changed || value != Str(field.value());
    fields.emplace_back(Str(field.name_string()), std::move(value));
  }
  if (!changed) return;
  for (const auto& [name, value] : fields) header.erase(name);
  for (const auto& [name, value] : fields) header.insert(name, value);
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

std::optional<AbsoluteTarget> ParseAbsoluteTarget(std::string_view target) {
  constexpr std::string_view kScheme = "http://";
  if (target.substr(0, kScheme.size()) != kScheme) return std::nullopt;
  return SplitAuthorityPath(target.substr(kScheme.size()), 80);
}

std::optional<AbsoluteTarget> ParseBaseUrlTarget(std::string_view target) {
  if (target.size() < 2 || target.front() != '/') return std::nullopt;
  return SplitAuthorityPath(target.substr(1), 443);
}

}  // namespace mojoup::sandbox::credproxy

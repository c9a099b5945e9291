// libFuzzer target: the credential proxy's request path without the sockets.
// The bytes are a request head as a client would send it; Beast parses it,
// then the proxy's own steps run: target parsing, the authority check, the
// search for misplaced stand-ins and the swap. Invariants: a request the
// search lets through to a host the credential is not bound to never gains
// the real secret; to the bound host, the secret appears only in credential
// headers, never in the target or another header.
#include <algorithm>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

#include "request_head.h"

namespace {

using mojoup::credproxy::Vault;

const std::string kSecret = "sk-ant-api03-REALREALREALREAL0123456789";

Vault& TheVault() {
  static Vault* vault = [] {
    auto* v = new Vault();
    (void)v->Add("ANTHROPIC_API_KEY", kSecret, {"api.anthropic.com"});
    return v;
  }();
  return *vault;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace http = boost::beast::http;
  Vault& vault = TheVault();
  const std::string& stand_in = vault.credentials().front().stand_in;
  // Let the fuzzer say "the stand-in" with a byte that no header may hold.
  std::string text(reinterpret_cast<const char*>(data), size);
  for (std::size_t at = text.find('\x01'); at != std::string::npos; at = text.find('\x01', at)) {
    text.replace(at, 1, stand_in);
    at += stand_in.size();
  }
  http::request_parser<http::empty_body> parser;
  parser.header_limit(64 * 1024);
  parser.eager(false);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(text), ec);
  if (ec || !parser.is_header_done()) return 0;
  auto& request = parser.get();
  const std::string target = mojoup::credproxy::Str(request.target());
  if (request.method() == http::verb::connect) {
    (void)mojoup::credproxy::SplitHostPort(target, 0);
  } else {
    (void)mojoup::credproxy::ParseAbsoluteTarget(target);
  }
  const std::vector<std::string> headers = {"authorization", "x-api-key", "api-key",
                                            "x-goog-api-key"};
  (void)mojoup::credproxy::CheckAuthority(request, "api.anthropic.com", 443);
  (void)mojoup::credproxy::IsReflectingMethod(request);
  auto holds_secret = [](const http::request_header<>& header, bool credential_headers_too,
                         const std::vector<std::string>& names) {
    if (mojoup::credproxy::Str(header.target()).find(kSecret) != std::string::npos) {
      return true;
    }
    for (const auto& field : header) {
      std::string name = mojoup::credproxy::Str(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const bool credential = std::find(names.begin(), names.end(), name) != names.end();
      if (credential && !credential_headers_too) continue;
      if (mojoup::credproxy::Str(field.value()).find(kSecret) != std::string::npos ||
          name.find(kSecret) != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  for (const char* host : {"evil.example", "api.anthropic.com"}) {
    const bool bound = std::string(host) == "api.anthropic.com";
    http::request_header<> copy = request;
    if (mojoup::credproxy::FindMisplacedStandIn(copy, vault, host, headers, bound)) {
      continue;  // refused: never forwarded
    }
    const bool had_secret = holds_secret(request, true, headers);
    mojoup::credproxy::SwapStandIns(copy, vault, host, headers);
    mojoup::credproxy::DropProxyHeaders(copy);
    if (!had_secret && holds_secret(copy, !bound, headers)) __builtin_trap();
  }
  return 0;
}

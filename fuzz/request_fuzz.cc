// libFuzzer target: the credential proxy's request path without the sockets.
// The bytes are a request head as a client would send it; Beast parses it,
// then the proxy's own steps run: target parsing, the stand-in scan and the
// substitution. Invariants: a request to a host the credential is not bound
// to never gains the real secret, and one to the bound host keeps no stand-in
// where it was visible.
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

#include "request_head.h"

namespace {

using mojoup::sandbox::credproxy::Vault;

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
  const std::string target = mojoup::sandbox::credproxy::Str(request.target());
  if (request.method() == http::verb::connect) {
    (void)mojoup::sandbox::credproxy::SplitHostPort(target, 0);
  } else {
    (void)mojoup::sandbox::credproxy::ParseAbsoluteTarget(target);
  }
  for (const char* host : {"evil.example", "api.anthropic.com"}) {
    http::request_header<> copy = request;
    (void)vault.Scan(mojoup::sandbox::credproxy::Visible(copy), host);
    mojoup::sandbox::credproxy::Substitute(copy, vault, host);
    mojoup::sandbox::credproxy::DropProxyHeaders(copy);
    const std::string after = mojoup::sandbox::credproxy::Visible(copy);
    const bool bound = std::string(host) == "api.anthropic.com";
    const bool had_secret =
        mojoup::sandbox::credproxy::Visible(request).find(kSecret) != std::string::npos;
    if (!bound && !had_secret && after.find(kSecret) != std::string::npos) __builtin_trap();
  }
  return 0;
}

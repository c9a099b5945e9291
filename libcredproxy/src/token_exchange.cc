// Sign-ins: a staged sign-in's tokens are in the vault, and the sandbox has
// stand-ins for them. An access token's stand-in is swapped in the
// credential headers to its hosts like an API key's; a refresh token's only
// in its field of a token request to its endpoint, whose answer is read here
// whole: the provider's new tokens go into the vault, and the sandbox gets
// fresh stand-ins for them.

// g++ 12 takes an Asio coroutine frame's sized operator delete for a
// mismatch with its operator new when a coroutine has several suspension
// points inside conditionals (GCC bug 109224, fixed in 13).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include <algorithm>
#include <set>

#include "forward.h"
#include "framed_io.h"
#include "response_head.h"
#include "token_body.h"

namespace mojoup::credproxy {
namespace {

// A token request's body is a few hundred bytes; its answer a few KiB.
constexpr std::uint64_t kTokenRequestLimit = 64 * 1024;
constexpr std::uint64_t kTokenAnswerLimit = 1024 * 1024;

std::string OriginPath(const http::request_header<>& header) {
  const std::string target = Str(header.target());
  return target.substr(0, target.find('?'));
}

}  // namespace

std::optional<Refusal> Proxy::Impl::CheckSignIns(const http::request_header<>& header,
                                                 const std::string& host, std::uint16_t port) {
  if (!options.check_sign_in) return std::nullopt;
  std::set<std::string> sign_ins;
  for (const Credential& credential : options.vault.credentials()) {
    if (credential.sign_in.empty() || credential.retired) continue;
    if (credential.MayGoTo(host)) sign_ins.insert(credential.sign_in);
  }
  for (const std::string& sign_in : sign_ins) {
    SignInCheck check = options.check_sign_in(sign_in);
    if (check.state == SignInCheck::State::kStale) {
      stale_sign_ins[sign_in] = check.why;
    } else if (check.state == SignInCheck::State::kRenewed) {
      stale_sign_ins.erase(sign_in);
      for (const auto& [name, value] : check.tokens) {
        if (!options.vault.Rebind(name, value).ok()) stale_sign_ins[sign_in] = check.why;
      }
      VaultChanged();
    }
  }
  if (stale_sign_ins.empty()) return std::nullopt;
  // Only a request that would use a stale sign-in's token is refused.
  std::string head = Str(header.target());
  for (const auto& field : header) head += "\n" + Str(field.value());
  for (const Vault::Found& found : options.vault.Scan(head, host)) {
    auto stale = stale_sign_ins.find(found.credential->sign_in);
    if (stale != stale_sign_ins.end()) return Refusal::SignInStale(host, port, stale->first, stale->second);
  }
  return std::nullopt;
}

bool Proxy::Impl::IsTokenRequest(const http::request_header<>& header,
                                 const std::string& host) const {
  return header.method() == http::verb::post &&
         options.vault.EndpointAt(host, OriginPath(header)) != nullptr;
}

std::optional<std::string> Proxy::Impl::CaptureRefresh(const Credential& refresh,
                                                       std::string& body) {
  const std::string sign_in = refresh.sign_in;
  TokenRefresh renewed{sign_in, {}, std::nullopt};
  std::string error;
  auto replace = [&](TokenRole role, const std::string& value) -> std::optional<std::string> {
    for (const Credential& credential : options.vault.credentials()) {
      if (credential.sign_in != sign_in || credential.retired || credential.role != role) continue;
      const std::string name = credential.name;
      absl::StatusOr<std::string> stand_in = options.vault.Renew(name, value);
      if (!stand_in.ok()) {
        error = std::string(stand_in.status().message());
        return std::nullopt;
      }
      renewed.tokens.push_back({name, role, value});
      return *stand_in;
    }
    // A token of a kind the sign-in did not have: bound to nothing.
    absl::StatusOr<std::string> stand_in = options.vault.AddToken(
        {fmt::format("{} {} #{}", sign_in, role == TokenRole::kId ? "id token" : "token",
                     options.vault.credentials().size()),
         value, sign_in, role, {}, {}});
    if (!stand_in.ok()) {
      error = std::string(stand_in.status().message());
      return std::nullopt;
    }
    return *stand_in;
  };
  std::optional<TokenAnswer> answer = ReplaceAnswerTokens(body, replace);
  if (!answer) {
    VaultChanged();
    return error.empty() ? "the token endpoint's answer is not one JSON object" : error;
  }
  renewed.expires_in = answer->expires_in;
  body = std::move(answer->body);
  VaultChanged();
  if (!renewed.tokens.empty() && options.on_refresh) options.on_refresh(renewed);
  return std::nullopt;
}

awaitable<bool> Proxy::Impl::ExchangeToken(Intercepted& connection,
                                           http::request_parser<http::buffer_body>& head,
                                           AuditRecord& record) {
  AnyStream& tls = connection.client;
  const std::string& host = connection.host;
  const std::uint16_t port = connection.port;
  const unsigned version = head.get().version();
  beast::error_code ec;
  std::string body;
  // The body is held whole: a length over the limit is refused before a
  // byte of it is read, and a chunked one as soon as it passes the limit.
  if (head.content_length().value_or(0) > kTokenRequestLimit) {
    ec = http::error::body_limit;
  } else {
    TouchIntercepted(connection);
    co_await ReadCapped(tls, connection.buffer, head, kTokenRequestLimit, body, ec);
  }
  if (ec) {
    record.Finish("error", "", fmt::format("reading the token request: {}", ec.message()));
    co_await RespondError(tls, ec == http::error::body_limit ? http::status::payload_too_large
                                                            : http::status::bad_request,
                          fmt::format("a token request's body is at most {} bytes and complete",
                                      kTokenRequestLimit),
                          version);
    co_return false;
  }
  http::request<http::string_body> request{std::move(head.get().base()), std::move(body)};
  const std::string path = OriginPath(request);
  TokenRequest swap = SwapRefreshToken(request.body(), Str(request[http::field::content_type]),
                                       options.vault, host, path);
  if (swap.outcome == TokenRequest::Outcome::kRefused) {
    Refusal refusal =
        swap.misplaced ? Refusal::TokenMisplaced(host, port, *swap.misplaced, swap.why)
                       : Refusal::BlockedByPolicy(host, port, swap.why);
    co_await RefuseIntercepted(connection, refusal, record, version);
    co_return false;
  }
  if (swap.refresh != nullptr) {
    if (auto stale = stale_sign_ins.find(swap.refresh->sign_in); stale != stale_sign_ins.end()) {
      co_await RefuseIntercepted(connection, Refusal::SignInStale(host, port, stale->first, stale->second),
                                 record, version);
      co_return false;
    }
  }
  if (swap.refresh != nullptr && std::find(record.credentials.begin(), record.credentials.end(),
                                           swap.refresh->name) == record.credentials.end()) {
    record.credentials.push_back(swap.refresh->name);
  }
  // The refresh credential may move in the vault when the answer renews it.
  const std::optional<Credential> refresh =
      swap.refresh ? std::optional<Credential>(*swap.refresh) : std::nullopt;
  request.body() = std::move(swap.body);
  request.erase(http::field::expect);  // the body goes whole, at once
  request.set(http::field::accept_encoding, "identity");
  Reframe(request, Framing::OfLength(request.body().size()), request.keep_alive());
  if (!co_await DialIntercepted(connection, record, version)) co_return false;
  TouchIntercepted(connection);
  AnyStream up = Erase(*connection.up);
  co_await WriteMessage(up, request, ec);
  record.bytes_up += request.body().size();
  std::optional<http::response<http::string_body>> response;
  if (!ec) response = co_await ReadTokenAnswer(connection, ec);
  // Why the answer cannot go on to the sandbox, if it cannot.
  std::string failure;
  std::string codings;
  if (ec || !response) {
    failure = ec == http::error::body_limit
                  ? fmt::format("{}:{} answered the token request with more than {} bytes", host,
                                port, kTokenAnswerLimit)
                  : fmt::format("{}:{} sent no valid answer to the token request: {}", host, port,
                                ec ? ec.message() : std::string("its length is ambiguous"));
  } else if (CodingOf(*response, codings) != BodyCoding::kIdentity) {
    failure = fmt::format(
        "{}:{} answered the token request coded as \"{}\", though asked for none; the proxy "
        "reads tokens only in plain bodies",
        host, port, codings);
  } else if (refresh && response->result_int() / 100 == 2) {
    if (std::optional<std::string> why = CaptureRefresh(*refresh, response->body())) {
      failure = fmt::format(
          "{}:{} answered the refresh with tokens the proxy cannot keep out of the sandbox: {}",
          host, port, *why);
    }
  }
  if (!failure.empty()) {
    record.Finish("error", "", failure);
    co_await RespondError(tls, http::status::bad_gateway, failure, version);
    co_return false;
  }
  co_return co_await ReturnTokenAnswer(connection, request.keep_alive(), *response,
                                       refresh.has_value(), record);
}

awaitable<std::optional<http::response<http::string_body>>> Proxy::Impl::ReadTokenAnswer(
    Intercepted& connection, beast::error_code& ec) {
  AnyStream up = Erase(*connection.up);
  for (;;) {
    http::response_parser<http::buffer_body> answer;
    TouchIntercepted(connection);
    const Framing framing =
        co_await ReadHead(up, connection.up_buffer, answer, options.header_limit, false, ec);
    if (ec || !framing.ok()) co_return std::nullopt;
    if (answer.get().result_int() / 100 == 1) continue;
    std::string body;
    if (framing.kind == Framing::Kind::kLength && framing.length > kTokenAnswerLimit) {
      ec = http::error::body_limit;
      co_return std::nullopt;
    }
    co_await ReadCapped(up, connection.up_buffer, answer, kTokenAnswerLimit, body, ec);
    if (ec) co_return std::nullopt;
    const bool keep_alive = answer.keep_alive();
    http::response<http::string_body> response{std::move(answer.get().base()), std::move(body)};
    KeepOrDropUpstream(connection, keep_alive);
    co_return response;
  }
}

awaitable<bool> Proxy::Impl::ReturnTokenAnswer(Intercepted& connection, bool client_keep_alive,
                                               http::response<http::string_body>& response,
                                               bool refreshed, AuditRecord& record) {
  const Scrubber scrubber(ReflectionsAt(connection.host));
  ScrubHead(response, scrubber);
  response.body() = scrubber.Scrub(response.body());
  const bool keep_alive = client_keep_alive && response.keep_alive();
  Reframe(response, Framing::OfLength(response.body().size()), keep_alive, 11);
  record.status = static_cast<int>(response.result_int());
  record.bytes_down += response.body().size();
  beast::error_code ec;
  co_await WriteMessage(connection.client, response, ec);
  record.Finish("allow", "",
                refreshed && response.result_int() / 100 == 2 ? "sign-in refreshed" : "");
  co_return keep_alive && !ec;
}

}  // namespace mojoup::credproxy

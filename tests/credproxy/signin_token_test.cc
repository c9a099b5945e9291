// A sign-in's tokens in the proxy: JWT stand-ins, refresh tokens bound to a
// token endpoint's field, the swap in a token request's body, the capture of
// the provider's answer, and the whole refresh through a proxy in process
// with real curl as the client and a fake provider's token endpoint.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <mutex>

#include "../support/fake_provider.h"
#include "../support/signin_tokens.h"
#include "../support/test_support.h"
#include "fmt/format.h"
#include "mojoup/credproxy/proxy.h"
#include "mojoup/credproxy/session_ca.h"
#include "mojoup/policy/policy.h"
#include "token_body.h"

using namespace mojoup::credproxy;
using Catch::Matchers::Contains;
using mojoup::test::TempDir;

namespace {

const std::string kAccess = "sk-ant-oat01-RealAccessToken0123456789abcdefghij";
const std::string kRefresh = "sk-ant-ort01-RealRefreshToken0123456789abcdefghij";

TokenEndpoint Endpoint(const std::string& host = "auth.test", const std::string& path = "/token",
                       bool form = false) {
  return {host, path, form, "refresh_token"};
}

// A vault with one sign-in: an access token for api.test, a refresh token
// for `endpoint`. Returns the stand-ins.
std::pair<std::string, std::string> SignIn(Vault& vault, TokenEndpoint endpoint = Endpoint()) {
  auto access = vault.AddToken({"s access", kAccess, "s", TokenRole::kAccess, {"api.test"}, {}});
  auto refresh =
      vault.AddToken({"s refresh", kRefresh, "s", TokenRole::kRefresh, {}, {std::move(endpoint)}});
  REQUIRE(access.ok());
  REQUIRE(refresh.ok());
  return {*access, *refresh};
}

}  // namespace

TEST_CASE("a JWT's stand-in keeps its header and claims and redraws its signature", "[vault][jwt]") {
  const std::string jwt = mojoup::test::Jwt(mojoup::test::OpenAiClaims("ada", 1));
  const std::string signed_part = jwt.substr(0, jwt.rfind('.') + 1);
  const std::string stand_in = MakeTokenStandIn(jwt);
  CHECK(stand_in.size() == jwt.size());
  CHECK(stand_in.substr(0, signed_part.size()) == signed_part);
  CHECK(stand_in != jwt);
  // Not a JWT: the prefix is kept as for an API key.
  const std::string opaque = MakeTokenStandIn(kRefresh);
  CHECK(opaque.size() == kRefresh.size());
  CHECK(opaque.substr(0, 13) == "sk-ant-ort01-");
  CHECK(opaque != kRefresh);
  // Dots that are not a JWT's ("a.b.c" whose first part is no JSON object).
  CHECK(MakeTokenStandIn("abc.def.ghijklmn").substr(0, 8) != "abc.def.");
}

TEST_CASE("a refresh token goes only into its endpoint's field, and once renewed its stand-in retires",
          "[vault]") {
  Vault vault;
  auto [access, refresh] = SignIn(vault);
  CHECK(vault.RealValue(access, "api.test") == kAccess);
  CHECK(!vault.RealValue(refresh, "auth.test"));  // never in a header
  CHECK(!vault.RealValue(refresh, "api.test"));
  std::string real;
  CHECK(vault.RefreshTokenAt(refresh, "auth.test", "/token", &real) != nullptr);
  CHECK(real == kRefresh);
  CHECK(vault.RefreshTokenAt(refresh, "auth.test", "/token/", nullptr) == nullptr);
  CHECK(vault.RefreshTokenAt(refresh, "api.test", "/token", nullptr) == nullptr);
  CHECK(vault.RefreshTokenAt(access, "auth.test", "/token", nullptr) == nullptr);
  CHECK(vault.IsTokenHost("auth.test"));
  CHECK(!vault.IsTokenHost("api.test"));

  const std::string renewed_real = "sk-ant-ort01-ProviderRenewedRefresh0123456789abcd";
  auto renewed = vault.Renew("s refresh", renewed_real);
  REQUIRE(renewed.ok());
  CHECK(*renewed != refresh);
  CHECK(vault.RefreshTokenAt(*renewed, "auth.test", "/token", &real) != nullptr);
  CHECK(real == renewed_real);
  // The old stand-in is still known, so that it is refused, never swapped.
  CHECK(vault.RefreshTokenAt(refresh, "auth.test", "/token", nullptr) == nullptr);
  auto found = vault.Scan("x" + refresh + "x", "auth.test");
  REQUIRE(found.size() == 1);
  CHECK(found[0].credential->retired);
  CHECK(vault.ContainsSecret(kRefresh));  // still scrubbed if an upstream echoes it

  // The user refreshed on the host: the same stand-in, the host's value.
  REQUIRE(vault.Rebind("s access", "sk-ant-oat01-HostRefreshedAccess0123456789abcdef").ok());
  CHECK(vault.RealValue(access, "api.test") == "sk-ant-oat01-HostRefreshedAccess0123456789abcdef");
  CHECK(!vault.Renew("nobody", renewed_real).ok());
  CHECK(!vault.AddToken({"bad", kRefresh, "s", TokenRole::kRefresh, {}, {}}).ok());
  CHECK(!vault.AddToken({"bad", kRefresh, "s", TokenRole::kRefresh, {}, {Endpoint("*.test")}})
             .ok());
  CHECK(!vault.AddToken({"bad", kRefresh, "s", TokenRole::kRefresh, {}, {Endpoint("a.test", "x")}})
             .ok());
}

TEST_CASE("a token request's refresh token is swapped in its field and nowhere else",
          "[token_body]") {
  Vault vault;
  auto [access, refresh] = SignIn(vault);
  Vault form_vault;
  auto form_refresh = SignIn(form_vault, Endpoint("auth.test", "/token", true)).second;
  const std::string json = "application/json";
  const std::string form = "application/x-www-form-urlencoded";
  using Outcome = TokenRequest::Outcome;

  SECTION("JSON, as Claude Code and Codex send it") {
    TokenRequest swap = SwapRefreshToken(
        R"({"grant_type":"refresh_token","refresh_token":")" + refresh + R"(","client_id":"c"})",
        "application/json; charset=utf-8", vault, "auth.test", "/token");
    REQUIRE(swap.outcome == Outcome::kSwapped);
    CHECK(swap.body ==
          R"({"grant_type":"refresh_token","refresh_token":")" + kRefresh + R"(","client_id":"c"})");
    CHECK(swap.refresh->name == "s refresh");
  }
  SECTION("form-encoded, where the endpoint takes forms") {
    TokenRequest swap = SwapRefreshToken("grant_type=refresh_token&refresh_token=" + form_refresh +
                                             "&scope=a+b",
                                         form, form_vault, "auth.test", "/token");
    REQUIRE(swap.outcome == Outcome::kSwapped);
    CHECK(swap.body == "grant_type=refresh_token&refresh_token=" + kRefresh + "&scope=a+b");
  }
  SECTION("no stand-in at all: sent as it is, nothing to capture") {
    const std::string body = R"({"grant_type":"authorization_code","code":"xyz"})";
    TokenRequest swap = SwapRefreshToken(body, json, vault, "auth.test", "/token");
    CHECK(swap.outcome == Outcome::kNoStandIn);
    CHECK(swap.body == body);
  }
  SECTION("refused: a stand-in anywhere else") {
    const std::vector<std::pair<std::string, std::string>> bodies{
        {"in another field", R"({"refresh_token":"x","note":")" + refresh + R"("})"},
        {"the access token", R"({"refresh_token":")" + access + R"("})"},
        {"beside the swapped one",
         R"({"refresh_token":")" + refresh + R"(","again":")" + refresh + R"("})"},
        {"escaped in JSON", R"({"refresh_token":"x","note":"\u0073)" + refresh.substr(1) + R"("})"},
        {"the field named twice",
         R"({"refresh_token":")" + refresh + R"(","refresh_token":"mine"})"},
        {"in an array", R"({"refresh_token":[")" + refresh + R"("]})"},
        {"not JSON", "refresh_token=" + refresh},
    };
    for (const auto& [what, body] : bodies) {
      INFO(what);
      TokenRequest swap = SwapRefreshToken(body, json, vault, "auth.test", "/token");
      CHECK(swap.outcome == Outcome::kRefused);
      CHECK(swap.misplaced != nullptr);
      CHECK(swap.body.empty());
    }
    // A form whose value is percent-encoded, or a JSON body to a form endpoint.
    std::string encoded;
    for (char c : form_refresh) encoded += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    CHECK(SwapRefreshToken("refresh_token=x&note=" + encoded, form, form_vault, "auth.test",
                           "/token")
              .outcome == Outcome::kRefused);
    CHECK(SwapRefreshToken(R"({"refresh_token":")" + form_refresh + R"("})", json, form_vault,
                           "auth.test", "/token")
              .outcome == Outcome::kRefused);
    // Another path or host of the same sign-in.
    CHECK(SwapRefreshToken(R"({"refresh_token":")" + refresh + R"("})", json, vault, "auth.test",
                           "/other")
              .outcome == Outcome::kRefused);
    CHECK(SwapRefreshToken(R"({"refresh_token":")" + refresh + R"("})", json, vault, "api.test",
                           "/token")
              .outcome == Outcome::kRefused);
  }
  SECTION("refused: a refresh token already replaced by a refresh, sent again") {
    REQUIRE(vault.Renew("s refresh", "sk-ant-ort01-Renewed000000000000000000000000").ok());
    TokenRequest swap = SwapRefreshToken(R"({"refresh_token":")" + refresh + R"("})", json, vault,
                                         "auth.test", "/token");
    CHECK(swap.outcome == Outcome::kRefused);
    CHECK_THAT(swap.why, Contains("already replaced"));
  }
}

TEST_CASE("a token endpoint's answer gets stand-ins for its tokens", "[token_body]") {
  std::vector<std::pair<TokenRole, std::string>> seen;
  auto replace = [&](TokenRole role, const std::string& value) -> std::optional<std::string> {
    seen.emplace_back(role, value);
    return "shown-" + value;
  };
  auto answer = ReplaceAnswerTokens(
      R"({"access_token":"a1","refresh_token":"r1","id_token":"i1","expires_in":28800,"scope":"x"})",
      replace);
  REQUIRE(answer);
  CHECK(answer->had_tokens);
  CHECK(answer->expires_in == 28800);
  CHECK(answer->body ==
        R"({"access_token":"shown-a1","refresh_token":"shown-r1","id_token":"shown-i1",)"
        R"("expires_in":28800,"scope":"x"})");
  CHECK(seen.size() == 3);
  CHECK(!ReplaceAnswerTokens("not json", replace));
  CHECK(!ReplaceAnswerTokens(R"({"access_token":"a","access_token":"b"})", replace));
  CHECK(!ReplaceAnswerTokens(R"({"access_token":"a1"})",
                             [](TokenRole, const std::string&) { return std::nullopt; }));
}

namespace {

bool HaveCurl() {
  return mojoup::test::RunWithEnv({}, {"curl", "--version"}).result.Succeeded();
}

// A proxy in process before a fake provider's token endpoint at
// auth.test:PORT, with one sign-in's tokens in its vault.
struct RefreshWorld {
  TempDir dir;
  std::unique_ptr<SessionCa> upstream_ca = *SessionCa::Create("provider CA");
  mojoup::test::FakeProvider provider{*upstream_ca->ServerContext("auth.test"), "127.0.0.1",
                                      "hello", 0};
  std::string access;
  std::string refresh;
  std::mutex mu;
  std::vector<TokenRefresh> refreshes;
  SignInCheck host;  // what the sign-in's owner says of it
  std::unique_ptr<Proxy> proxy;

  RefreshWorld() {
    const unsigned short port = provider.port();
    auto file = mojoup::policy::ParsePolicy(
        fmt::format(R"({{"agents": {{"network": {{"tool_services": false,
                    "allow": [{{"host": "auth.test", "ports": [{}]}}]}}}}}})",
                    port),
        "p.json", mojoup::policy::Level::kRepo);
    REQUIRE(file.ok());
    ProxyOptions options;
    options.rules = mojoup::policy::NetworkRules::Build(mojoup::policy::Layer({*file}), "");
    options.listen = "127.0.0.1:0";
    options.ca_dir = dir / "ca";
    options.upstream_ca = dir.Write("provider-ca.pem", upstream_ca->certificate_pem());
    options.pins[fmt::format("auth.test:{}", port)] = "127.0.0.1";
    auto added = options.vault.AddToken(
        {"s access", kAccess, "s", TokenRole::kAccess, {"auth.test"}, {}});
    auto refreshed = options.vault.AddToken(
        {"s refresh", kRefresh, "s", TokenRole::kRefresh, {}, {Endpoint("auth.test", "/oauth/token")}});
    REQUIRE(added.ok());
    REQUIRE(refreshed.ok());
    access = *added;
    refresh = *refreshed;
    options.on_refresh = [this](const TokenRefresh& r) {
      std::lock_guard lock(mu);
      refreshes.push_back(r);
    };
    options.check_sign_in = [this](const std::string&) {
      std::lock_guard lock(mu);
      return host;
    };
    auto started = Proxy::Start(std::move(options));
    REQUIRE(started.ok());
    proxy = std::move(*started);
  }

  mojoup::test::Run Get(const std::string& path, const std::string& token) const {
    return mojoup::test::RunWithEnv(
        {}, {"curl", "-sS", "--max-time", "20", "-x", "http://" + proxy->tcp_address(), "--cacert",
             proxy->ca_bundle_path(), "-H", "Authorization: Bearer " + token, "-D", "-",
             fmt::format("https://auth.test:{}{}", provider.port(), path)},
        std::chrono::seconds(30));
  }

  mojoup::test::Run Post(const std::string& path, const std::string& body) const {
    return mojoup::test::RunWithEnv(
        {}, {"curl", "-sS", "--max-time", "20", "-x", "http://" + proxy->tcp_address(), "--cacert",
             proxy->ca_bundle_path(), "-H", "Content-Type: application/json", "--data-binary", body,
             "-D", "-", fmt::format("https://auth.test:{}{}", provider.port(), path)},
        std::chrono::seconds(30));
  }
};

}  // namespace

TEST_CASE("proxy: a refresh reaches the provider with the real token, the client gets stand-ins",
          "[proxy][refresh]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  RefreshWorld world;
  if (!world.provider.error().empty()) MOJOUP_SKIP(world.provider.error());
  // A sign-in's stand-ins are in its files, never variables of the sandbox.
  CHECK(world.proxy->Environment().count("s access") == 0);
  CHECK(world.proxy->Environment().count("s refresh") == 0);
  const std::string new_access = "sk-ant-oat01-ProviderNewAccess0123456789abcdefghij";
  const std::string new_refresh = "sk-ant-ort01-ProviderNewRefresh0123456789abcdefghi";
  world.provider.IssueTokens("/oauth/token", kRefresh,
                             R"({"access_token":")" + new_access + R"(","refresh_token":")" +
                                 new_refresh + R"(","expires_in":28800,"token_type":"Bearer"})");
  auto run = world.Post("/oauth/token",
                        R"({"grant_type":"refresh_token","refresh_token":")" + world.refresh + R"("})");
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.Succeeded());
  CHECK_THAT(run.result.out, Contains("HTTP/1.1 200"));
  // The provider got the real refresh token, the client none of the real tokens.
  auto asked = world.provider.seen("POST", "/oauth/token");
  REQUIRE(asked.size() == 1);
  CHECK_THAT(asked[0].body, Contains(kRefresh));
  CHECK(asked[0].body.find(world.refresh) == std::string::npos);
  CHECK(run.result.out.find(new_access) == std::string::npos);
  CHECK(run.result.out.find(new_refresh) == std::string::npos);
  CHECK_THAT(run.result.out, Contains(R"("access_token":"sk-ant-oat01-)"));
  CHECK_THAT(run.result.out, Contains(R"("expires_in":28800)"));
  {
    std::lock_guard lock(world.mu);
    REQUIRE(world.refreshes.size() == 1);
    CHECK(world.refreshes[0].sign_in == "s");
    CHECK(world.refreshes[0].expires_in == 28800);
    REQUIRE(world.refreshes[0].tokens.size() == 2);
    CHECK(world.refreshes[0].tokens[0].value == new_access);
    CHECK(world.refreshes[0].tokens[1].value == new_refresh);
  }

  // The new refresh stand-in works for the next refresh; the old one is refused.
  rapidjson::Document answer;
  const std::string body = run.result.out.substr(run.result.out.rfind("\r\n\r\n") + 4);
  answer.Parse(body.c_str());
  REQUIRE(answer.IsObject());
  const std::string next_stand_in = answer["refresh_token"].GetString();
  CHECK(next_stand_in.size() == new_refresh.size());
  auto replayed = world.Post("/oauth/token", R"({"grant_type":"refresh_token","refresh_token":")" +
                                                 world.refresh + R"("})");
  CHECK_THAT(replayed.result.out, Contains("HTTP/1.1 403"));
  CHECK_THAT(replayed.result.out, Contains("credential-misplaced"));
  CHECK_THAT(replayed.result.out, Contains("replaced by a refresh"));
  // Another path of the token host: refused before anything is sent.
  auto elsewhere = world.Post("/v1/other", R"({"refresh_token":")" + next_stand_in + R"("})");
  CHECK_THAT(elsewhere.result.out, Contains("HTTP/1.1 403"));
  CHECK(world.provider.seen("POST", "/oauth/token").size() == 1);
  CHECK(world.provider.seen("POST", "/v1/other").empty());
}

TEST_CASE("proxy: a refresh the provider refuses passes through and captures nothing",
          "[proxy][refresh]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  RefreshWorld world;
  if (!world.provider.error().empty()) MOJOUP_SKIP(world.provider.error());
  world.provider.IssueTokens("/oauth/token", "some-other-refresh-token", "{}");
  auto run = world.Post("/oauth/token", R"({"refresh_token":")" + world.refresh + R"("})");
  CHECK_THAT(run.result.out, Contains("HTTP/1.1 400"));
  CHECK_THAT(run.result.out, Contains("invalid_grant"));
  std::lock_guard lock(world.mu);
  CHECK(world.refreshes.empty());
}

TEST_CASE("proxy: a sign-in the user refreshed on the host is used behind the same stand-in",
          "[proxy][refresh]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  RefreshWorld world;
  if (!world.provider.error().empty()) MOJOUP_SKIP(world.provider.error());
  world.Get("/v1/models", world.access);
  REQUIRE(world.provider.seen("GET", "/v1/models").size() == 1);
  CHECK(world.provider.seen("GET", "/v1/models")[0].Header("authorization") == "Bearer " + kAccess);

  const std::string hosts_access = "sk-ant-oat01-RefreshedOnTheHost0123456789abcdefghij";
  {
    std::lock_guard lock(world.mu);
    world.host = {SignInCheck::State::kRenewed, {{"s access", hosts_access}}, ""};
  }
  world.Get("/v1/models", world.access);
  {
    std::lock_guard lock(world.mu);
    world.host = {};
  }
  world.Get("/v1/models", world.access);
  const auto asked = world.provider.seen("GET", "/v1/models");
  REQUIRE(asked.size() == 3);
  CHECK(asked[1].Header("authorization") == "Bearer " + hosts_access);
  CHECK(asked[2].Header("authorization") == "Bearer " + hosts_access);

  // Signed out on the host: the session is told, and nothing is sent.
  {
    std::lock_guard lock(world.mu);
    world.host = {SignInCheck::State::kStale, {}, "~/.claude/.credentials.json lost its tokens"};
  }
  auto stale = world.Get("/v1/models", world.access);
  CHECK_THAT(stale.result.out, Contains("HTTP/1.1 403"));
  CHECK_THAT(stale.result.out, Contains("sign-in-stale"));
  CHECK_THAT(stale.result.out, Contains("lost its tokens"));
  CHECK(world.provider.seen("GET", "/v1/models").size() == 3);
  // A request without the sign-in's stand-in still goes.
  world.Get("/v1/models", "no-stand-in-here");
  CHECK(world.provider.seen("GET", "/v1/models").size() == 4);
}

TEST_CASE("proxy: a token request and its answer are held only within their limits",
          "[proxy][refresh]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  RefreshWorld world;
  if (!world.provider.error().empty()) MOJOUP_SKIP(world.provider.error());
  // A length over 64 KiB: 413 at the head, before a byte of the body (curl
  // says 128 MiB and would send them; it stops at the answer).
  const std::string big(64 * 1024 + 1, 'a');
  auto run = world.Post("/oauth/token", R"({"refresh_token":")" + world.refresh + R"(","x":")" +
                                            big + R"("})");
  CHECK_THAT(run.result.out, Contains("HTTP/1.1 413"));
  CHECK_THAT(run.result.out, Contains("at most 65536 bytes"));
  // Chunked, counted as it arrives.
  auto chunked = mojoup::test::RunWithEnv(
      {}, {"curl", "-sS", "--max-time", "20", "-x", "http://" + world.proxy->tcp_address(),
           "--cacert", world.proxy->ca_bundle_path(), "-H", "Content-Type: application/json", "-H",
           "Transfer-Encoding: chunked", "--data-binary",
           R"({"refresh_token":")" + world.refresh + R"(","x":")" + big + R"("})", "-D", "-",
           fmt::format("https://auth.test:{}/oauth/token", world.provider.port())},
      std::chrono::seconds(30));
  CHECK_THAT(chunked.result.out, Contains("HTTP/1.1 413"));
  CHECK(world.provider.seen("POST", "/oauth/token").empty());
  // An answer over 1 MiB never reaches the client.
  world.provider.IssueTokens("/oauth/token", kRefresh,
                             R"({"access_token":")" + std::string(3 << 20, 'z') + R"("})");
  auto answered = world.Post(
      "/oauth/token", R"({"grant_type":"refresh_token","refresh_token":")" + world.refresh + R"("})");
  CHECK_THAT(answered.result.out, Contains("HTTP/1.1 502"));
  CHECK_THAT(answered.result.out, Contains("more than 1048576 bytes"));
  CHECK(answered.result.out.find("zzzzzzzz") == std::string::npos);
  std::lock_guard lock(world.mu);
  CHECK(world.refreshes.empty());
}

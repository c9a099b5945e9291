// Stand-ins in each tool's sign-in file, and the keeper that writes the
// provider's refreshed tokens back to the host's file: against a fake home in
// a temporary directory.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>

#include "../support/signin_files.h"
#include "../support/test_support.h"
#include "mojoup/sandbox/signin.h"
#include "staging/signin_keeper.h"
#include "staging/signin_standins.h"

using Catch::Matchers::Contains;
using mojoup::credproxy::Credential;
using mojoup::credproxy::SignInCheck;
using mojoup::credproxy::TokenRefresh;
using mojoup::credproxy::Vault;
using mojoup::policy::TokenRole;
using mojoup::sandbox::SignInKeeper;
using mojoup::sandbox::SignInStaging;
using mojoup::sandbox::StageSignIn;
using mojoup::test::Slurp;
using mojoup::test::TempDir;
namespace fs = std::filesystem;

namespace {

using mojoup::test::WriteFile;

mojoup::sandbox::Getenv NoEnv() {
  return [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
}

const Credential* Named(const Vault& vault, const std::string& name) {
  for (const Credential& credential : vault.credentials()) {
    if (credential.name == name) return &credential;
  }
  return nullptr;
}

// What one staged field became: where its real value may go.
struct Expect {
  std::string field;  // as DottedPath prints it
  std::string real;
  TokenRole role;
  std::vector<std::string> hosts;
  std::vector<std::string> endpoints;  // "host/path"
};

void RequireStandIns(const std::string& tool, const std::string& relative,
                     const std::string& content, const std::vector<Expect>& expected) {
  TempDir dir;
  WriteFile(dir / ("home/" + relative), content);
  Vault vault;
  auto staging = StageSignIn(tool, dir / "home", NoEnv(), dir / "staging", vault);
  REQUIRE(staging.ok());
  const std::string staged = Slurp(dir / ("staging/" + relative));
  REQUIRE(staging->secrets.size() == expected.size());
  for (const Expect& want : expected) {
    INFO(tool << " " << want.field);
    const Credential* credential = Named(vault, tool + " " + relative + " " + want.field);
    REQUIRE(credential != nullptr);
    CHECK(credential->role == want.role);
    CHECK(credential->hosts == want.hosts);
    std::vector<std::string> endpoints;
    for (const auto& endpoint : credential->endpoints) {
      endpoints.push_back(endpoint.host + endpoint.path);
    }
    CHECK(endpoints == want.endpoints);
    CHECK(staged.find(want.real) == std::string::npos);
    CHECK_THAT(staged, Contains(credential->stand_in));
    CHECK(credential->stand_in.size() == want.real.size());
  }
}

}  // namespace

TEST_CASE("standins: Claude Code's tokens, bound to its API and its token endpoint",
          "[signin][standins]") {
  RequireStandIns("claude-code", ".claude/.credentials.json",
                  mojoup::test::ClaudeCredentials("ada", 1),
                  {{"claudeAiOauth.accessToken", "sk-ant-oat01-ada-1", TokenRole::kAccess,
                    {"api.anthropic.com"}, {}},
                   {"claudeAiOauth.refreshToken", "sk-ant-ort01-ada-1", TokenRole::kRefresh, {},
                    {"platform.claude.com/v1/oauth/token",
                     "console.anthropic.com/v1/oauth/token"}}});
  // An MCP server's OAuth tokens in the same file: stand-ins bound nowhere.
  RequireStandIns(
      "claude-code", ".claude/.credentials.json",
      R"({"mcpOAuth":{"srv|1":{"accessToken":"mcp-access-0123456789","refreshToken":"mcp-refresh-0123456789","expiresAt":1}}})",
      {{"mcpOAuth.srv|1.accessToken", "mcp-access-0123456789", TokenRole::kAccess, {}, {}},
       {"mcpOAuth.srv|1.refreshToken", "mcp-refresh-0123456789", TokenRole::kAccess, {}, {}}});
  // .claude.json holds settings; an MCP server's GitHub token there is a secret too.
  RequireStandIns("claude-code", ".claude.json",
                  R"({"numStartups":3,"mcpServers":{"gh":{"env":{"GITHUB_TOKEN":"ghp_0123456789abcdef"}}}})",
                  {{"mcpServers.gh.env.GITHUB_TOKEN", "ghp_0123456789abcdef", TokenRole::kAccess,
                    {}, {}}});
}

TEST_CASE("standins: Codex's JWTs keep their claims, its refresh token goes to auth.openai.com",
          "[signin][standins]") {
  const std::string jwt = mojoup::test::Jwt(mojoup::test::OpenAiClaims("ada", 1));
  RequireStandIns("codex", ".codex/auth.json", mojoup::test::CodexAuth("ada", 1),
                  {{"tokens.id_token", jwt, TokenRole::kId, {}, {}},
                   {"tokens.access_token", jwt, TokenRole::kAccess,
                    {"chatgpt.com", "api.openai.com"}, {}},
                   {"tokens.refresh_token", "rt_ada-1", TokenRole::kRefresh, {},
                    {"auth.openai.com/oauth/token"}}});
  RequireStandIns("codex", ".codex/auth.json",
                  R"({"OPENAI_API_KEY":"sk-proj-0123456789abcdef","tokens":null})",
                  {{"OPENAI_API_KEY", "sk-proj-0123456789abcdef", TokenRole::kApiKey,
                    {"api.openai.com"}, {}}});
}

TEST_CASE("standins: opencode's and Kilo's providers, known ones bound, others nowhere",
          "[signin][standins]") {
  for (const auto& [tool, relative] :
       {std::pair{"opencode", ".local/share/opencode/auth.json"},
        std::pair{"kilocode", ".local/share/kilo/auth.json"}}) {
    const std::string jwt = mojoup::test::Jwt(mojoup::test::OpenAiClaims("ada", 1));
    RequireStandIns(tool, relative, mojoup::test::OpenCodeAuth("ada", 1),
                    {{"anthropic.refresh", "sk-ant-ort01-ada-1", TokenRole::kRefresh, {},
                      {"console.anthropic.com/v1/oauth/token",
                       "platform.claude.com/v1/oauth/token"}},
                     {"anthropic.access", "sk-ant-oat01-ada-1", TokenRole::kAccess,
                      {"api.anthropic.com"}, {}},
                     {"openai.refresh", "rt_ada-1", TokenRole::kRefresh, {},
                      {"auth.openai.com/oauth/token"}},
                     {"openai.access", jwt, TokenRole::kAccess, {"chatgpt.com"}, {}},
                     {"openrouter.key", "sk-or-v1-ada", TokenRole::kApiKey, {"openrouter.ai"}, {}}});
  }
}

TEST_CASE("standins: Copilot's stored gho_ token is an access-only stand-in for GitHub",
          "[signin][standins]") {
  const std::vector<std::string> hosts{"api.github.com",
                                       "github.com",
                                       "api.githubcopilot.com",
                                       "api.individual.githubcopilot.com",
                                       "api.business.githubcopilot.com",
                                       "api.enterprise.githubcopilot.com"};
  const std::string token = "gho_16C7e42F292c6912E7710c838347Ae178B4a";
  // Copilot CLI 1.0.102's file: comment lines, then the token twice.
  const std::string config =
      "// User settings belong in settings.json.\n// This file is managed automatically.\n"
      R"({"lastLoggedInUser":{"host":"https://github.com","login":"ada"},)"
      R"("copilotTokens":{"https://github.com:ada":")" +
      token + R"("},"authTokens":{"https://github.com:ada:github":{"token":")" + token + R"("}}})";
  RequireStandIns("copilot", ".copilot/config.json", config,
                  {{"copilotTokens.https://github.com:ada", token, TokenRole::kAccess, hosts, {}},
                   {"authTokens.https://github.com:ada:github.token", token, TokenRole::kAccess,
                    hosts, {}}});
  // The older snake_case name is read too.
  RequireStandIns("copilot", ".copilot/config.json",
                  R"({"copilot_tokens":{"https://github.com:ada":")" + token + R"("}})",
                  {{"copilot_tokens.https://github.com:ada", token, TokenRole::kAccess, hosts, {}}});
  // The comment lines stay in the staged copy, before the JSON.
  TempDir dir;
  WriteFile(dir / "home/.copilot/config.json", config);
  Vault vault;
  auto staging = StageSignIn("copilot", dir / "home", NoEnv(), dir / "staging", vault);
  REQUIRE(staging.ok());
  CHECK(Slurp(dir / "staging/.copilot/config.json")
            .rfind("// User settings belong in settings.json.\n// This file is managed "
                   "automatically.\n{",
                   0) == 0);
}

TEST_CASE("standins: a JSON sign-in file that does not parse is not staged, and says why",
          "[signin][standins]") {
  TempDir dir;
  WriteFile(dir / "home/.codex/auth.json", "{\"tokens\": {\"refresh_token\": \"rt_secret");
  Vault vault;
  auto staging = StageSignIn("codex", dir / "home", NoEnv(), dir / "staging", vault);
  REQUIRE(staging.ok());
  CHECK(staging->files.empty());
  CHECK(!fs::exists(dir / "staging/.codex/auth.json"));
  REQUIRE(staging->notices.size() == 1);
  CHECK_THAT(staging->notices[0], Contains(dir / "home/.codex/auth.json"));
  CHECK_THAT(staging->notices[0], Contains("not valid JSON"));
  CHECK(vault.credentials().empty());
}

namespace {

// A staged Claude sign-in and its keeper, for the write-back tests.
struct Kept {
  TempDir dir;
  std::string host =
      WriteFile(dir / "home/.claude/.credentials.json", mojoup::test::ClaudeCredentials("ada", 1));
  Vault vault;
  SignInStaging staging;
  std::unique_ptr<SignInKeeper> keeper;
  const std::chrono::system_clock::time_point now =
      std::chrono::system_clock::time_point(std::chrono::milliseconds(1800000000000LL));

  Kept() {
    auto staged = StageSignIn("claude-code", dir / "home", NoEnv(), dir / "staging", vault);
    REQUIRE(staged.ok());
    staging = *staged;
    keeper = std::make_unique<SignInKeeper>(staging, [this] { return now; });
  }

  TokenRefresh Refresh(int n) const {
    const std::string sign_in = "claude-code .claude/.credentials.json claudeAiOauth";
    const std::string tag = "ada-" + std::to_string(n);
    return {sign_in,
            {{"claude-code .claude/.credentials.json claudeAiOauth.accessToken", TokenRole::kAccess,
              "sk-ant-oat01-" + tag},
             {"claude-code .claude/.credentials.json claudeAiOauth.refreshToken",
              TokenRole::kRefresh, "sk-ant-ort01-" + tag}},
            28800};
  }
};

}  // namespace

TEST_CASE("keeper: the provider's refresh goes to the host file at once, other fields kept",
          "[signin][keeper]") {
  Kept kept;
  kept.keeper->Refreshed(kept.Refresh(2));
  const std::string after = Slurp(kept.host);
  CHECK_THAT(after, Contains(R"("accessToken":"sk-ant-oat01-ada-2")"));
  CHECK_THAT(after, Contains(R"("refreshToken":"sk-ant-ort01-ada-2")"));
  CHECK_THAT(after, Contains(R"("expiresAt":1800028800000)"));  // now + expires_in
  CHECK_THAT(after, Contains(R"("subscriptionType":"max")"));
  CHECK_THAT(after, Contains(R"("rateLimitTier":"default_claude_max_20x")"));
  struct stat info {};
  REQUIRE(stat(kept.host.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0600);
  // The host copy is now the keeper's own: the session's next refresh lands too.
  CHECK(kept.keeper->Check(kept.Refresh(2).sign_in).state == SignInCheck::State::kCurrent);
  kept.keeper->Refreshed(kept.Refresh(3));
  CHECK_THAT(Slurp(kept.host), Contains(R"("refreshToken":"sk-ant-ort01-ada-3")"));
  auto report = kept.keeper->Finish();
  CHECK(report.written == std::vector<std::string>{kept.host});
  CHECK(report.errors.empty());
  CHECK(report.notices.empty());
  // Nothing left beside it.
  for (const auto& entry : fs::directory_iterator(fs::path(kept.host).parent_path())) {
    CHECK(entry.path() == kept.host);
  }
}

TEST_CASE("keeper: a host copy the user refreshed wins, and the session goes on with its tokens",
          "[signin][keeper]") {
  Kept kept;
  WriteFile(kept.host, mojoup::test::ClaudeCredentials("ada", 5));
  SignInCheck check = kept.keeper->Check(kept.Refresh(2).sign_in);
  REQUIRE(check.state == SignInCheck::State::kRenewed);
  std::map<std::string, std::string> tokens(check.tokens.begin(), check.tokens.end());
  CHECK(tokens.at("claude-code .claude/.credentials.json claudeAiOauth.accessToken") ==
        "sk-ant-oat01-ada-5");
  CHECK(tokens.at("claude-code .claude/.credentials.json claudeAiOauth.refreshToken") ==
        "sk-ant-ort01-ada-5");
  // A refresh from the host's tokens then lands on the host's copy.
  kept.keeper->Refreshed(kept.Refresh(6));
  CHECK_THAT(Slurp(kept.host), Contains("sk-ant-ort01-ada-6"));
  auto report = kept.keeper->Finish();
  REQUIRE(report.notices.size() == 1);
  CHECK_THAT(report.notices[0], Contains("the session went on with the host's new tokens"));
}

TEST_CASE("keeper: a refresh that meets a changed host file is not written over it",
          "[signin][keeper]") {
  Kept kept;
  const std::string users = mojoup::test::ClaudeCredentials("ada", 5);
  WriteFile(kept.host, users);
  kept.keeper->Refreshed(kept.Refresh(2));  // no Check came between
  CHECK(Slurp(kept.host) == users);
  auto report = kept.keeper->Finish();
  CHECK(report.written.empty());
  REQUIRE(report.notices.size() == 1);
  CHECK_THAT(report.notices[0], Contains("the host's copy was kept"));
}

TEST_CASE("keeper: a host file that lost its tokens makes the session's sign-in stale",
          "[signin][keeper]") {
  Kept kept;
  WriteFile(kept.host, R"({"claudeAiOauth":null})");
  SignInCheck check = kept.keeper->Check(kept.Refresh(2).sign_in);
  CHECK(check.state == SignInCheck::State::kStale);
  CHECK_THAT(check.why, Contains(kept.host));
  CHECK_THAT(check.why, Contains("claudeAiOauth.accessToken"));
  fs::remove(kept.host);
  CHECK(kept.keeper->Check(kept.Refresh(2).sign_in).state == SignInCheck::State::kStale);
}

TEST_CASE("keeper: Codex's refresh stamps last_refresh, and a linked host file stays a link",
          "[signin][keeper]") {
  TempDir dir;
  const std::string target = WriteFile(dir / "dotfiles/codex-auth.json",
                                       mojoup::test::CodexAuth("ada", 1));
  fs::create_directories(dir / "home/.codex");
  fs::create_symlink(target, dir / "home/.codex/auth.json");
  Vault vault;
  auto staging = StageSignIn("codex", dir / "home", NoEnv(), dir / "staging", vault);
  REQUIRE(staging.ok());
  SignInKeeper keeper(*staging, [] {
    return std::chrono::system_clock::time_point(std::chrono::seconds(1800000000));
  });
  const std::string jwt = mojoup::test::Jwt(mojoup::test::OpenAiClaims("ada", 2));
  keeper.Refreshed({"codex .codex/auth.json tokens",
                    {{"codex .codex/auth.json tokens.access_token", TokenRole::kAccess, jwt},
                     {"codex .codex/auth.json tokens.id_token", TokenRole::kId, jwt},
                     {"codex .codex/auth.json tokens.refresh_token", TokenRole::kRefresh,
                      "rt_ada-2"}},
                    std::nullopt});
  CHECK(fs::is_symlink(dir / "home/.codex/auth.json"));
  const std::string after = Slurp(target);
  CHECK_THAT(after, Contains(R"("refresh_token":"rt_ada-2")"));
  CHECK_THAT(after, Contains(R"("last_refresh":"2027-01-15T08:00:00Z")"));
  CHECK_THAT(after, Contains(R"("account_id":"acct-ada")"));
  CHECK_THAT(after, Contains(R"("OPENAI_API_KEY":null)"));
}

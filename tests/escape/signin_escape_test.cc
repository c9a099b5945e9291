// Escape tests for sign-ins: from inside a real native session, run by a real
// non-root user, the agent attacks the sign-in it was staged with. Its copy
// holds stand-ins; the real tokens are in the session's proxy, which sends
// the refresh token only in its field of a token request to the tool's
// token endpoint. The user's host file must end with nothing but what the
// provider itself issued.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "../support/named_provider.h"
#include "../support/real_user.h"
#include "../support/sandbox_image.h"
#include "../support/signin_files.h"
#include "../support/test_support.h"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using mojoup::test::Sections;
using mojoup::test::RealUser;
using mojoup::test::Run;
using mojoup::test::Slurp;
using mojoup::test::UserNode;

// A tool whose credential file comes back, the user's sign-in in it, and
// another account's that the agent swaps in.
struct Tool {
  std::string name;
  std::string home_relative;
  std::string mine;
  std::string other;
};

std::vector<Tool> Tools() {
  return {
      {"claude-code", ".claude/.credentials.json", mojoup::test::ClaudeCredentials("ada", 1),
       mojoup::test::ClaudeCredentials("eve", 2, "pro", "default_claude_pro")},
      {"codex", ".codex/auth.json", mojoup::test::CodexAuth("ada", 1),
       mojoup::test::CodexAuth("eve", 2)},
  };
}

// The files beside `path` that start with its name: kept-aside copies.
std::vector<std::string> KeptAside(const std::string& path) {
  std::vector<std::string> kept;
  const fs::path file(path);
  for (const auto& entry : fs::directory_iterator(file.parent_path())) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(file.filename().string() + ".sandbox-", 0) == 0) {
      kept.push_back(entry.path().string());
    }
  }
  return kept;
}

}  // namespace

TEST_CASE("escape: a sign-in file the session rewrote with tokens of its own making stays in",
          "[escape][signin]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  for (const Tool& tool : Tools()) {
    INFO(tool.name);
    const std::string host = user->home + "/" + tool.home_relative;
    user->Write(host, tool.mine, 0600);
    UserNode node(*user);
    Run run = node.Sh("printf '%s' '" + tool.other + "' > \"$HOME/" + tool.home_relative + "\"",
                      {"--tool", tool.name});
    INFO(run.result.err);
    REQUIRE(run.result.exit_code == 0);
    // What a sandbox writes is never a source of tokens: nothing comes
    // back, nothing is kept beside the user's file for them to pick.
    CHECK(Slurp(host) == tool.mine);
    CHECK(KeptAside(host).empty());
    CHECK(run.result.err.find("written back") == std::string::npos);
    CHECK(node.Leftovers() == 0);
  }
}

TEST_CASE("escape: a symlink in place of the sign-in file is not followed back to the host",
          "[escape][signin]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  const std::string authorized_keys = user->home + "/.ssh/authorized_keys";
  const std::string keys = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKeyOfTheUser user@laptop\n";
  user->Write(authorized_keys, keys, 0600);
  for (const Tool& tool : Tools()) {
    const std::string host = user->home + "/" + tool.home_relative;
    const std::string dir = fs::path(tool.home_relative).parent_path().string();
    // Paths as the host sees them: write-back runs there, outside the sandbox.
    const std::vector<std::pair<std::string, std::string>> attacks{
        {"to /etc/passwd", "ln -sf /etc/passwd \"$HOME/" + tool.home_relative + "\""},
        {"to the user's authorized_keys",
         "ln -sf '" + authorized_keys + "' \"$HOME/" + tool.home_relative + "\""},
        {"its directory to the user's ~/.ssh",
         "rm -rf \"$HOME/" + dir + "\" && ln -s '" + user->home + "/.ssh' \"$HOME/" + dir + "\""},
    };
    for (const auto& [what, script] : attacks) {
      INFO(tool.name << ": " << what);
      user->Write(host, tool.mine, 0600);
      const std::string passwd = Slurp("/etc/passwd");
      UserNode node(*user);
      Run run = node.Sh(script, {"--tool", tool.name});
      INFO(run.result.err);
      REQUIRE(run.result.exit_code == 0);
      CHECK(Slurp(host) == tool.mine);
      CHECK(Slurp(authorized_keys) == keys);
      CHECK(Slurp("/etc/passwd") == passwd);
      struct stat info {};
      REQUIRE(lstat(host.c_str(), &info) == 0);
      CHECK(S_ISREG(info.st_mode));
      CHECK(KeptAside(host).empty());
      CHECK(node.Leftovers() == 0);
    }
  }
}

TEST_CASE("escape: a planted refresh token with the staged claims never reaches the host",
          "[escape][signin]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  // The red team's attack: unsigned JWTs naming the user's account, with the
  // session's own refresh token. Written back, the user's next refresh would
  // sign in to the attacker's account.
  const std::string host = user->home + "/.codex/auth.json";
  user->Write(host, mojoup::test::CodexAuth("ada", 1), 0600);
  UserNode node(*user);
  const std::string minted = mojoup::test::CodexAuth("ada", 9);
  Run run =
      node.Sh("printf '%s' '" + minted + "' > \"$HOME/.codex/auth.json\"", {"--tool", "codex"});
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  CHECK(Slurp(host) == mojoup::test::CodexAuth("ada", 1));
  CHECK(KeptAside(host).empty());
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("escape: a huge sign-in file in the sandbox is neither read nor kept", "[escape][signin]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  for (const Tool& tool : Tools()) {
    const std::string host = user->home + "/" + tool.home_relative;
    const std::vector<std::pair<std::string, std::string>> attacks{
        {"20 MiB written",
         "dd if=/dev/zero bs=1048576 count=20 2>/dev/null | tr '\\0' x > \"$HOME/" +
             tool.home_relative + "\""},
        {"a sparse 64 GiB", "truncate -s 64G \"$HOME/" + tool.home_relative + "\""},
    };
    for (const auto& [what, script] : attacks) {
      INFO(tool.name << ": " << what);
      user->Write(host, tool.mine, 0600);
      UserNode node(*user);
      Run run = node.Sh(script, {"--tool", tool.name});
      INFO(run.result.err);
      REQUIRE(run.result.exit_code == 0);
      CHECK(Slurp(host) == tool.mine);
      CHECK(KeptAside(host).empty());
      CHECK(node.Leftovers() == 0);
    }
  }
}

namespace {


// Each section one curl (its head and body), with the refresh token's
// stand-in read from the staged sign-in; the sign-in as the sandbox last saw
// it is kept in the repository.
constexpr const char* kRefreshAttacks = R"sh(
f="$HOME/.claude/.credentials.json"
rt=$(sed 's/.*"refreshToken":"\([^"]*\)".*/\1/' "$f")
body() { printf '{"grant_type":"refresh_token","refresh_token":"%s","client_id":"c"}' "$1"; }
c() { n="$1"; u="$2"; shift 2; echo "=== $n"; curl -sS -i --max-time 20 -H 'Content-Type: application/json' "$@" "$u" 2>&1; echo; }
c refresh https://platform.claude.com/v1/oauth/token --data-binary "$(body "$rt")"
c replayed https://platform.claude.com/v1/oauth/token --data-binary "$(body "$rt")"
c other-path https://platform.claude.com/v1/oauth/token2 --data-binary "$(body "$rt")"
c other-host https://api.anthropic.com/v1/oauth/token --data-binary "$(body "$rt")"
c in-header https://platform.claude.com/v1/oauth/token -H "Authorization: Bearer $rt" --data-binary '{}'
echo "=== staged"; cat "$f"; echo
# The answer's stand-ins, written into the sandbox's copy as the tool does.
printf '{"claudeAiOauth":{"accessToken":"sk-ant-oat01-mine","refreshToken":"sk-ant-ort01-mine","expiresAt":9999999999999}}' > "$f"
)sh";

}  // namespace

TEST_CASE("escape: a refresh token's stand-in goes to its token endpoint only, and only once",
          "[escape][signin][refresh]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  const std::string host = user->home + "/.claude/.credentials.json";
  const std::string mine = mojoup::test::ClaudeCredentials("ada", 1);
  user->Write(host, mine, 0600);
  UserNode node(*user);
  mojoup::test::NamedProvider platform(node, "platform.claude.com", "127.0.13.11", "unused");
  mojoup::test::NamedProvider api(platform, "api.anthropic.com", "127.0.13.12", "unused");
  if (!platform.fake->error().empty()) MOJOUP_SKIP(platform.fake->error());
  if (!api.fake->error().empty()) MOJOUP_SKIP(api.fake->error());
  const std::string new_access = "sk-ant-oat01-ada-2-IssuedByTheProvider0123456789";
  const std::string new_refresh = "sk-ant-ort01-ada-2-IssuedByTheProvider0123456789";
  platform.fake->IssueTokens("/v1/oauth/token", "sk-ant-ort01-ada-1",
                             R"({"token_type":"Bearer","access_token":")" + new_access +
                                 R"(","refresh_token":")" + new_refresh +
                                 R"(","expires_in":28800,"scope":"user:inference"})");
  std::vector<std::string> flags{"--tool", "claude-code"};
  for (const std::string& flag : platform.Flags()) flags.push_back(flag);
  flags.insert(flags.end(), {"--resolve", "api.anthropic.com:443:127.0.13.12"});
  Run run = node.Sh(kRefreshAttacks, flags);
  INFO(mojoup::test::Described(run));
  REQUIRE(run.result.exit_code == 0);
  auto sections = Sections(run.result.out);

  // The genuine refresh: the provider got the real refresh token, once; the
  // sandbox got stand-ins for what it issued.
  CHECK_THAT(sections["refresh"], Contains("HTTP/1.1 200 OK"));
  const auto asked = platform.fake->seen("POST", "/v1/oauth/token");
  REQUIRE(asked.size() == 1);
  CHECK_THAT(asked[0].body, Contains(R"("refresh_token":"sk-ant-ort01-ada-1")"));
  CHECK_THAT(sections["refresh"], Contains(R"("access_token":"sk-ant-oat01-)"));
  for (const std::string& secret : {new_access, new_refresh, std::string("sk-ant-ort01-ada-1\"")}) {
    CHECK(run.result.out.find(secret) == std::string::npos);
    CHECK(run.result.err.find(secret) == std::string::npos);
  }
  // Sent again, to another path, another host or another place: refused.
  for (const char* attack : {"replayed", "other-path", "other-host", "in-header"}) {
    INFO(attack);
    CHECK_THAT(sections[attack], Contains("HTTP/1.1 403"));
    CHECK_THAT(sections[attack], Contains("credential-"));
  }
  CHECK(platform.fake->seen("POST", "/v1/oauth/token2").empty());
  CHECK(api.fake->seen().empty());

  // The host file has what the provider issued, and what the sandbox wrote
  // in its own copy afterwards is not taken.
  const std::string after = Slurp(host);
  CHECK_THAT(after, Contains(R"("accessToken":")" + new_access + "\""));
  CHECK_THAT(after, Contains(R"("refreshToken":")" + new_refresh + "\""));
  CHECK_THAT(after, Contains(R"("subscriptionType":"max")"));
  CHECK(after.find("mine") == std::string::npos);
  CHECK(KeptAside(host).empty());
  CHECK_THAT(run.result.err, Contains(host + " has the provider's new tokens"));
  CHECK(node.Leftovers() == 0);
}

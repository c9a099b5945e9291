// Escape tests for sign-in write-back: from inside a real native session, run
// by a real non-root user, the agent attacks the credential file that comes
// back to the user's home when the session ends. The user's files must stay
// as they were, and `run` must say why nothing came back.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "../support/real_user.h"
#include "../support/sandbox_image.h"
#include "../support/signin_files.h"
#include "../support/test_support.h"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
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
  std::string why;  // what run says about the other account's
};

std::vector<Tool> Tools() {
  return {
      {"claude-code", ".claude/.credentials.json", mojoup::test::ClaudeCredentials("ada", 1),
       mojoup::test::ClaudeCredentials("eve", 2, "pro", "default_claude_pro"),
       "it is not signed in to the same account: claudeAiOauth.subscriptionType differs"},
      {"codex", ".codex/auth.json", mojoup::test::CodexAuth("ada", 1),
       mojoup::test::CodexAuth("eve", 2),
       "it is not signed in to the same account: tokens.id_token names another account"},
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

TEST_CASE("escape: the agent's sign-in for another account does not replace the user's",
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
    CHECK(Slurp(host) == tool.mine);
    CHECK_THAT(run.result.err, Contains(host + " was not written back: " + tool.why));
    // The other account's copy is beside it, for the user to look at.
    const std::vector<std::string> kept = KeptAside(host);
    REQUIRE(kept.size() == 1);
    CHECK(Slurp(kept[0]) == tool.other);
    CHECK_THAT(run.result.err, Contains("the sandbox's copy is kept at " + kept[0]));
    fs::remove(kept[0]);
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
      CHECK_THAT(run.result.err, Contains(host + ": "));
      CHECK_THAT(run.result.err, Contains("not followed"));
      CHECK_THAT(run.result.err, Contains(host + " was left as it is"));
      CHECK(node.Leftovers() == 0);
    }
  }
}

TEST_CASE("escape: a sign-in minted in the session with the staged claims is not taken",
          "[escape][signin]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  // Unsigned JWTs naming the user's account, with the session's own refresh
  // token: the user's next refresh would sign in to the attacker's account.
  const std::string host = user->home + "/.codex/auth.json";
  user->Write(host, mojoup::test::CodexAuth("ada", 1), 0600);
  UserNode node(*user);
  const std::string minted = mojoup::test::CodexAuth("ada", 9);
  Run run =
      node.Sh("printf '%s' '" + minted + "' > \"$HOME/.codex/auth.json\"", {"--tool", "codex"});
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  CHECK(Slurp(host) == mojoup::test::CodexAuth("ada", 1));
  CHECK_THAT(run.result.err,
             Contains(host + " was not written back: its tokens cannot be verified"));
  for (const std::string& kept : KeptAside(host)) fs::remove(kept);
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("escape: a huge sign-in file is neither written back nor kept", "[escape][signin]") {
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
      CHECK_THAT(run.result.err, Contains("a sign-in file over 1 MiB is refused"));
      CHECK_THAT(run.result.err, Contains(host + " was left as it is"));
      CHECK(node.Leftovers() == 0);
    }
  }
}

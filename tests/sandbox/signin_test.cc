// Sign-in staging and compare-and-swap write-back, against a fake home in a
// temporary directory and an injected environment.
#include "mojoup/sandbox/signin.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "../support/signin_files.h"
#include "../support/test_support.h"
#include "mojoup/policy/tool_profiles.h"

using Catch::Matchers::Contains;
using mojoup::sandbox::Getenv;
using mojoup::sandbox::KeptAside;
using mojoup::sandbox::LocateSignIn;
using mojoup::sandbox::SignInFile;
using mojoup::sandbox::SignInStaging;
using mojoup::sandbox::SignInStagingFromJson;
using mojoup::sandbox::SignInStagingToJson;
using mojoup::sandbox::StageSignIn;
using mojoup::test::StageAsBefore;
using mojoup::sandbox::WriteBackReport;
using mojoup::sandbox::WriteBackSignIn;
using mojoup::test::ClaudeCredentials;
using mojoup::test::CodexAuth;
using mojoup::test::Jwt;
using mojoup::test::OpenAiClaims;
using mojoup::test::OpenCodeAuth;
using mojoup::test::Slurp;
using mojoup::test::TempDir;
namespace fs = std::filesystem;

namespace {

// A refresh shaped like the staged sign-in is not taken: nothing can verify
// that its tokens are the user's. It is kept beside the host file instead.
#define CHECK_KEPT_UNVERIFIED(report, host)                                   \
  do {                                                                        \
    CHECK((report).written.empty());                                          \
    REQUIRE((report).kept_aside.size() == 1);                                 \
    CHECK((report).kept_aside[0].host_path == (host));                        \
    CHECK((report).kept_aside[0].reason == KeptAside::Reason::kUnverifiable); \
    CHECK_THAT((report).kept_aside[0].why, Contains("cannot be verified"));   \
  } while (false)

// An environment of exactly `vars`, which fails the test if asked for HOME.
Getenv FakeEnv(std::map<std::string, std::string> vars = {}) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    CHECK(name != "HOME");
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

unsigned ModeOf(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return static_cast<unsigned>(st.st_mode) & 07777u;
}

using mojoup::test::WriteFile;

// Replaces `path` the way Claude Code does: a new file renamed over it.
void ReplaceByRename(const std::string& path, const std::string& text) {
  const std::string temp = path + ".tmp";
  WriteFile(temp, text, ModeOf(path));
  REQUIRE(::rename(temp.c_str(), path.c_str()) == 0);
}

// The names in `dir`, to spot leftovers such as temporary files.
std::set<std::string> Entries(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename());
  return names;
}

struct timespec MtimeOf(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mtim;
}

void SetOldMtime(const std::string& path) {
  struct timespec times[2] = {{978307200, 0}, {978307200, 0}};  // 2001-01-01
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

const SignInFile& FileAt(const SignInStaging& staging, std::string_view home_relative) {
  for (const SignInFile& file : staging.files) {
    if (file.home_relative == home_relative) return file;
  }
  FAIL("no staged file " << home_relative);
  throw std::logic_error("unreachable");
}

// A home with Codex's sign-in file, staged: the common start of the
// write-back tests.
struct StagedCodex {
  TempDir dir;
  std::string home = dir / "home";
  std::string host = WriteFile(home + "/.codex/auth.json", CodexAuth("ada", 1), 0640);
  std::string staged;
  SignInStaging staging;

  StagedCodex() {
    auto staged_or = StageAsBefore("codex", home, FakeEnv(), dir / "run/s1/home");
    REQUIRE(staged_or.ok());
    staging = *staged_or;
    REQUIRE(staging.files.size() == 1);
    staged = staging.files[0].staged_path;
  }
};

}  // namespace

TEST_CASE("signin: every sign-in file of every tool profile has a host location", "[signin]") {
  // Each file's place follows the profile: under the relocation variable
  // when it moves the file, else under the home.
  const std::string home = "/home/ada";
  for (const auto& profile : mojoup::policy::ToolProfiles()) {
    INFO(profile.name);
    std::map<std::string, std::string> vars{
        {std::string(profile.relocation_variable), "/moved/" + std::string(profile.name)}};
    auto located = LocateSignIn(profile.name, home, FakeEnv(vars));
    REQUIRE(located.ok());
    REQUIRE(located->size() == profile.sign_in_files.size());
    auto plain = LocateSignIn(profile.name, home, FakeEnv());
    REQUIRE(plain.ok());
    for (std::size_t i = 0; i < located->size(); ++i) {
      const auto& file = (*located)[i];
      INFO(file.home_relative);
      CHECK(file.home_relative == profile.sign_in_files[i].home_relative);
      CHECK((*plain)[i].host_path ==
            home + "/" + std::string(profile.sign_in_files[i].home_relative));
      const bool moved = file.host_path.rfind("/moved/" + std::string(profile.name) + "/", 0) == 0;
      // Kilo's legacy file is the one sign-in file its variable does not move.
      CHECK(moved != (file.home_relative == ".kilocode/cli/config.json"));
    }
  }
}

TEST_CASE(
    "signin: each tool's sign-in files land at their home-relative paths, with content and mode",
    "[signin]") {
  TempDir dir;
  const std::string home = dir / "home";
  const std::map<std::string, unsigned> modes{{".claude/.credentials.json", 0600},
                                              {".claude.json", 0644},
                                              {".codex/auth.json", 0600},
                                              {".copilot/config.json", 0640},
                                              {".local/share/opencode/auth.json", 0600},
                                              {".local/share/opencode/opencode.db", 0644},
                                              {".local/share/kilo/auth.json", 0600},
                                              {".kilocode/cli/config.json", 0600}};
  // JSON files hold JSON (one that does not parse is not staged); the
  // database its bytes.
  auto content = [](const std::string& relative) {
    return relative.ends_with(".json") ? R"({"note":"secret of )" + relative + R"("})"
                                       : "secret of " + relative;
  };
  for (const auto& [relative, mode] : modes) WriteFile(home + "/" + relative, content(relative), mode);
  for (const auto& profile : mojoup::policy::ToolProfiles()) {
    INFO(profile.name);
    const std::string staging_home = dir / ("run/" + std::string(profile.name) + "/home");
    auto staging = StageAsBefore(profile.name, home, FakeEnv(), staging_home);
    REQUIRE(staging.ok());
    CHECK(staging->tool == profile.name);
    CHECK(staging->home == staging_home);
    CHECK(staging->missing.empty());
    CHECK(ModeOf(staging_home) == 0700);
    REQUIRE(staging->files.size() == profile.sign_in_files.size());
    for (std::size_t i = 0; i < staging->files.size(); ++i) {
      const SignInFile& file = staging->files[i];
      const std::string relative(profile.sign_in_files[i].home_relative);
      INFO(relative);
      CHECK(file.home_relative == relative);
      CHECK(file.host_path == home + "/" + relative);
      CHECK(file.staged_path == staging_home + "/" + relative);
      CHECK(Slurp(file.staged_path) == content(relative));
      CHECK(ModeOf(file.staged_path) == modes.at(relative));
      CHECK(file.mode == modes.at(relative));
      CHECK(file.host_sha256.size() == 64);
      // Directories made inside the staging home are private too.
      for (fs::path up = fs::path(file.staged_path).parent_path(); up != staging_home;
           up = up.parent_path()) {
        CHECK(ModeOf(up) == 0700);
      }
    }
  }
}

TEST_CASE("signin: the digest recorded at staging is the host file's SHA-256", "[signin]") {
  TempDir dir;
  WriteFile(dir / "home/.codex/auth.json", R"({"a":"abc"})");
  auto staging = StageAsBefore("codex", dir / "home", FakeEnv(), dir / "staging");
  REQUIRE(staging.ok());
  REQUIRE(staging->files.size() == 1);
  CHECK(staging->files[0].host_sha256 ==
        "55087e20a5077c79d1ab2483aeb11954d3bc2f24c9e18e4b80faf61fac2b47bc");
}

TEST_CASE(
    "signin: relocation variables move the host files, the staged copies stay at the defaults",
    "[signin]") {
  TempDir dir;
  const std::string home = dir / "home";
  // Decoys at the default places: with the variable set, the tool does not read them.
  for (const char* relative :
       {".claude/.credentials.json", ".claude.json", ".codex/auth.json", ".copilot/config.json",
        ".local/share/opencode/auth.json", ".local/share/kilo/auth.json"}) {
    WriteFile(home + "/" + relative, R"({"n":"decoy"})");
  }
  WriteFile(home + "/.kilocode/cli/config.json", R"({"n":"kilo legacy"})");
  WriteFile(dir / "claude-config/.credentials.json", R"({"n":"claude creds"})");
  WriteFile(dir / "claude-config/.claude.json", R"({"n":"claude state"})");
  WriteFile(dir / "codex-home/auth.json", R"({"n":"codex auth"})");
  WriteFile(dir / "copilot-home/config.json", R"({"n":"copilot config"})");
  WriteFile(dir / "xdg-data/opencode/auth.json", R"({"n":"opencode auth"})");
  WriteFile(dir / "xdg-data/kilo/auth.json", R"({"n":"kilo auth"})");
  // A trailing slash in the variable is fine.
  const Getenv env = FakeEnv({{"CLAUDE_CONFIG_DIR", dir / "claude-config/"},
                              {"CODEX_HOME", dir / "codex-home"},
                              {"COPILOT_HOME", dir / "copilot-home"},
                              {"XDG_DATA_HOME", dir / "xdg-data"}});

  struct Expected {
    std::string tool, relative, host, content;
  };
  const std::vector<Expected> expected{
      {"claude-code", ".claude/.credentials.json", dir / "claude-config/.credentials.json",
       R"({"n":"claude creds"})"},
      {"claude-code", ".claude.json", dir / "claude-config/.claude.json", R"({"n":"claude state"})"},
      {"codex", ".codex/auth.json", dir / "codex-home/auth.json", R"({"n":"codex auth"})"},
      {"copilot", ".copilot/config.json", dir / "copilot-home/config.json", R"({"n":"copilot config"})"},
      {"opencode", ".local/share/opencode/auth.json", dir / "xdg-data/opencode/auth.json",
       R"({"n":"opencode auth"})"},
      {"kilocode", ".local/share/kilo/auth.json", dir / "xdg-data/kilo/auth.json", R"({"n":"kilo auth"})"},
      {"kilocode", ".kilocode/cli/config.json", home + "/.kilocode/cli/config.json", R"({"n":"kilo legacy"})"},
  };
  for (const Expected& want : expected) {
    INFO(want.tool << " " << want.relative);
    const std::string staging_home = dir / ("run/" + want.tool);
    auto staging = StageAsBefore(want.tool, home, env, staging_home);
    REQUIRE(staging.ok());
    const SignInFile& file = FileAt(*staging, want.relative);
    CHECK(file.host_path == want.host);
    CHECK(file.staged_path == staging_home + "/" + want.relative);
    CHECK(Slurp(file.staged_path) == want.content);
  }

  SECTION("opencode's v2 database, absent under XDG_DATA_HOME, is listed as missing there") {
    auto staging = StageAsBefore("opencode", home, env, dir / "run/opencode-db");
    REQUIRE(staging.ok());
    CHECK(staging->missing == std::vector<std::string>{dir / "xdg-data/opencode/opencode.db"});
  }
  SECTION("an empty variable is as good as unset") {
    auto staging = StageAsBefore("codex", home, FakeEnv({{"CODEX_HOME", ""}}), dir / "run/empty");
    REQUIRE(staging.ok());
    CHECK(Slurp(FileAt(*staging, ".codex/auth.json").staged_path) == R"({"n":"decoy"})");
  }
  SECTION("a relative XDG_DATA_HOME is ignored, as the XDG spec says") {
    auto staging =
        StageAsBefore("kilocode", home, FakeEnv({{"XDG_DATA_HOME", "xdg"}}), dir / "run/rel");
    REQUIRE(staging.ok());
    CHECK(FileAt(*staging, ".local/share/kilo/auth.json").host_path ==
          home + "/.local/share/kilo/auth.json");
  }
  SECTION("any other relative relocation is an error naming the variable") {
    auto staging =
        StageAsBefore("codex", home, FakeEnv({{"CODEX_HOME", "codex"}}), dir / "run/relcodex");
    REQUIRE(!staging.ok());
    CHECK(staging.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(staging.status().message()), Contains("CODEX_HOME"));
    CHECK(!fs::exists(dir / "run/relcodex"));
  }
}

TEST_CASE("signin: sign-in files not on the host are listed as missing, not errors", "[signin]") {
  TempDir dir;
  const std::string home = dir / "home";
  fs::create_directories(home);
  WriteFile(home + "/.claude.json", "{}");
  auto staging = StageAsBefore("claude-code", home, FakeEnv(), dir / "staging");
  REQUIRE(staging.ok());
  CHECK(staging->missing == std::vector<std::string>{home + "/.claude/.credentials.json"});
  REQUIRE(staging->files.size() == 1);
  CHECK(staging->files[0].home_relative == ".claude.json");
  CHECK(!fs::exists(dir / "staging/.claude/.credentials.json"));

  auto none = StageAsBefore("copilot", home, FakeEnv(), dir / "staging2");
  REQUIRE(none.ok());
  CHECK(none->files.empty());
  CHECK(none->missing == std::vector<std::string>{home + "/.copilot/config.json"});
  CHECK(ModeOf(dir / "staging2") == 0700);
}

TEST_CASE("signin: an unknown tool is an error, no tool stages nothing", "[signin]") {
  TempDir dir;
  WriteFile(dir / "home/.codex/auth.json", "x");
  auto unknown = StageAsBefore("aider", dir / "home", FakeEnv(), dir / "staging");
  REQUIRE(!unknown.ok());
  CHECK(unknown.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(unknown.status().message()), Contains("aider"));
  CHECK(!fs::exists(dir / "staging"));

  auto nothing = StageAsBefore("", dir / "home", FakeEnv(), dir / "empty");
  REQUIRE(nothing.ok());
  CHECK(nothing->files.empty());
  CHECK(nothing->missing.empty());
  CHECK(ModeOf(dir / "empty") == 0700);
  CHECK(fs::is_empty(dir / "empty"));
}

TEST_CASE("signin: the staging home and the parents it needs are made private", "[signin]") {
  TempDir dir;
  WriteFile(dir / "home/.codex/auth.json", "{}");
  const std::string staging_home = dir / "state/sessions/s1/home";
  auto staging = StageAsBefore("codex", dir / "home", FakeEnv(), staging_home);
  REQUIRE(staging.ok());
  CHECK(ModeOf(dir / "state") == 0700);
  CHECK(ModeOf(dir / "state/sessions/s1") == 0700);
  CHECK(ModeOf(staging_home) == 0700);
  CHECK(ModeOf(dir.path()) == 0755);  // not ours to change

  SECTION("an existing staging home is tightened to 0700") {
    fs::create_directories(dir / "open");
    REQUIRE(::chmod((dir / "open").c_str(), 0755) == 0);
    REQUIRE(StageAsBefore("codex", dir / "home", FakeEnv(), dir / "open").ok());
    CHECK(ModeOf(dir / "open") == 0700);
  }
  SECTION("a symlink in place of the staging home is refused") {
    fs::create_directories(dir / "elsewhere");
    fs::create_directory_symlink(dir / "elsewhere", dir / "link");
    auto refused = StageAsBefore("codex", dir / "home", FakeEnv(), dir / "link");
    REQUIRE(!refused.ok());
    CHECK(fs::is_empty(dir / "elsewhere"));
  }
  SECTION("a symlinked directory inside an existing staging home is not written through") {
    WriteFile(dir / "elsewhere/auth.json", "keep me");
    fs::create_directories(dir / "planted");
    fs::create_directory_symlink(dir / "elsewhere", dir / "planted/.codex");
    auto refused = StageAsBefore("codex", dir / "home", FakeEnv(), dir / "planted");
    REQUIRE(!refused.ok());
    CHECK_THAT(std::string(refused.status().message()), Contains(".codex"));
    CHECK(Slurp(dir / "elsewhere/auth.json") == "keep me");
  }
  SECTION("a relative staging home is refused") {
    CHECK(!StageAsBefore("codex", dir / "home", FakeEnv(), "relative/home").ok());
  }
}

TEST_CASE("signin: a symlinked sign-in file is staged as a copy of its target", "[signin]") {
  TempDir dir;
  WriteFile(dir / "dotfiles/codex-auth.json", R"({"from":"dotfiles"})", 0600);
  fs::create_directories(dir / "home/.codex");
  fs::create_symlink(dir / "dotfiles/codex-auth.json", dir / "home/.codex/auth.json");
  auto staging = StageAsBefore("codex", dir / "home", FakeEnv(), dir / "staging");
  REQUIRE(staging.ok());
  const std::string staged = dir / "staging/.codex/auth.json";
  CHECK(fs::is_regular_file(fs::symlink_status(staged)));
  CHECK(Slurp(staged) == R"({"from":"dotfiles"})");

  SECTION("a dangling symlink is missing") {
    fs::remove(dir / "dotfiles/codex-auth.json");
    auto dangling = StageAsBefore("codex", dir / "home", FakeEnv(), dir / "staging2");
    REQUIRE(dangling.ok());
    CHECK(dangling->files.empty());
    CHECK(dangling->missing.size() == 1);
  }
}

TEST_CASE("signin: a sign-in file over 16 MiB is refused by name and nothing is left staged",
          "[signin]") {
  TempDir dir;
  const std::string home = dir / "home";
  WriteFile(home + "/.local/share/opencode/auth.json", "small");
  const std::string big = WriteFile(home + "/.local/share/opencode/opencode.db", "");
  fs::resize_file(big, mojoup::sandbox::kMaxSignInFileBytes + 1);
  auto staging = StageAsBefore("opencode", home, FakeEnv(), dir / "staging");
  REQUIRE(!staging.ok());
  CHECK_THAT(std::string(staging.status().message()), Contains(big));
  CHECK_THAT(std::string(staging.status().message()), Contains("16 MiB"));
  CHECK(!fs::exists(dir / "staging"));  // the copy of auth.json went with it

  SECTION("exactly 16 MiB is fine") {
    fs::resize_file(big, mojoup::sandbox::kMaxSignInFileBytes);
    auto ok = StageAsBefore("opencode", home, FakeEnv(), dir / "staging");
    REQUIRE(ok.ok());
    CHECK(fs::file_size(dir / "staging/.local/share/opencode/opencode.db") ==
          mojoup::sandbox::kMaxSignInFileBytes);
  }
}

TEST_CASE("signin: a refresh of the same account is kept aside, never taken, as unverifiable",
          "[signin]") {
  StagedCodex s;
  WriteFile(s.staged, CodexAuth("ada", 2), 0600);  // Codex rewrites in place

  WriteBackReport report = WriteBackSignIn(s.staging, "s1");
  CHECK(report.errors.empty());
  CHECK_KEPT_UNVERIFIED(report, s.host);
  CHECK(Slurp(s.host) == CodexAuth("ada", 1));
  CHECK(ModeOf(s.host) == 0640);
  CHECK(Slurp(s.host + ".sandbox-s1") == CodexAuth("ada", 2));
  CHECK(ModeOf(s.host + ".sandbox-s1") == 0600);
}

TEST_CASE("signin: a host file that changed meanwhile keeps its content, the sandbox's goes aside",
          "[signin]") {
  StagedCodex s;
  WriteFile(s.staged, CodexAuth("ada", 2));
  WriteFile(s.host, CodexAuth("ada", 3), 0640);

  WriteBackReport report = WriteBackSignIn(s.staging, "s1");
  CHECK(report.errors.empty());
  CHECK(report.written.empty());
  const std::string aside = s.host + ".sandbox-s1";
  REQUIRE(report.kept_aside.size() == 1);
  CHECK(report.kept_aside[0] == KeptAside{s.host, aside, KeptAside::Reason::kHostChanged,
                                          "it changed on the host during the session"});
  CHECK(Slurp(s.host) == CodexAuth("ada", 3));
  CHECK(ModeOf(s.host) == 0640);
  CHECK(Slurp(aside) == CodexAuth("ada", 2));
  CHECK(ModeOf(aside) == 0600);

  SECTION("a host file that vanished counts as changed") {
    fs::remove(s.host);
    fs::remove(aside);
    WriteBackReport gone = WriteBackSignIn(s.staging, "s1");
    CHECK(gone.written.empty());
    REQUIRE(gone.kept_aside.size() == 1);
    CHECK(!fs::exists(s.host));
    CHECK(Slurp(aside) == CodexAuth("ada", 2));
  }
}

TEST_CASE("signin: files the agent did not change leave the host untouched", "[signin]") {
  StagedCodex s;
  SetOldMtime(s.host);
  const auto mtime = MtimeOf(s.host);
  WriteFile(s.staged, CodexAuth("ada", 1));  // rewritten, same content

  WriteBackReport report = WriteBackSignIn(s.staging, "s1");
  CHECK(report.written.empty());
  CHECK(report.kept_aside.empty());
  CHECK(report.errors.empty());
  CHECK(MtimeOf(s.host).tv_sec == mtime.tv_sec);
  CHECK(MtimeOf(s.host).tv_nsec == mtime.tv_nsec);
  CHECK(!fs::exists(s.host + ".sandbox-s1"));

  SECTION("nor does one whose new content the host already has") {
    WriteFile(s.staged, "both refreshed alike");
    WriteFile(s.host, "both refreshed alike", 0640);
    SetOldMtime(s.host);
    WriteBackReport same = WriteBackSignIn(s.staging, "s1");
    CHECK(same.written.empty());
    CHECK(same.kept_aside.empty());
    CHECK(MtimeOf(s.host).tv_sec == mtime.tv_sec);
  }
}

TEST_CASE("signin: a staged file replaced by rename is seen, and kept aside", "[signin]") {
  TempDir dir;
  const std::string home = dir / "home";
  const std::string creds =
      WriteFile(home + "/.claude/.credentials.json", ClaudeCredentials("ada", 1), 0600);
  const std::string state = WriteFile(home + "/.claude.json", R"({"numStartups":1})", 0644);
  auto staging = StageAsBefore("claude-code", home, FakeEnv(), dir / "staging");
  REQUIRE(staging.ok());
  ReplaceByRename(FileAt(*staging, ".claude/.credentials.json").staged_path,
                  ClaudeCredentials("ada", 2));
  SetOldMtime(state);

  WriteBackReport report = WriteBackSignIn(*staging, "s9");
  CHECK(report.errors.empty());
  CHECK_KEPT_UNVERIFIED(report, creds);
  CHECK(Slurp(creds) == ClaudeCredentials("ada", 1));
  CHECK(ModeOf(creds) == 0600);
  CHECK(Slurp(state) == R"({"numStartups":1})");
  CHECK(MtimeOf(state).tv_sec == 978307200);
}

TEST_CASE("signin: a staged file the agent deleted is left alone", "[signin]") {
  StagedCodex s;
  fs::remove(s.staged);
  WriteBackReport report = WriteBackSignIn(s.staging, "s1");
  CHECK(report.written.empty());
  CHECK(report.kept_aside.empty());
  CHECK(report.errors.empty());
  CHECK(Slurp(s.host) == CodexAuth("ada", 1));
}

TEST_CASE("signin: a staged file the agent swapped for a symlink is not followed", "[signin]") {
  StagedCodex s;
  WriteFile(s.dir / "elsewhere", "not a sign-in file");
  fs::remove(s.staged);
  fs::create_symlink(s.dir / "elsewhere", s.staged);

  SECTION("the file itself") {}
  SECTION("a directory above it") {
    fs::remove(s.staged);
    const fs::path codex_dir = fs::path(s.staged).parent_path();
    fs::remove(codex_dir);
    WriteFile(s.dir / "decoy/auth.json", "not a sign-in file");
    fs::create_directory_symlink(s.dir / "decoy", codex_dir);
  }
  WriteBackReport report = WriteBackSignIn(s.staging, "s1");
  CHECK(report.written.empty());
  CHECK(report.kept_aside.empty());
  REQUIRE(report.errors.size() == 1);
  CHECK_THAT(report.errors[0], Contains(s.host));
  CHECK(Slurp(s.host) == CodexAuth("ada", 1));
}

TEST_CASE("signin: a symlinked host file and its target stay as they are", "[signin]") {
  TempDir dir;
  const std::string target = WriteFile(dir / "dotfiles/auth.json", CodexAuth("ada", 1), 0600);
  fs::create_directories(dir / "home/.codex");
  const std::string link = dir / "home/.codex/auth.json";
  fs::create_symlink(target, link);
  auto staging = StageAsBefore("codex", dir / "home", FakeEnv(), dir / "staging");
  REQUIRE(staging.ok());
  WriteFile(staging->files[0].staged_path, CodexAuth("ada", 2));

  WriteBackReport report = WriteBackSignIn(*staging, "s1");
  CHECK_KEPT_UNVERIFIED(report, link);
  CHECK(fs::is_symlink(link));
  CHECK(Slurp(target) == CodexAuth("ada", 1));
}

TEST_CASE("signin: a copy that cannot be kept aside leaves the host file and no temporary file",
          "[signin]") {
  StagedCodex s;
  // A refresh of the staged sign-in, with a refresh token of 64 KiB.
  std::string refreshed = CodexAuth("ada", 2);
  refreshed.replace(refreshed.find("rt_ada-2"), 8, "rt_" + std::string(64 * 1024, 'r'));
  WriteFile(s.staged, refreshed);
  const auto before = Entries(fs::path(s.host).parent_path());

  // Writes past 4 KiB fail (EFBIG), in the middle of the temporary file.
  struct rlimit old {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 4096;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  WriteBackReport report = WriteBackSignIn(s.staging, "s1");
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);

  CHECK(report.written.empty());
  CHECK(report.kept_aside.empty());
  REQUIRE(report.errors.size() == 1);
  CHECK_THAT(report.errors[0], Contains(s.host + ".sandbox-s1"));
  CHECK(Slurp(s.host) == CodexAuth("ada", 1));
  CHECK(Entries(fs::path(s.host).parent_path()) == before);
}

TEST_CASE("signin: a session id that cannot name a file writes nothing back", "[signin]") {
  StagedCodex s;
  WriteFile(s.staged, "two");
  WriteBackReport report = WriteBackSignIn(s.staging, "../../etc");
  CHECK(report.written.empty());
  REQUIRE(report.errors.size() == 1);
  CHECK(Slurp(s.host) == CodexAuth("ada", 1));
}

TEST_CASE("signin: the staging survives a JSON round trip", "[signin]") {
  SignInStaging staging;
  staging.tool = "claude-code";
  staging.home = "/run/mojoup/s \"1\"/home";
  staging.files.push_back({".claude/.credentials.json", "/home/ada/.claude/.credentials.json",
                           "/run/mojoup/s \"1\"/home/.claude/.credentials.json",
                           std::string(64, 'a'), 0600});
  staging.files.push_back({".claude.json", "/home/ada/caf\xc3\xa9\\\n.json",
                           "/run/mojoup/s \"1\"/home/.claude.json", std::string(64, '0'), 0444});
  staging.missing = {"/home/ada/.config/\xff-not-utf8"};

  const std::string json = SignInStagingToJson(staging);
  CHECK(json.find('\n') == std::string::npos);  // compact
  auto back = SignInStagingFromJson(json);
  REQUIRE(back.ok());
  CHECK(*back == staging);

  SECTION("and so does a real one, which a reaper then handles alike") {
    StagedCodex s;
    auto real = SignInStagingFromJson(SignInStagingToJson(s.staging));
    REQUIRE(real.ok());
    CHECK(*real == s.staging);
    WriteFile(s.staged, CodexAuth("ada", 2));
    WriteBackReport report = WriteBackSignIn(*real, "reaped");
    CHECK_KEPT_UNVERIFIED(report, s.host);
  }
}

TEST_CASE("signin: a malformed staging record is an error", "[signin]") {
  const std::string file =
      R"({"home_relative":".codex/auth.json","host_path":"/h/.codex/auth.json",)"
      R"("staged_path":"/s/.codex/auth.json","host_sha256":")" +
      std::string(64, 'f') + R"(","mode":384})";
  const auto record = [&](const std::string& files, const std::string& home = R"("/s")") {
    return R"({"tool":"codex","home":)" + home + R"(,"files":[)" + files + R"(],"missing":[]})";
  };
  REQUIRE(SignInStagingFromJson(record(file)).ok());
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string changed = file;
    changed.replace(changed.find(from), from.size(), to);
    return record(changed);
  };
  const std::vector<std::string> bad{
      "",
      "not json",
      record(file) + "trailing",
      "[]",
      R"({"tool":"codex","home":"/s","files":[]})",
      record(file, R"("relative")"),
      record(file, "7"),
      with(R"("mode":384)", R"("mode":512)"),
      with(R"("mode":384)", R"("mode":-1)"),
      with(R"("mode":384)", R"("mode":"0600")"),
      with(std::string(64, 'f'), std::string(63, 'f')),
      with(std::string(64, 'f'), std::string(64, 'F')),
      with(".codex/auth.json\",\"host", "../auth.json\",\"host"),
      with(".codex/auth.json\",\"host", "/etc/passwd\",\"host"),
      with("\"host_path\":\"/h/", "\"host_path\":\"h/"),
      with("\"staged_path\"", "\"staged\""),
      record("1"),
  };
  for (const std::string& json : bad) {
    INFO(json);
    auto parsed = SignInStagingFromJson(json);
    CHECK(!parsed.ok());
    if (!parsed.ok()) CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("signin: only credential files come back, settings stay in the sandbox", "[signin]") {
  // .claude.json holds mcpServers commands: written back, a sandboxed agent
  // could plant a command the host runs later.
  TempDir dir;
  const std::string home = dir / "home";
  const std::string credentials =
      WriteFile(home + "/.claude/.credentials.json", ClaudeCredentials("ada", 1));
  const std::string settings = WriteFile(home + "/.claude.json", R"({"mcpServers":{}})");
  auto staging = StageAsBefore("claude-code", home, FakeEnv(), dir / "run/s1/home");
  REQUIRE(staging.ok());
  REQUIRE(staging->files.size() == 2);
  WriteFile(FileAt(*staging, ".claude/.credentials.json").staged_path, ClaudeCredentials("ada", 2));
  WriteFile(FileAt(*staging, ".claude.json").staged_path,
            R"({"mcpServers":{"x":{"command":"/tmp/evil"}}})");
  WriteBackReport report = WriteBackSignIn(*staging, "s1");
  CHECK_KEPT_UNVERIFIED(report, credentials);
  REQUIRE(Slurp(credentials) == ClaudeCredentials("ada", 1));
  REQUIRE(Slurp(settings) == R"({"mcpServers":{}})");
  REQUIRE_FALSE(fs::exists(settings + ".sandbox-s1"));
}

// Write-back takes only a refresh of the sign-in staged: the same shape, the
// same account. The attack: the agent swaps in another account's sign-in, and
// the user's own tool, outside the sandbox, works for that account's owner.
namespace {

// A tool's credential file, and that tool's sign-in for `account` at refresh `n`.
struct ToolFile {
  std::string tool;
  std::string home_relative;
  std::string (*sign_in)(const std::string& account, int n);
};

std::string ClaudeOf(const std::string& account, int n) { return ClaudeCredentials(account, n); }

const std::vector<ToolFile>& ToolFiles() {
  static const std::vector<ToolFile> files{
      {"claude-code", ".claude/.credentials.json", ClaudeOf},
      {"codex", ".codex/auth.json", CodexAuth},
      {"opencode", ".local/share/opencode/auth.json", OpenCodeAuth},
      {"kilocode", ".local/share/kilo/auth.json", OpenCodeAuth},
  };
  return files;
}

// `content` as the tool's sign-in file on the host, staged.
struct StagedTool {
  TempDir dir;
  std::string home = dir / "home";
  std::string host;
  std::string staged;
  std::string aside;
  SignInStaging staging;

  StagedTool(const ToolFile& file, const std::string& content) {
    host = WriteFile(home + "/" + file.home_relative, content, 0600);
    aside = host + ".sandbox-s1";
    auto staged_or = StageAsBefore(file.tool, home, FakeEnv(), dir / "run/s1/home");
    REQUIRE(staged_or.ok());
    staging = *staged_or;
    staged = FileAt(staging, file.home_relative).staged_path;
  }
  explicit StagedTool(const ToolFile& file) : StagedTool(file, file.sign_in("ada", 1)) {}
};

// Writes `refreshed` as the agent's copy, writes back, and expects it kept
// aside for `reason`, with the host file as it was.
void ExpectKeptAside(StagedTool& s, const std::string& refreshed, KeptAside::Reason reason,
                     const std::string& why) {
  const std::string before = Slurp(s.host);
  WriteFile(s.staged, refreshed);
  WriteBackReport report = WriteBackSignIn(s.staging, "s1");
  CHECK(report.written.empty());
  CHECK(report.errors.empty());
  REQUIRE(report.kept_aside.size() == 1);
  const KeptAside& kept = report.kept_aside[0];
  CHECK(kept.host_path == s.host);
  CHECK(kept.aside_path == s.aside);
  CHECK(kept.reason == reason);
  CHECK_THAT(kept.why, Contains(why));
  CHECK(Slurp(s.host) == before);
  CHECK(Slurp(s.aside) == refreshed);
  CHECK(ModeOf(s.aside) == 0600);
}

constexpr auto kOtherAccount = KeptAside::Reason::kNotSameAccount;
constexpr auto kOtherShape = KeptAside::Reason::kNotSignInShape;
const std::string kNotSame = "it is not signed in to the same account: ";
const std::string kNotShape = "it is not a sign-in file of that shape: ";

}  // namespace

TEST_CASE("signin: each tool's refresh of the same account is recognised, and not taken",
          "[signin]") {
  for (const ToolFile& file : ToolFiles()) {
    INFO(file.tool);
    StagedTool s(file);
    WriteFile(s.staged, file.sign_in("ada", 2));
    WriteBackReport report = WriteBackSignIn(s.staging, "s1");
    CHECK(report.errors.empty());
    CHECK_KEPT_UNVERIFIED(report, s.host);
    CHECK(Slurp(s.host) == file.sign_in("ada", 1));
  }
}

TEST_CASE("signin: a refresh may reformat the file and keep the old refresh token", "[signin]") {
  // Claude Code keeps the refresh token when the server does not rotate it,
  // and tools write their JSON with their own spacing and member order.
  StagedTool s(ToolFiles()[0]);
  std::string refreshed = ClaudeCredentials("ada", 2);
  refreshed.replace(refreshed.find("sk-ant-ort01-ada-2"), 18, "sk-ant-ort01-ada-1");
  refreshed.replace(refreshed.find("{\"claudeAiOauth\":"), 17, "{\n  \"claudeAiOauth\" : ");
  WriteFile(s.staged, refreshed);
  WriteBackReport report = WriteBackSignIn(s.staging, "s1");
  CHECK_KEPT_UNVERIFIED(report, s.host);
}

TEST_CASE("signin: each tool's sign-in swapped for another account's is kept aside, saying so",
          "[signin]") {
  for (const ToolFile& file : ToolFiles()) {
    INFO(file.tool);
    StagedTool s(file);
    // Claude's file names no account: the other account is on another plan.
    const std::string other = file.tool == "claude-code"
                                  ? ClaudeCredentials("eve", 2, "pro", "default_claude_pro")
                                  : file.sign_in("eve", 2);
    ExpectKeptAside(s, other, kOtherAccount, kNotSame);
  }
}

TEST_CASE("signin: what differs is named: the account's fields and the JWTs' claims", "[signin]") {
  const ToolFile& codex = ToolFiles()[1];
  const std::string mine = CodexAuth("ada", 2);
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string changed = mine;
    REQUIRE(changed.find(from) != std::string::npos);
    changed.replace(changed.find(from), from.size(), to);
    return changed;
  };
  const std::string my_jwt = Jwt(OpenAiClaims("ada", 2));
  const std::string eve_jwt = Jwt(OpenAiClaims("eve", 2));

  SECTION("Codex: another account's access token beside this account's id token") {
    StagedTool s(codex);
    const std::string swapped =
        with("\"access_token\":\"" + my_jwt, "\"access_token\":\"" + eve_jwt);
    ExpectKeptAside(s, swapped, kOtherAccount,
                    kNotSame + "tokens.access_token names another account (its sub differs)");
  }
  SECTION("Codex: the account id") {
    StagedTool s(codex);
    ExpectKeptAside(s, with("\"account_id\":\"acct-ada\"", "\"account_id\":\"acct-eve\""),
                    kOtherAccount, kNotSame + "tokens.account_id differs from the staged file's");
  }
  SECTION("Codex: an API key in place of none") {
    StagedTool s(codex, R"({"OPENAI_API_KEY":"sk-ada","tokens":null})");
    ExpectKeptAside(s, R"({"OPENAI_API_KEY":"sk-eve","tokens":null})", kOtherAccount,
                    kNotSame + "OPENAI_API_KEY differs");
  }
  SECTION("Codex: a JWT that is no longer one") {
    StagedTool s(codex);
    ExpectKeptAside(s, with("\"id_token\":\"" + my_jwt, "\"id_token\":\"opaque"), kOtherAccount,
                    "tokens.id_token is no longer a JWT");
  }
  SECTION("opencode: an API key") {
    StagedTool s(ToolFiles()[2]);
    std::string refreshed = OpenCodeAuth("ada", 2);
    refreshed.replace(refreshed.find("sk-or-v1-ada"), 12, "sk-or-v1-eve");
    ExpectKeptAside(s, refreshed, kOtherAccount, kNotSame + "openrouter.key differs");
  }
  SECTION("opencode: the OpenAI access token") {
    StagedTool s(ToolFiles()[2]);
    std::string refreshed = OpenCodeAuth("ada", 2);
    refreshed.replace(refreshed.find(my_jwt), my_jwt.size(), eve_jwt);
    ExpectKeptAside(s, refreshed, kOtherAccount, "openai.access names another account");
  }
  SECTION("Claude: the plan, the tier, the scopes") {
    StagedTool s(ToolFiles()[0]);
    ExpectKeptAside(s, ClaudeCredentials("ada", 2, "pro"), kOtherAccount,
                    kNotSame + "claudeAiOauth.subscriptionType differs");
    StagedTool t(ToolFiles()[0]);
    std::string fewer = ClaudeCredentials("ada", 2);
    fewer.replace(fewer.find(",\"user:profile\""), 15, "");
    ExpectKeptAside(t, fewer, kOtherAccount, kNotSame + "claudeAiOauth.scopes differs");
  }
}

TEST_CASE("signin: what no refresh does is kept aside: an old expiry, a lone new refresh token",
          "[signin]") {
  for (const ToolFile& file : ToolFiles()) {
    INFO(file.tool);
    SECTION("an earlier sign-in of the same account replayed: " + file.tool) {
      StagedTool s(file, file.sign_in("ada", 5));
      ExpectKeptAside(s, file.sign_in("ada", 4), kOtherAccount, kNotSame);
    }
  }
  SECTION("another account's refresh token beside this account's access token") {
    StagedTool s(ToolFiles()[0]);
    std::string planted = ClaudeCredentials("ada", 1);
    planted.replace(planted.find("sk-ant-ort01-ada-1"), 18, "sk-ant-ort01-eve-7");
    ExpectKeptAside(s, planted, kOtherAccount,
                    "claudeAiOauth.refreshToken is new but accessToken is not");
    StagedTool c(ToolFiles()[1]);
    std::string codex = CodexAuth("ada", 1);
    codex.replace(codex.find("rt_ada-1"), 8, "rt_eve-7");
    ExpectKeptAside(c, codex, kOtherAccount, "tokens.refresh_token is new but access_token is not");
  }
  SECTION("anything else a refresh leaves alone") {
    StagedTool s(ToolFiles()[0],
                 R"({"claudeAiOauth":{"accessToken":"a1","refreshToken":"r1","expiresAt":1},)"
                 R"("mcpOAuth":{"srv":{"accessToken":"m1"}}})");
    ExpectKeptAside(s,
                    R"({"claudeAiOauth":{"accessToken":"a2","refreshToken":"r2","expiresAt":2},)"
                    R"("mcpOAuth":{"srv":{"accessToken":"evil"}}})",
                    kOtherAccount, "mcpOAuth.srv.accessToken differs");
  }
}

TEST_CASE("signin: Claude's file names no account: one of the same plan and tier is not taken",
          "[signin]") {
  // Opaque tokens, the plan, the tier and the scopes: nothing tells two
  // accounts apart, which is why no refresh is taken on its word.
  StagedTool s(ToolFiles()[0]);
  WriteFile(s.staged, ClaudeCredentials("eve", 2));
  WriteBackReport report = WriteBackSignIn(s.staging, "s1");
  CHECK_KEPT_UNVERIFIED(report, s.host);
  CHECK(Slurp(s.host) == ClaudeCredentials("ada", 1));
}

TEST_CASE("signin: each tool's file replaced by something not JSON is kept aside", "[signin]") {
  for (const ToolFile& file : ToolFiles()) {
    INFO(file.tool);
    const std::string mine = file.sign_in("ada", 2);
    for (const std::string& garbage :
         {std::string(""), std::string("not json"), mine.substr(0, mine.size() / 2), mine + "{}",
          mine + "\n// a comment", std::string("{\"a\":\"\xff\"}")}) {
      INFO(garbage);
      StagedTool s(file);
      ExpectKeptAside(s, garbage, kOtherShape, kNotShape + "the sandbox's copy is not");
    }
  }
}

TEST_CASE("signin: each tool's file replaced by JSON of another shape is kept aside", "[signin]") {
  for (const ToolFile& file : ToolFiles()) {
    INFO(file.tool);
    std::vector<std::string> others{"{}",   "[]", "\"sk-ant-oat01-eve\"",
                                    "null", "7",  R"({"claudeAiOauth":"sk-ant-oat01-eve"})"};
    for (const ToolFile& other : ToolFiles()) {
      if (other.sign_in != file.sign_in) others.push_back(other.sign_in("ada", 2));
    }
    // The same file with one member more.
    std::string more = file.sign_in("ada", 2);
    more.insert(1, R"("mcpServers":{"x":{"command":"/tmp/evil"}},)");
    others.push_back(more);
    for (const std::string& json : others) {
      INFO(json);
      StagedTool s(file);
      ExpectKeptAside(s, json, kOtherShape, kNotShape);
    }
  }
  SECTION("opencode: a provider more or less") {
    StagedTool s(ToolFiles()[2]);
    std::string more = OpenCodeAuth("ada", 2);
    more.insert(1, R"("github-copilot":{"type":"oauth","refresh":"x","access":"y","expires":0},)");
    ExpectKeptAside(s, more, kOtherShape, "has \"github-copilot\", which the staged file has not");
    StagedTool t(ToolFiles()[2]);
    std::string less = OpenCodeAuth("ada", 2);
    less.erase(less.find(",\"openrouter\""), less.size() - less.find(",\"openrouter\"") - 1);
    ExpectKeptAside(t, less, kOtherShape, "lacks \"openrouter\"");
  }
}

TEST_CASE("signin: a member named twice is kept aside, whichever the tool would read", "[signin]") {
  // JSON parsers disagree on which of two members they keep: the check must
  // not pass the user's own while the tool reads the other account's.
  const std::string mine = ClaudeCredentials("ada", 2);
  const std::string eve = ClaudeCredentials("eve", 2, "pro", "default_claude_pro");
  for (const std::string& twice : {mine.substr(0, mine.size() - 1) + "," + eve.substr(1),
                                   eve.substr(0, eve.size() - 1) + "," + mine.substr(1)}) {
    StagedTool s(ToolFiles()[0]);
    ExpectKeptAside(s, twice, kOtherShape, "names \"claudeAiOauth\" twice");
  }
}

TEST_CASE("signin: names the agent chose reach the report shortened and without control codes",
          "[signin]") {
  StagedTool s(ToolFiles()[1]);
  std::string refreshed = CodexAuth("ada", 2);
  refreshed.insert(1, "\"\\u001b]0;owned\\u0007" + std::string(200, 'x') + "\":1,");
  ExpectKeptAside(s, refreshed, kOtherShape, "\\x1b]0;owned\\x07xxx");
  const std::string why = WriteBackSignIn(s.staging, "s2").kept_aside.at(0).why;
  CHECK(why.find('\x1b') == std::string::npos);
  CHECK(why.find('\a') == std::string::npos);
  CHECK(why.size() < 200);
}

TEST_CASE("signin: a deeply nested file is kept aside, not a crash", "[signin]") {
  StagedTool s(ToolFiles()[0]);
  ExpectKeptAside(s, std::string(200000, '['), kOtherShape, kNotShape);
  StagedTool t(ToolFiles()[0]);
  std::string nested = "{\"claudeAiOauth\":";
  for (int i = 0; i < 100000; ++i) nested += "{\"a\":";
  nested += "1" + std::string(100000, '}') + "}";
  ExpectKeptAside(t, nested, kOtherShape, kNotShape);
}

TEST_CASE("signin: each tool's file swapped for a symlink is not followed, nor kept aside",
          "[signin]") {
  for (const ToolFile& file : ToolFiles()) {
    for (const std::string target : {"/etc/passwd", "elsewhere"}) {
      INFO(file.tool << " -> " << target);
      StagedTool s(file);
      // The agent's symlink, resolved on the host, would reach the host's
      // /etc/passwd or a file of the user's.
      const std::string to = target == "elsewhere" ? WriteFile(s.dir / "elsewhere", "{}") : target;
      fs::remove(s.staged);
      fs::create_symlink(to, s.staged);
      WriteBackReport report = WriteBackSignIn(s.staging, "s1");
      CHECK(report.written.empty());
      CHECK(report.kept_aside.empty());
      REQUIRE(report.errors.size() == 1);
      CHECK_THAT(report.errors[0], Contains(s.host));
      CHECK_THAT(report.errors[0], Contains("symbolic link"));
      CHECK_THAT(report.errors[0], Contains("not followed"));
      CHECK(Slurp(s.host) == file.sign_in("ada", 1));
      CHECK(!fs::exists(s.aside));
    }
  }
}

TEST_CASE("signin: a huge or special file in place of the staged one brings nothing back",
          "[signin]") {
  const ToolFile& codex = ToolFiles()[1];
  SECTION("over 1 MiB, though JSON") {
    StagedTool s(codex);
    std::string huge = CodexAuth("ada", 2);
    huge.replace(huge.find("rt_ada-2"), 8, std::string(mojoup::sandbox::kMaxWriteBackBytes, 'r'));
    WriteFile(s.staged, huge);
    WriteBackReport report = WriteBackSignIn(s.staging, "s1");
    CHECK(report.written.empty());
    CHECK(report.kept_aside.empty());
    REQUIRE(report.errors.size() == 1);
    CHECK_THAT(report.errors[0], Contains("over 1 MiB is refused"));
    CHECK(Slurp(s.host) == CodexAuth("ada", 1));
    CHECK(!fs::exists(s.aside));
  }
  SECTION("a sparse file of 64 GiB is not read") {
    StagedTool s(codex);
    WriteFile(s.staged, "");
    fs::resize_file(s.staged, 64ull << 30);
    WriteBackReport report = WriteBackSignIn(s.staging, "s1");
    CHECK(report.written.empty());
    CHECK(report.kept_aside.empty());
    REQUIRE(report.errors.size() == 1);
    CHECK(!fs::exists(s.aside));
  }
  SECTION("a FIFO, which must not hang the write-back") {
    StagedTool s(codex);
    fs::remove(s.staged);
    REQUIRE(::mkfifo(s.staged.c_str(), 0600) == 0);
    WriteBackReport report = WriteBackSignIn(s.staging, "s1");
    CHECK(report.kept_aside.empty());
    REQUIRE(report.errors.size() == 1);
    CHECK_THAT(report.errors[0], Contains("not a regular file"));
  }
  SECTION("a directory") {
    StagedTool s(codex);
    fs::remove(s.staged);
    fs::create_directory(s.staged);
    WriteBackReport report = WriteBackSignIn(s.staging, "s1");
    CHECK(report.kept_aside.empty());
    REQUIRE(report.errors.size() == 1);
    CHECK(Slurp(s.host) == CodexAuth("ada", 1));
  }
}

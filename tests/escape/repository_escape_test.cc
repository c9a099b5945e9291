// Escape suite: the repository. Each attack runs inside a real native
// session as a normal user in the docker group, with the repository under
// that user's $HOME; then the test checks that it failed on the host and in
// the next session.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "../support/background_process.h"
#include "../support/real_user.h"
#include "../support/sandbox_image.h"
#include "../support/test_support.h"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using mojoup::test::Described;
using mojoup::test::RealUser;
using mojoup::test::Run;
using mojoup::test::Slurp;
using mojoup::test::UserNode;

// The session's attacks each print ESCAPED:<what> only if they worked.
constexpr const char* kPlantInGitDir = R"(
try() { if sh -c "$2" 2>/dev/null; then echo "ESCAPED:$1"; fi; }
try config "printf '[core]\n\tfsmonitor = \"touch \$HOME/pwned-fsmonitor\"\n' >> .git/config"
try config-replace "cp .git/config /tmp/c && printf '[core]\n\tpager = touch \$HOME/pwned-pager\n' >> /tmp/c && mv /tmp/c .git/config"
try config-rename "mv .git/config .git/config.old"
try hook "printf '#!/bin/sh\ntouch \$HOME/pwned-hook\n' > .git/hooks/post-commit && chmod +x .git/hooks/post-commit"
try hooks-replace "mv .git/hooks .git/hooks.old"
try hooks-remove "rm -rf .git/hooks"
try info "echo '* filter=evil' > .git/info/attributes"
try modules "mkdir -p .git/modules/sub && echo x > .git/modules/sub/config"
try worktrees "mkdir -p .git/worktrees/other"
try gitdir-rename "mv .git .git-real"
try gitdir-remove "rmdir .git"
try gitdir-replace-file "mv .git .git-real; echo gitdir: /tmp > .git"
echo attacks-done
)";

TEST_CASE("escape: the session cannot plant what git runs on the host", "[escape][git]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  user->ClearPwned();
  const std::string config_before = Slurp(node.repo + "/.git/config");

  Run run = node.Sh(kPlantInGitDir);
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("attacks-done"));
  REQUIRE_THAT(run.result.out, !Contains("ESCAPED"));

  // A commit from inside still works: what git needs for it is writable.
  Run commit = node.Sh(
      "echo change > changed.txt && git add changed.txt && "
      "GIT_AUTHOR_DATE=2026-01-01T00:00:00 git commit -q -m from-the-sandbox && echo committed");
  INFO(Described(commit));
  REQUIRE(commit.result.exit_code == 0);
  REQUIRE_THAT(commit.result.out, Contains("committed"));

  // On the host, the user's git runs nothing the session planted.
  REQUIRE(Slurp(node.repo + "/.git/config") == config_before);
  REQUIRE(fs::is_directory(node.repo + "/.git"));
  Run log = node.Git({"log", "--format=%s"});
  REQUIRE_THAT(log.result.out, Contains("from-the-sandbox"));
  REQUIRE(node.Git({"status"}).result.exit_code == 0);
  REQUIRE(node.Git({"commit", "-q", "--allow-empty", "-m", "on the host"}).result.exit_code == 0);
  REQUIRE(node.Git({"checkout", "-q", "-b", "other"}).result.exit_code == 0);
  REQUIRE(user->Pwned().empty());
  // The protected entries git would have created are there, empty.
  REQUIRE(fs::is_directory(node.repo + "/.git/modules"));
  REQUIRE(fs::is_empty(node.repo + "/.git/modules"));
  REQUIRE(node.Leftovers() == 0);
}

// Removes a directory the test made outside the node's own (a worktree).
struct RemovedAtEnd {
  const std::string& path;
  ~RemovedAtEnd() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// A linked worktree of the node's repository at ~/src/<name>.
std::string AddWorktree(const UserNode& node, const std::string& name) {
  const std::string path = node.user.home + "/src/" + name;
  Run added = node.Git({"worktree", "add", "-q", path});
  INFO(Described(added));
  REQUIRE(added.result.exit_code == 0);
  return path;
}

TEST_CASE("escape: a .git file naming a host directory is not mounted by the next session",
          "[escape][git][worktree]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  const std::string ssh = user->home + "/.ssh";
  const std::string keys = ssh + "/authorized_keys";
  user->Write(keys, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHost user@host\n", 0600);
  const std::string keys_before = Slurp(keys);

  // From inside, the git directory cannot be swapped for a .git file at all.
  Run inside = node.Sh(
      "if mv .git .git-real 2>/dev/null; then echo ESCAPED:rename; fi; "
      "if echo \"gitdir: $HOME/.ssh\" > .git 2>/dev/null; then echo ESCAPED:write; fi; echo done");
  INFO(Described(inside));
  REQUIRE_THAT(inside.result.out, Contains("done"));
  REQUIRE_THAT(inside.result.out, !Contains("ESCAPED"));
  REQUIRE(fs::is_directory(node.repo + "/.git"));

  // However such a .git file got there, the next session does not take it.
  const std::string other = AddWorktree(node, "other-" + std::to_string(getpid()));
  RemovedAtEnd remove{other};
  fs::rename(node.repo + "/.git", node.repo + "/.git-real");
  struct Case {
    std::string gitdir;
    std::string said;
  };
  const std::vector<Case> cases = {
      {ssh, "not a linked worktree's entry"},
      {"../../.ssh", "not a linked worktree's entry"},
      {"/etc", "not a linked worktree's entry"},
      {"/run", "not a linked worktree's entry"},
      {user->home, "not a linked worktree's entry"},
      {"/nonexistent/worktrees/x", "not a directory"},
      // A real worktree entry, but of another checkout: its back-pointer
      // names that checkout's .git.
      {node.repo + "/.git-real/worktrees/" + fs::path(other).filename().string(),
       "belongs to another worktree"},
  };
  for (const Case& c : cases) {
    user->Write(node.repo + "/.git", "gitdir: " + c.gitdir + "\n");
    Run next = node.Sh(
        "echo ssh-ed25519 EVIL >> $HOME/.ssh/authorized_keys; "
        "echo x > /etc/mojoup-escape; echo ran");
    INFO(c.gitdir << "\n" << Described(next));
    CHECK(next.result.exit_code == 1);
    CHECK_THAT(next.result.err, Contains(c.said));
    CHECK_THAT(next.result.out, !Contains("ran"));
    CHECK(Slurp(keys) == keys_before);
  }
  REQUIRE(!fs::exists("/etc/mojoup-escape"));
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("escape: a linked worktree commits, and cannot redirect its own git directory",
          "[escape][git][worktree]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  user->ClearPwned();
  const std::string worktree = AddWorktree(node, "wt-" + std::to_string(getpid()));
  const std::string entry = node.repo + "/.git/worktrees/" + fs::path(worktree).filename().string();
  const std::string config_before = Slurp(node.repo + "/.git/config");
  RemovedAtEnd remove{worktree};

  Run run = node.Cli(
      {"run", "--repo", worktree, "--", "/bin/sh", "-c",
       "try() { if sh -c \"$2\" 2>/dev/null; then echo \"ESCAPED:$1\"; fi; }\n"
       "try commondir \"echo $HOME/.ssh > " +
           entry +
           "/commondir\"\n"
           "try gitdir \"echo /tmp > " +
           entry +
           "/gitdir\"\n"
           "try dot-git \"echo 'gitdir: /tmp' > .git\"\n"
           "try main-config \"echo '[core] fsmonitor = touch ~/pwned-wt' >> " +
           node.repo +
           "/.git/config\"\n"
           "try main-hooks \"echo x > " +
           node.repo +
           "/.git/hooks/post-commit\"\n"
           "try packed \"echo x > " +
           node.repo +
           "/.git/packed-refs\"\n"
           "echo change > wt.txt && git add wt.txt && git commit -q -m from-the-worktree && "
           "echo committed"});
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("committed"));
  REQUIRE_THAT(run.result.out, !Contains("ESCAPED"));
  REQUIRE(Slurp(node.repo + "/.git/config") == config_before);
  REQUIRE_THAT(node.Git({"log", "--all", "--format=%s"}).result.out, Contains("from-the-worktree"));
  REQUIRE(user->Pwned().empty());

  // A commondir rewritten some other way: the next session refuses it.
  const std::string saved = Slurp(entry + "/commondir");
  user->Write(entry + "/commondir", user->home + "/.ssh\n");
  Run next = node.Cli({"run", "--repo", worktree, "--", "true"});
  INFO(Described(next));
  REQUIRE(next.result.exit_code == 1);
  REQUIRE_THAT(next.result.err, Contains("commondir does not lead back"));
  user->Write(entry + "/commondir", saved);
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("escape: the repository's policy cannot be rewritten by the session it governs",
          "[escape][policy]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  const std::string policy = R"({"agents": {"sandbox": "required"}})";
  node.Policy(policy);
  Run run = node.Sh(R"(
try() { if sh -c "$2" 2>/dev/null; then echo "ESCAPED:$1"; fi; }
try rewrite "echo '{\"agents\": {\"network\": {\"allow\": [{\"host\": \"127.0.0.1\"}]}}}' > .mojoup/policy.json"
try delete "rm .mojoup/policy.json"
try rename "mv .mojoup .mojoup-old"
try remove "rm -rf .mojoup"
try add "echo x > .mojoup/other.json"
echo attacks-done)");
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("attacks-done"));
  REQUIRE_THAT(run.result.out, !Contains("ESCAPED"));
  REQUIRE(Slurp(node.repo + "/.mojoup/policy.json") == policy);
  // The next run trusts it: nothing changed.
  Run next = node.Sh("echo fine");
  INFO(Described(next));
  REQUIRE(next.result.exit_code == 0);
  REQUIRE(next.result.out == "fine\n");
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("escape: a policy planted by a session is not trusted by the next run",
          "[escape][policy]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  const std::string permissive =
      R"({"agents": {"network": {"allow": [{"host": "127.0.0.1"}, {"host": "169.254.169.254"}]}}})";
  std::string subdir_said;

  SECTION("where the repository had none") {
    Run plant = node.Sh("mkdir .mojoup && echo '" + permissive +
                        "' > .mojoup/policy.json && "
                        "echo planted");
    INFO(Described(plant));
    REQUIRE_THAT(plant.result.out, Contains("planted"));
    Run next = node.Sh("echo ran");
    INFO(Described(next));
    REQUIRE(next.result.exit_code == 1);
    REQUIRE_THAT(next.result.err, Contains(node.repo + "/.mojoup"));
    REQUIRE_THAT(next.result.err, Contains("changed while sandboxed session"));
    REQUIRE_THAT(next.result.err, Contains("--accept-policy"));
    REQUIRE(next.result.out.empty());
    // The user looks, and says it is theirs.
    Run accepted = node.Sh("echo ran", {"--accept-policy"});
    INFO(Described(accepted));
    REQUIRE(accepted.result.exit_code == 0);
    REQUIRE(accepted.result.out == "ran\n");
    REQUIRE(node.Sh("echo again").result.out == "again\n");
  }
  SECTION("in a subdirectory, which then becomes a repository root of its own") {
    node.Policy(R"({"agents": {"sandbox": "required"}})");
    Run plant = node.Sh(
        "mkdir -p sub/.mojoup && echo '{}' > sub/.mojoup/policy.json && "
        "mkdir -p sub2/.git && echo planted");
    INFO(Described(plant));
    REQUIRE_THAT(plant.result.out, Contains("planted"));
    Run next = node.Cli({"run", "--repo", node.repo + "/sub", "--", "true"});
    INFO(Described(next));
    CHECK(next.result.exit_code == 1);
    CHECK_THAT(next.result.err, Contains("changed while sandboxed session"));
    // The .git that would have made sub2 a root of its own was moved aside
    // when the session ended: sub2 is the repository's, under its policy.
    CHECK_THAT(plant.result.err, Contains(node.repo + "/sub2/.git"));
    CHECK_FALSE(fs::exists(node.repo + "/sub2/.git"));
    Run in_sub2 = node.Cli({"run", "--repo", node.repo + "/sub2", "--", "true"});
    INFO(Described(in_sub2));
    CHECK(in_sub2.result.exit_code == 0);
    CHECK_THAT(in_sub2.result.err, Contains(node.repo + "/.mojoup/policy.json) requires"));
  }
  SECTION("a tree moved into place, its policy older than the session") {
    user->Write(node.repo + "/docs/example/.mojoup/policy.json", "{}");
    Run plant = node.Sh("mv docs/example moved && echo planted");
    INFO(Described(plant));
    REQUIRE_THAT(plant.result.out, Contains("planted"));
    Run next = node.Cli({"run", "--repo", node.repo + "/moved", "--", "true"});
    INFO(Described(next));
    REQUIRE(next.result.exit_code == 1);
    REQUIRE_THAT(next.result.err, Contains("changed while sandboxed session"));
  }
  SECTION("the user's own edit after the session is trusted") {
    REQUIRE(node.Sh("true").result.exit_code == 0);
    node.Policy(R"({"agents": {"sandbox": "preferred"}})");
    Run next = node.Sh("echo ran");
    INFO(Described(next));
    REQUIRE(next.result.exit_code == 0);
    REQUIRE(next.result.out == "ran\n");
  }
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("escape: a .git created where the repository had none is moved aside", "[escape][git]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  user->ClearPwned();
  fs::remove_all(node.repo + "/.git");
  Run run = node.Sh(
      "mkdir -p .git && printf '[core]\\n\\tfsmonitor = \"touch $HOME/pwned-new\"\\n' > "
      ".git/config "
      "&& echo planted");
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("planted"));
  REQUIRE_THAT(run.result.err, Contains("moved aside"));
  REQUIRE(!fs::exists(node.repo + "/.git"));
  bool aside = false;
  for (const auto& entry : fs::directory_iterator(node.repo)) {
    aside = aside || entry.path().filename().string().rfind(".git.sandbox-", 0) == 0;
  }
  REQUIRE(aside);
  node.Git({"status"});
  REQUIRE(user->Pwned().empty());
  REQUIRE(node.Leftovers() == 0);
}

}  // namespace

namespace {

// A repository at PATH (relative to the session's working directory) with
// one commit and a core.fsmonitor that would touch ~/pwned-NAME on the host.
std::string PlantRepository(const std::string& path, const std::string& name) {
  return "mkdir -p " + path + " && (cd " + path +
         " && git init -q -b main 2>/dev/null && git config user.email a@b && "
         "git config user.name a && echo y > g && git add g && git commit -qm s && "
         "git config core.fsmonitor 'touch $HOME/pwned-" +
         name + "; false')";
}

TEST_CASE("escape: a repository planted at a submodule path is moved aside", "[escape][git]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  user->ClearPwned();
  // A nested clone the user made before the session (not a submodule).
  user->Write(node.repo + "/vendor/lib/README", "lib\n");
  REQUIRE(user->As({"git", "init", "-q", "-b", "main"}, {}, std::chrono::seconds(30),
                   node.repo + "/vendor/lib")
              .result.exit_code == 0);

  const std::string gitlink =
      "git update-index --add --cacheinfo 160000,$(git -C $1 rev-parse "
      "HEAD),$1";
  Run run = node.Sh(
      "add() { " + gitlink + "; }; " + PlantRepository("sub", "submodule") +
      " && add sub && "
      // The user's older nested clone, its config rewritten, renamed into place.
      "(cd vendor/lib && git config user.email a@b && git config user.name a && git add README && "
      "git commit -qm l && git config core.fsmonitor 'touch $HOME/pwned-moved; false') && "
      "mv vendor/lib moved && add moved && "
      "git commit -qm gitlinks && echo planted");
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("planted"));
  REQUIRE_THAT(run.result.err,
               Contains("a repository git would find at " + node.repo + "/sub/.git"));
  REQUIRE_THAT(run.result.err,
               Contains("a repository git would find at " + node.repo + "/moved/.git"));
  REQUIRE(!fs::exists(node.repo + "/sub/.git"));
  REQUIRE(!fs::exists(node.repo + "/moved/.git"));

  // The user's git on the host runs nothing of theirs.
  REQUIRE(node.Git({"status"}).result.exit_code == 0);
  REQUIRE(node.Git({"diff", "HEAD~1"}).result.exit_code == 0);
  REQUIRE(user->Pwned().empty());
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("escape: a submodule's own git directory is as read-only as the repository's",
          "[escape][git]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  user->ClearPwned();
  // An embedded submodule, as older git and some tools leave them.
  user->Write(node.repo + "/lib/g", "g\n");
  for (const std::vector<std::string>& git :
       {std::vector<std::string>{"init", "-q", "-b", "main"},
        {"-c", "user.email=a@b", "-c", "user.name=a", "add", "g"},
        {"-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "g"}}) {
    std::vector<std::string> argv{"git"};
    argv.insert(argv.end(), git.begin(), git.end());
    REQUIRE(user->As(argv, {}, std::chrono::seconds(30), node.repo + "/lib").result.exit_code == 0);
  }
  REQUIRE(node.Git({"add", "lib"}).result.exit_code == 0);
  REQUIRE(node.Git({"commit", "-qm", "with lib"}).result.exit_code == 0);
  const std::string config_before = Slurp(node.repo + "/lib/.git/config");

  Run run = node.Sh(
      "try() { if sh -c \"$2\" 2>/dev/null; then echo \"ESCAPED:$1\"; fi; }; "
      "try config \"echo '[core] fsmonitor = touch ~/pwned-lib' >> lib/.git/config\"; "
      "try hooks \"echo x > lib/.git/hooks/post-checkout\"; "
      "try rename \"mv lib/.git lib/.git-old\"; "
      "try nested \"" +
      PlantRepository("lib/inner", "inner") +
      " && cd lib && git update-index --add --cacheinfo 160000,\\$(git -C inner rev-parse "
      "HEAD),inner"
      "\"; echo done");
  INFO(Described(run));
  REQUIRE_THAT(run.result.out, Contains("done"));
  REQUIRE_THAT(run.result.out, !Contains("ESCAPED:config"));
  REQUIRE_THAT(run.result.out, !Contains("ESCAPED:hooks"));
  REQUIRE_THAT(run.result.out, !Contains("ESCAPED:rename"));
  REQUIRE(Slurp(node.repo + "/lib/.git/config") == config_before);
  // A repository planted inside the submodule, at a gitlink of its index,
  // is moved aside like one in the repository.
  REQUIRE(!fs::exists(node.repo + "/lib/inner/.git"));
  REQUIRE(node.Git({"status"}).result.exit_code == 0);
  REQUIRE(user->Pwned().empty());
  REQUIRE(node.Leftovers() == 0);
}

}  // namespace

namespace {

// `plant DIR NAME`: a git directory at DIR (bare, in a directory that may
// already exist) whose config runs ~/pwned-NAME at the host's `git status`
// and ~/pwned-NAME-pager at the host's paged commands, with DIR's parent as
// its work tree.
constexpr const char* kPlant = R"sh(
plant() {
  git init -q --bare "$1" 2>/dev/null &&
  git config -f "$1/config" core.bare false &&
  git config -f "$1/config" core.worktree "$(cd "$1/.." && pwd)" &&
  git config -f "$1/config" core.fsmonitor "touch \$HOME/pwned-$2; false" &&
  git config -f "$1/config" core.pager "touch \$HOME/pwned-$2-pager; cat"
}
)sh";

// As the user on the host, in `where`: `git status`, and `git branch` at a
// terminal, which pages.
void GitOnTheHost(const UserNode& node, const std::string& where) {
  node.user.As({"git", "status"}, {}, std::chrono::seconds(30), where);
  node.user.As({"script", "-qec", "git branch", "/dev/null"}, {}, std::chrono::seconds(30), where);
}

TEST_CASE("escape: no repository a session plants anywhere in the tree runs on the host",
          "[escape][git]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  user->ClearPwned();
  // Directories the project already has, which the session turns into
  // repositories of git's shape.
  user->Write(node.repo + "/src/main.c", "int main(void) { return 0; }\n");
  user->Write(node.repo + "/test/refs/expected.txt", "expected\n");
  REQUIRE(node.Git({"add", "."}).result.exit_code == 0);
  REQUIRE(node.Git({"commit", "-qm", "project"}).result.exit_code == 0);

  Run run = node.Sh(std::string(kPlant) + R"(
plant docs/blob symlink && mkdir -p lib && ln -s ../docs/blob lib/.git &&
plant src bare &&
plant test/refs refs &&
plant tools/common commondir && rm tools/common/HEAD && mkdir -p tools/wt &&
  echo 'ref: refs/heads/main' > tools/wt/HEAD && echo ../common > tools/wt/commondir &&
plant build/gd gitfile && mkdir -p app && echo 'gitdir: ../build/gd' > app/.git &&
echo planted
)");
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("planted"));
  for (const char* place : {"lib/.git", "src", "test/refs", "tools/wt", "app/.git", "build/gd"}) {
    CHECK_THAT(run.result.err,
               Contains("a repository git would find at " + node.repo + "/" + place));
  }
  for (const char* where : {"", "/lib", "/src", "/test/refs", "/tools/wt", "/app", "/build/gd"}) {
    GitOnTheHost(node, node.repo + where);
  }
  CHECK(user->Pwned().empty());
  // The project's files and its own repository are as they were.
  CHECK(Slurp(node.repo + "/src/main.c") == "int main(void) { return 0; }\n");
  CHECK(Slurp(node.repo + "/test/refs/expected.txt") == "expected\n");
  CHECK(node.Git({"status"}).result.exit_code == 0);
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("escape: a repository planted while a second session starts is disarmed by its own",
          "[escape][git]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  user->ClearPwned();
  user->Write(node.repo + "/src/main.c", "int main(void) { return 0; }\n");
  // The first session plants, then waits for the second to come and go: the
  // second's snapshot holds the planting as if it were the user's.
  std::vector<std::string> argv = node.user.Prefix(node.env, node.repo);
  argv.insert(argv.end(),
              {node.user.bin + "/mojoup-node", "run", "--repo", node.repo, "--", "/bin/sh", "-c",
               std::string(kPlant) +
                   "plant src racing && : > planted && "
                   "i=0; while [ ! -e done ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done"});
  mojoup::test::BackgroundProcess first({}, argv);
  for (int i = 0; i < 600 && !fs::exists(node.repo + "/planted"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(fs::exists(node.repo + "/planted"));
  Run second = node.Sh("echo second");
  INFO(Described(second));
  CHECK(second.result.out == "second\n");
  user->Write(node.repo + "/done", "");
  REQUIRE(first.Wait(std::chrono::seconds(60)).has_value());
  const std::string said = first.Stderr();
  INFO(said);
  CHECK_THAT(said, Contains("a repository git would find at " + node.repo + "/src"));
  GitOnTheHost(node, node.repo + "/src");
  CHECK(user->Pwned().empty());
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("escape: a git directory renamed into place by a second session does not run",
          "[escape][git]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  user->ClearPwned();
  // The first session plants a repository under another name.
  Run first = node.Sh(
      "mkdir -p vendor && cd vendor && git init -q -b main 2>/dev/null && git config user.email "
      "a@b && git config user.name a && echo v > v && git add v && git commit -qm v && "
      "git config core.fsmonitor 'touch $HOME/pwned-renamed; false' && mv .git dotgit && "
      "echo planted");
  INFO(Described(first));
  REQUIRE_THAT(first.result.out, Contains("planted"));
  // The second puts back what the first session's end took away, renames
  // it to .git and makes vendor a submodule: a rename keeps change times.
  Run second = node.Sh(
      "for f in vendor/dotgit/*.sandbox-*; do mv \"$f\" \"${f%%.sandbox-*}\"; done; "
      "mv vendor/dotgit vendor/.git && "
      "git update-index --add --cacheinfo 160000,$(git -C vendor rev-parse HEAD),vendor && "
      "echo renamed");
  INFO(Described(second));
  REQUIRE_THAT(second.result.out, Contains("renamed"));
  CHECK_THAT(second.result.err,
             Contains("a repository git would find at " + node.repo + "/vendor/.git"));
  GitOnTheHost(node, node.repo);
  GitOnTheHost(node, node.repo + "/vendor");
  CHECK(user->Pwned().empty());
  CHECK(node.Leftovers() == 0);
}

// A session that runs `command`, leaving `path` too large to read: the run
// succeeds, says each of `said`, and the file is moved aside.
void RequireMovedAside(const UserNode& node, const std::string& command, const std::string& path,
                       const std::vector<std::string>& said) {
  Run run = node.Sh(command + " && echo blown");
  INFO(Described(run));
  REQUIRE_THAT(run.result.out, Contains("blown"));
  CHECK(run.result.exit_code == 0);
  for (const std::string& sentence : said) CHECK_THAT(run.result.err, Contains(sentence));
  CHECK_FALSE(fs::exists(node.repo + "/" + path));
}

TEST_CASE("escape: an index the session blew up is moved aside and the next run starts",
          "[escape][dos]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  RequireMovedAside(node, "truncate -s 32G .git/index", ".git/index",
                    {"cannot be read safely", "git reset"});
  Run status = node.Cli({"status"});
  CHECK_THAT(status.result.out, !Contains("not fully removed"));
  Run next = node.Sh("echo ran");
  INFO(Described(next));
  CHECK(next.result.exit_code == 0);
  CHECK(next.result.out == "ran\n");
  CHECK(node.Git({"reset", "-q"}).result.exit_code == 0);
  CHECK(node.Git({"status"}).result.exit_code == 0);
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("escape: a policy the session blew up is moved aside", "[escape][dos]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  RequireMovedAside(node, "mkdir .mojoup && truncate -s 2M .mojoup/policy.json",
                    ".mojoup/policy.json",
                    {".mojoup/policy.json of 2097152 bytes, which no run reads",
                     "git checkout -- .mojoup/policy.json"});
  // What is left is the session's .mojoup/, which the next run asks about.
  Run next = node.Sh("echo ran");
  INFO(Described(next));
  CHECK_THAT(next.result.err, Contains("changed while sandboxed session"));
  CHECK_THAT(next.result.err, !Contains("1 MiB"));
  CHECK(node.Leftovers() == 0);
}

TEST_CASE("escape: run fails when clean-up could not check all the session left", "[escape][git]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  user->ClearPwned();
  // Deeper than the walk goes, a repository; 1,001 .git files beside it,
  // more than a walk before a session takes; and, in the repository's own
  // git directory, a rebase whose todo list runs a command.
  Run run = node.Sh(std::string(kPlant) + R"sh(
d=deep; i=0; while [ $i -lt 520 ]; do d=$d/d; i=$((i+1)); done
mkdir -p "$d" && plant "$d/r" deep &&
i=0; while [ $i -le 1000 ]; do mkdir -p many/$i && : > many/$i/.git; i=$((i+1)); done
mkdir -p .git/rebase-merge && echo 'exec touch $HOME/pwned-rebase' > .git/rebase-merge/git-rebase-todo &&
echo made
)sh");
  INFO(Described(run));
  REQUIRE_THAT(run.result.out, Contains("made"));
  CHECK(run.result.exit_code == 1);
  CHECK_THAT(run.result.err, Contains("lies deeper than 512 levels"));
  CHECK_THAT(run.result.err, Contains(node.repo + "/many/1000/.git"));
  CHECK_THAT(run.result.err, Contains(".git/rebase-merge, which git on this host would obey"));
  CHECK_FALSE(fs::exists(node.repo + "/.git/rebase-merge"));
  // Once the user has looked, the session's record goes at the next status.
  fs::remove_all(node.repo + "/deep");
  fs::remove_all(node.repo + "/many");
  CHECK(node.Cli({"status"}).result.exit_code == 0);
  CHECK(node.Leftovers() == 0);
}

}  // namespace

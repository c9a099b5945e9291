// Where git would find a repository, by git's own rules, and what a
// session's changes to those places come to. Real git, on a temporary tree:
// after each planting, the host's `git status` in the planted place must run
// nothing of the session's.
#include "guard/git_places.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "../support/test_support.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using mojoup::sandbox::DisarmGitPlaces;
using mojoup::sandbox::FindGitPlaces;
using mojoup::sandbox::GitPlaces;
using mojoup::sandbox::GitPlacesFromText;
using mojoup::sandbox::GitPlacesToText;
using mojoup::sandbox::GitWalkBounds;
using mojoup::test::RunWithEnv;
using mojoup::test::TempDir;

struct Tree {
  TempDir dir;
  std::string root = fs::canonical(dir.path()).string() + "/repo";
  std::string home = fs::canonical(dir.path()).string() + "/home";

  Tree() {
    fs::create_directories(root);
    fs::create_directories(home);
    REQUIRE(Git(root, {"init", "-q", "-b", "main"}) == 0);
    Write("README", "readme\n");
    Write("src/main.c", "int main(void) { return 0; }\n");
    REQUIRE(Git(root, {"add", "."}) == 0);
    REQUIRE(Git(root, {"commit", "-qm", "first"}) == 0);
  }

  // git as a user would run it: their own (empty) global config.
  int Git(const std::string& where, const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"git", "-C", where};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunWithEnv({"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=a",
                       "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b"},
                      argv, std::chrono::seconds(30))
        .result.exit_code;
  }

  void Write(const std::string& relative, const std::string& text) const {
    const fs::path path = fs::path(root) / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }

  // A git directory at `relative` (bare shape) whose config runs the
  // fsmonitor that leaves `marker` in the home.
  void PlantGitDir(const std::string& relative, const std::string& marker) const {
    const std::string at = root + "/" + relative;
    fs::create_directories(at);
    REQUIRE(Git(at, {"init", "-q", "--bare"}) == 0);
    std::ofstream(at + "/config", std::ios::app)
        << "[core]\n\tbare = false\n\tworktree = " << fs::path(at).parent_path().string()
        << "\n\tfsmonitor = \"touch " << home << "/" << marker << "; false\"\n\tpager = \"touch "
        << home << "/" << marker << "; cat\"\n";
  }

  // Whether git run in `relative` ran anything planted: `git status`, and
  // `git branch` at a terminal (which pages).
  bool Ran(const std::string& relative, const std::string& marker) const {
    const std::string where = root + "/" + relative;
    Git(where, {"status"});
    RunWithEnv({"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1"},
               {"script", "-qec", "git -C " + where + " branch", "/dev/null"},
               std::chrono::seconds(30));
    return fs::exists(home + "/" + marker);
  }

  GitPlaces Before() const {
    auto places = FindGitPlaces(root, {root + "/.git"}, {});
    REQUIRE(places.ok());
    return *places;
  }

  std::vector<std::string> After(const GitPlaces& before) const {
    std::vector<std::string> notices, errors;
    DisarmGitPlaces(root, before, "0123456789abcdef", notices, errors);
    INFO(fmt::format("{}", fmt::join(errors, "\n")));
    CHECK(errors.empty());
    return notices;
  }
};

// The shapes a session plants, each where git run in `where` finds it.
struct Shape {
  const char* name;
  const char* where;
  void (*plant)(const Tree&);
};

const Shape kShapes[] = {
    {"a .git that is a symbolic link to a git directory elsewhere in the tree", "lib",
     [](const Tree& tree) {
       tree.PlantGitDir("docs/assets/blob", "pwned");
       fs::create_directories(tree.root + "/lib");
       fs::create_directory_symlink("../docs/assets/blob", tree.root + "/lib/.git");
     }},
    {"a bare repository written into an existing directory", "src",
     [](const Tree& tree) { tree.PlantGitDir("src", "pwned"); }},
    {"a bare repository in a refs directory of its own", "src/refs",
     [](const Tree& tree) { tree.PlantGitDir("src/refs", "pwned"); }},
    {"a directory whose commondir leads to a planted git directory", "tools/wt",
     [](const Tree& tree) {
       tree.PlantGitDir("tools/common", "pwned");
       fs::remove(tree.root + "/tools/common/HEAD");  // not a repository by itself
       fs::create_directories(tree.root + "/tools/wt");
       std::ofstream(tree.root + "/tools/wt/HEAD") << "ref: refs/heads/main\n";
       std::ofstream(tree.root + "/tools/wt/commondir") << "../common\n";
     }},
    {"a .git file and the git directory it names", "app",
     [](const Tree& tree) {
       tree.PlantGitDir("build/gd", "pwned");
       fs::create_directories(tree.root + "/app");
       std::ofstream(tree.root + "/app/.git") << "gitdir: ../build/gd\n";
     }},
    {"a .git directory in a directory of the tree", "vendor/x",
     [](const Tree& tree) {
       fs::create_directories(tree.root + "/vendor/x");
       REQUIRE(tree.Git(tree.root + "/vendor/x", {"init", "-q"}) == 0);
       std::ofstream(tree.root + "/vendor/x/.git/config", std::ios::app)
           << "[core]\n\tfsmonitor = \"touch " << tree.home << "/pwned; false\"\n";
     }},
};

TEST_CASE("git places: each shape git would take as a repository is disarmed", "[git]") {
  for (const Shape& shape : kShapes) {
    INFO(shape.name);
    // Planted as it is, git on the host runs it: the shape is one git takes.
    {
      Tree control;
      shape.plant(control);
      CHECK(control.Ran(shape.where, "pwned"));
    }
    Tree tree;
    const GitPlaces before = tree.Before();
    REQUIRE(before.places.size() == 1);
    CHECK(before.places[0].path == ".git");
    CHECK(before.places[0].guarded);
    shape.plant(tree);
    const std::vector<std::string> notices = tree.After(before);
    INFO(fmt::format("{}", fmt::join(notices, "\n")));
    REQUIRE(!notices.empty());
    CHECK_THAT(notices.front(), Contains(tree.root + "/"));
    CHECK_FALSE(tree.Ran(shape.where, "pwned"));
    CHECK_FALSE(tree.Ran("", "pwned"));
    // The user's own repository works as before, and their files are there.
    CHECK(tree.Git(tree.root, {"status"}) == 0);
    CHECK(tree.Git(tree.root, {"commit", "-q", "--allow-empty", "-m", "after"}) == 0);
    CHECK(fs::exists(tree.root + "/src/main.c"));
    // What was disarmed stays so: the next session starts from it.
    CHECK(tree.After(tree.Before()).empty());
  }
}

TEST_CASE("git places: a git directory renamed into place by a later session is disarmed",
          "[git]") {
  Tree tree;
  // The first session plants a git directory under another name, with
  // HEAD and config aside already (nothing git would take).
  const GitPlaces first = tree.Before();
  tree.PlantGitDir("vendor/dotgit", "pwned");
  fs::rename(tree.root + "/vendor/dotgit/HEAD", tree.root + "/vendor/dotgit/HEAD.keep");
  CHECK(tree.After(first).empty());
  // The second renames it to .git, restores HEAD and makes vendor a
  // submodule: a rename keeps every change time.
  const GitPlaces second = tree.Before();
  fs::rename(tree.root + "/vendor/dotgit/HEAD.keep", tree.root + "/vendor/dotgit/HEAD");
  fs::rename(tree.root + "/vendor/dotgit", tree.root + "/vendor/.git");
  const std::vector<std::string> notices = tree.After(second);
  INFO(fmt::format("{}", fmt::join(notices, "\n")));
  CHECK_THAT(fmt::format("{}", fmt::join(notices, "\n")), Contains(tree.root + "/vendor/.git"));
  CHECK_FALSE(tree.Ran("vendor", "pwned"));
  CHECK_FALSE(tree.Ran("", "pwned"));
}

TEST_CASE("git places: a nested repository the user had is left alone unless changed", "[git]") {
  Tree tree;
  fs::create_directories(tree.root + "/third_party/lib");
  REQUIRE(tree.Git(tree.root + "/third_party/lib", {"init", "-q"}) == 0);
  const std::string config = tree.root + "/third_party/lib/.git/config";
  const GitPlaces before = tree.Before();
  REQUIRE(before.places.size() == 2);
  // Commits there are work, not a planting.
  std::ofstream(tree.root + "/third_party/lib/f") << "f\n";
  REQUIRE(tree.Git(tree.root + "/third_party/lib", {"add", "f"}) == 0);
  REQUIRE(tree.Git(tree.root + "/third_party/lib", {"commit", "-qm", "f"}) == 0);
  CHECK(fmt::format("{}", fmt::join(tree.After(before), "\n")) == "");
  CHECK(fs::exists(config));

  SECTION("its config rewritten") {
    std::ofstream(config, std::ios::app)
        << "[core]\n\tfsmonitor = \"touch " << tree.home << "/pwned; false\"\n";
  }
  SECTION("a hook added") {
    std::ofstream(tree.root + "/third_party/lib/.git/hooks/post-checkout") << "#!/bin/sh\n";
  }
  SECTION("replaced by another at the same path") {
    fs::rename(tree.root + "/third_party/lib/.git", tree.root + "/third_party/lib/old");
    REQUIRE(tree.Git(tree.root + "/third_party/lib", {"init", "-q"}) == 0);
  }
  const std::vector<std::string> notices = tree.After(before);
  INFO(fmt::format("{}", fmt::join(notices, "\n")));
  CHECK_THAT(fmt::format("{}", fmt::join(notices, "\n")), Contains("config; it is moved aside to"));
  CHECK_FALSE(fs::exists(config));
  CHECK_FALSE(tree.Ran("third_party/lib", "pwned"));
}

TEST_CASE("git places: a walk past its bounds refuses before and reports after", "[git]") {
  Tree tree;
  for (int i = 0; i < 20; ++i) tree.Write("many/f" + std::to_string(i), "x");
  GitWalkBounds small;
  small.max_entries = 10;
  auto refused = FindGitPlaces(tree.root, {}, {}, small);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(std::string(refused.status().message()),
             Contains("holds more than 10 files and directories"));
  GitWalkBounds shallow;
  shallow.max_depth = 3;
  tree.Write("a/b/c/d/e", "x");
  CHECK_FALSE(FindGitPlaces(tree.root, {}, {}, shallow).ok());

  const GitPlaces before = tree.Before();
  std::vector<std::string> notices, errors;
  DisarmGitPlaces(tree.root, before, "0123456789abcdef", notices, errors, small);
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Contains("do not run git there until you have looked"));
}

TEST_CASE("git places: after a session a walk too deep or too wide still disarms what it sees",
          "[git]") {
  Tree tree;
  const GitPlaces before = tree.Before();
  tree.PlantGitDir("src", "pwned");
  tree.Write("a/b/c/d/e/f/g/h", "deep\n");
  GitWalkBounds shallow;
  shallow.max_depth = 5;
  shallow.max_places = 0;
  std::vector<std::string> notices, errors;
  DisarmGitPlaces(tree.root, before, "0123456789abcdef", notices, errors, shallow);
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Contains(tree.root + "/a/b/c/d/e/f lies deeper than 5 levels"));
  CHECK_THAT(fmt::format("{}", fmt::join(notices, "\n")), Contains(tree.root + "/src"));
  CHECK_FALSE(tree.Ran("src", "pwned"));
}

TEST_CASE("git places: a read-only directory renamed away and replaced is walked", "[git]") {
  Tree tree;
  fs::create_directories(tree.root + "/sub/.git/modules/kept");
  auto before = FindGitPlaces(tree.root, {}, {tree.root + "/sub/.git/modules"});
  REQUIRE(before.ok());
  REQUIRE(before->pruned.size() == 1);
  // The session renames the parent of what it saw read-only and builds a
  // repository where the read-only directory was.
  fs::rename(tree.root + "/sub", tree.root + "/old");
  tree.PlantGitDir("sub/.git/modules/evil", "pwned");
  const std::vector<std::string> notices = tree.After(*before);
  CHECK_THAT(fmt::format("{}", fmt::join(notices, "\n")),
             Contains(tree.root + "/sub/.git/modules/evil"));
  CHECK_FALSE(tree.Ran("sub/.git/modules/evil", "pwned"));
}

TEST_CASE("git places: set-ID bits are cleared and hidden directories opened", "[git]") {
  Tree tree;
  const GitPlaces before = tree.Before();
  tree.Write("bin/tool", "#!/bin/sh\n");
  REQUIRE(::chmod((tree.root + "/bin/tool").c_str(), 04755) == 0);
  tree.PlantGitDir("hidden/inner", "pwned");
  REQUIRE(::chmod((tree.root + "/hidden").c_str(), 0) == 0);
  const std::vector<std::string> notices = tree.After(before);
  const std::string all = fmt::format("{}", fmt::join(notices, "\n"));
  INFO(all);
  CHECK_THAT(all, Contains("set-user-ID"));
  CHECK_THAT(all, Contains(tree.root + "/hidden/inner"));
  struct stat info {};
  REQUIRE(::stat((tree.root + "/bin/tool").c_str(), &info) == 0);
  CHECK((info.st_mode & S_ISUID) == 0);
}

TEST_CASE("git places: the state file reads back exactly and refuses anything else", "[git]") {
  GitPlaces places;
  places.pruned = {{.path = ".git/hooks", .dev = 4, .ino = 5}, {.path = "odd \n name"}};
  places.places.push_back({.path = "", .dev = 1, .ino = 2, .dot_git = false, .mark = 3});
  places.places.push_back({.path = "a b/.git",
                           .dev = 9,
                           .ino = 18446744073709551615ull,
                           .dot_git = true,
                           .guarded = true,
                           .mark = 7});
  auto back = GitPlacesFromText(GitPlacesToText(places));
  REQUIRE(back.ok());
  CHECK(back->places == places.places);
  CHECK(back->pruned == places.pruned);
  for (const std::string& bad :
       {std::string("mojoup.git-places/v2\n"), std::string("mojoup.git-places/v1\nP 1 2 3\n"),
        std::string("mojoup.git-places/v1\nP 1 2 1 0 5 zz\n"),
        std::string("mojoup.git-places/v1\nP 1 2 1 0 5 00\n"),
        std::string("mojoup.git-places/v1\nP -1 2 1 0 5 61\n"),
        std::string("mojoup.git-places/v1\nS 61\n"),
        std::string("mojoup.git-places/v1\nS 1 2 61")}) {
    INFO(bad);
    CHECK_FALSE(GitPlacesFromText(bad).ok());
  }
}

}  // namespace

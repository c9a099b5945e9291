// Attacks through the way back from a remote sandbox: a session controls
// every byte of the bundle and patch it sends, so each crafted one here is
// refused with a sentence, and the host repository is as it was: nothing
// applied, no ref written (not even the session's good ones), its config
// and hooks untouched. Patches are written as text, bundles by real git.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "../support/return_repo.h"
#include "fmt/format.h"
#include "mojoup/internal/fd.h"
#include "remote/repo_return.h"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using mojoup::sandbox::ImportReturn;
using mojoup::test::ReturnRepo;

constexpr char kNoObject[] = "0000000000000000000000000000000000000000";
constexpr char kSomeObject[] = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";

// A `git diff` section creating `path` with `mode` holding `content` (one
// line, with no newline at its end when `newline` is false).
std::string NewFile(const std::string& path, const std::string& mode, const std::string& content,
                    bool newline = true) {
  return fmt::format(
      "diff --git a/{0} b/{0}\nnew file mode {1}\nindex {2}..{3}\n--- /dev/null\n+++ b/{0}\n"
      "@@ -0,0 +1 @@\n+{4}\n{5}",
      path, mode, kNoObject, kSomeObject, content, newline ? "" : "\\ No newline at end of file\n");
}

// A host repository and, from a copy of it, a good bundle with a new
// branch: a refusal must not let even that in.
struct Attack {
  ReturnRepo repo;
  std::string baseline;
  std::string bundle;
  std::string refs_before;
  std::string config_before;

  Attack() {
    REQUIRE(::symlink("/tmp", (repo.host + "/hostlink").c_str()) == 0);
    ReturnRepo::Write(repo.host, ".gitignore", "hostlink\n");
    baseline = repo.Baseline();
    const std::string sandbox = repo.Copy("sandbox");
    REQUIRE(repo.Git(sandbox, {"checkout", "-q", "-b", "session-work"}).code == 0);
    REQUIRE(repo.Git(sandbox, {"commit", "-q", "--allow-empty", "-m", "work"}).code == 0);
    const std::string out = repo.base + "/out";
    REQUIRE(repo.Return(sandbox, out) == 0);
    bundle = repo.base + "/good.bundle";
    fs::rename(out + "/mojoup-return.bundle", bundle);
    refs_before = repo.Refs();
    config_before = ReturnRepo::Slurp(repo.host + "/.git/config");
  }

  std::string WritePatch(const std::string& text) const {
    const std::string path = repo.base + "/crafted.patch";
    ReturnRepo::Write(repo.base, "crafted.patch", text);
    return path;
  }

  // ImportReturn must refuse with a sentence holding `expected`, and leave
  // the host as it was.
  void Refused(const std::string& bundle_path, const std::string& patch_path,
               const std::string& expected) const {
    auto outcome = ImportReturn(repo.Request(bundle_path, patch_path, baseline));
    REQUIRE_FALSE(outcome.ok());
    const std::string said(outcome.status().message());
    INFO(said);
    CHECK(outcome.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(said, Contains(expected));
    CHECK_THAT(said, Contains("nothing was applied and no ref was written"));
    CHECK(said.find('\n') == std::string::npos);
    CHECK(repo.Refs() == refs_before);
    CHECK(repo.Baseline() == baseline);
    CHECK(ReturnRepo::Slurp(repo.host + "/.git/config") == config_before);
    CHECK_FALSE(fs::exists(repo.host + "/.git/hooks/post-checkout"));
    CHECK_FALSE(fs::exists(repo.host + "/.git/FETCH_HEAD"));
  }

  // A copy of the good bundle: a refusal moves what it refused away.
  std::string FreshBundle() const {
    const std::string copy = repo.base + "/mojoup-return.bundle";
    fs::copy_file(bundle, copy, fs::copy_options::overwrite_existing);
    return copy;
  }

  void RefusedPatch(const std::string& text, const std::string& expected) const {
    Refused(FreshBundle(), WritePatch(text), expected);
    CHECK(fs::exists(repo.keep + "/mojoup-return.patch"));
  }
};

TEST_CASE("A patch into the git directory is refused, however it spells the path") {
  Attack attack;
  for (const char* path : {".git/config", ".git/hooks/post-checkout", ".GIT/config",
                           "sub/.git/config", ".git./config", "git~1/config"}) {
    SECTION(path) { attack.RefusedPatch(NewFile(path, "100644", "[core]"), "in a git directory"); }
  }
  SECTION("a quoted path with an octal escape") {
    attack.RefusedPatch(
        "diff --git \"a/.gi\\164/config\" \"b/.gi\\164/config\"\nnew file mode 100644\n"
        "--- /dev/null\n+++ \"b/.gi\\164/config\"\n@@ -0,0 +1 @@\n+x\n",
        "in a git directory");
  }
}

TEST_CASE("A patch into the repository's policy is refused") {
  Attack attack;
  attack.RefusedPatch(NewFile(".mojoup/policy.json", "100644", "{}"), "under .mojoup/");
  attack.RefusedPatch(NewFile(".MOJOUP/policy.json", "100644", "{}"), "under .mojoup/");
}

TEST_CASE("A rename onto the git directory is refused by its rename header") {
  Attack attack;
  attack.RefusedPatch(
      "diff --git a/a.txt b/a.txt\nsimilarity index 100%\nrename from a.txt\n"
      "rename to .git/hooks/post-checkout\n",
      "in a git directory");
}

TEST_CASE("A symbolic link out of the tree is refused") {
  Attack attack;
  SECTION("absolute") {
    attack.RefusedPatch(NewFile("evil", "120000", "/etc/passwd", false), "an absolute path");
  }
  SECTION("climbing") {
    attack.RefusedPatch(NewFile("sub/evil", "120000", "../../outside", false), "out of the tree");
  }
  SECTION("into the git directory") {
    attack.RefusedPatch(NewFile("sub/cfg", "120000", "../.git/config", false),
                        "in a git directory");
  }
  SECTION("with a binary target") {
    attack.RefusedPatch(
        fmt::format("diff --git a/evil b/evil\nnew file mode 120000\nindex {}..{}\n"
                    "GIT binary patch\nliteral 3\nKcmZQzWC8#H2LJ>B\n\nliteral 0\nHcmV?d00001\n\n",
                    kNoObject, kSomeObject),
        "binary target");
  }
}

TEST_CASE("A path through a symbolic link is refused") {
  Attack attack;
  SECTION("a link in the host's work tree") {
    attack.RefusedPatch(NewFile("hostlink/pwned", "100644", "x"),
                        "a symbolic link in the work tree");
  }
  SECTION("a link the patch itself makes") {
    attack.RefusedPatch(
        NewFile("inner", "120000", "dir", false) + NewFile("inner/pwned", "100644", "x"),
        "a symbolic link the patch makes");
  }
}

TEST_CASE("A set-user-ID file and a gitlink are refused") {
  Attack attack;
  attack.RefusedPatch(NewFile("tool", "104755", "#!/bin/sh"), "set-user-ID");
  attack.RefusedPatch("diff --git a/script.sh b/script.sh\nold mode 100644\nnew mode 104755\n",
                      "set-user-ID");
  attack.RefusedPatch(NewFile("mod", "160000", std::string("Subproject commit ") + kSomeObject),
                      "gitlink");
}

TEST_CASE("Anything the parser does not know is refused") {
  Attack attack;
  // A traditional patch git apply would take without a `diff --git` line.
  attack.RefusedPatch("--- a/a.txt\n+++ b/.git/config\n@@ -1 +1 @@\n-one\n+x\n",
                      "expected a `diff --git` line");
  attack.RefusedPatch(NewFile("ok.txt", "100644", "x") + "garbage after\n", "expected a hunk");
  attack.RefusedPatch("diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/.git/config\n",
                      "in a git directory");
}

// A bundle made by real git in a copy of the host repository, carrying the
// session's branch and `ref` (set to HEAD).
std::string BundleWith(const Attack& attack, const std::string& ref) {
  const ReturnRepo& repo = attack.repo;
  const std::string sandbox = repo.base + "/crafter";
  if (!fs::exists(sandbox))
    REQUIRE(repo.Git(repo.base, {"clone", "-q", repo.host, sandbox}).code == 0);
  REQUIRE(repo.Git(sandbox, {"update-ref", ref, "HEAD"}).code == 0);
  const std::string bundle = repo.base + "/crafted.bundle";
  fs::remove(bundle);
  REQUIRE(repo.Git(sandbox, {"bundle", "create", "-q", bundle, "main", ref}).code == 0);
  REQUIRE(repo.Git(sandbox, {"update-ref", "-d", ref}).code == 0);
  return bundle;
}

TEST_CASE("A bundle carrying refs outside branches and tags is refused") {
  Attack attack;
  for (const std::string& ref :
       {std::string("refs/remotes/x"), std::string("refs/replace/") + kSomeObject,
        std::string("refs/mojoup/0123456789abcdef/heads/main"),
        std::string("refs/notes/commits")}) {
    SECTION(ref) {
      attack.Refused(BundleWith(attack, ref), "", "a ref outside refs/heads/ and refs/tags/");
      CHECK(fs::exists(attack.repo.keep + "/mojoup-return.bundle"));
    }
  }
}

TEST_CASE("A bundle carrying an object that fails fsck is refused before any ref is written") {
  Attack attack;
  const ReturnRepo& repo = attack.repo;
  const std::string crafter = repo.base + "/crafter";
  REQUIRE(repo.Git(repo.base, {"clone", "-q", repo.host, crafter}).code == 0);
  // A commit whose author has no email, which git's fsck refuses.
  const std::string tree = repo.Out(crafter, {"write-tree"});
  const std::string object = repo.base + "/bad-commit";
  ReturnRepo::Write(
      repo.base, "bad-commit",
      "tree " + tree.substr(0, tree.size() - 1) + "\nauthor nobody\ncommitter nobody\n\nbad\n");
  std::string id = repo.Out(crafter, {"hash-object", "-t", "commit", "-w", "--literally", object});
  id.pop_back();
  REQUIRE(repo.Git(crafter, {"update-ref", "refs/heads/bad", id}).code == 0);
  const std::string bundle = repo.base + "/bad.bundle";
  REQUIRE(repo.Git(crafter, {"bundle", "create", "-q", bundle, "main", "bad"}).code == 0);
  attack.Refused(bundle, "", "fails git's object checks");
  CHECK(repo.Git(repo.host, {"cat-file", "-e", id}).code != 0);
}

TEST_CASE("A file that is no bundle is refused by git bundle verify") {
  Attack attack;
  ReturnRepo::Write(attack.repo.base, "fake.bundle", "# v2 git bundle\nnot really\n");
  attack.Refused(attack.repo.base + "/fake.bundle", "", "fails `git bundle verify`");
}

TEST_CASE("A 1 GiB patch is refused by its size, before it is read") {
  Attack attack;
  const std::string path = attack.repo.base + "/huge.patch";
  mojoup::internal::Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  REQUIRE(fd.ok());
  REQUIRE(::ftruncate(fd.get(), 1ll << 30) == 0);
  fd.Reset();
  const auto started = std::chrono::steady_clock::now();
  attack.Refused(attack.FreshBundle(), path, "1073741824 bytes, over the 268435456");
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(20));
}

TEST_CASE("A patch that is a symbolic link is refused, not followed") {
  Attack attack;
  const std::string real = attack.WritePatch(NewFile("innocent.txt", "100644", "x"));
  const std::string link = attack.repo.base + "/link.patch";
  REQUIRE(::symlink(real.c_str(), link.c_str()) == 0);
  attack.Refused(attack.FreshBundle(), link, "is a symbolic link");
  CHECK_FALSE(fs::exists(attack.repo.host + "/innocent.txt"));
  // The link itself was kept, never what it names.
  CHECK(fs::is_symlink(attack.repo.keep + "/mojoup-return.patch"));
}

}  // namespace

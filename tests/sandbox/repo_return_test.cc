// The way back from a remote sandbox, with real git: what ReturnCommand
// writes in a copy of the repository, and what ImportReturn makes of it in
// the host's: the session's commits under its own namespace, its edits in
// the work tree, and the user's HEAD, index and config as they were.
#include "remote/repo_return.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "../support/return_repo.h"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using mojoup::sandbox::ImportReturn;
using mojoup::sandbox::WorkTreeId;
using mojoup::test::ReturnRepo;

const std::string kBinary(
    "\x7f"
    "ELF\0\0\x01\xff\xfe binary\0tail",
    20);

// In the sandbox's copy: a commit on a branch, then uncommitted work of
// every kind git records.
void SessionWork(const ReturnRepo& repo, const std::string& sandbox) {
  // What a real clone has besides branches and tags stays in the sandbox.
  REQUIRE(repo.Git(sandbox, {"update-ref", "refs/remotes/origin/main", "HEAD"}).code == 0);
  REQUIRE(repo.Git(sandbox, {"checkout", "-q", "-b", "feature"}).code == 0);
  ReturnRepo::Write(sandbox, "feature.txt", "from the session\n");
  REQUIRE(repo.Git(sandbox, {"add", "feature.txt"}).code == 0);
  REQUIRE(repo.Git(sandbox, {"commit", "-qm", "feature"}).code == 0);
  ReturnRepo::Write(sandbox, "a.txt", "one\ntwo\nthree\n");
  ReturnRepo::Write(sandbox, "dir/new file.txt", "untracked\n");
  ReturnRepo::Write(sandbox, "bin.dat", kBinary);
  REQUIRE(::chmod((sandbox + "/script.sh").c_str(), 0755) == 0);
  REQUIRE(::unlink((sandbox + "/gone.txt").c_str()) == 0);
  REQUIRE(::symlink("../a.txt", (sandbox + "/dir/link").c_str()) == 0);
  // Names git quotes, with C escapes, in its diff.
  ReturnRepo::Write(sandbox, "d\xc3\xa9j\xc3\xa0 vu.txt", "quoted\n");
  ReturnRepo::Write(sandbox, "dir/say \"hi\"\tnow.txt", "escaped\n");
  ReturnRepo::Write(sandbox, ".gitignore", "*.log\n");
  ReturnRepo::Write(sandbox, "noise.log", "ignored\n");
}

TEST_CASE(
    "What a session commits and leaves uncommitted comes back whole, the user's HEAD, "
    "index and config untouched") {
  ReturnRepo repo;
  const std::string baseline = repo.Baseline();
  const std::string head = repo.Out(repo.host, {"rev-parse", "HEAD"});
  const std::string index = ReturnRepo::Slurp(repo.host + "/.git/index");
  const std::string config = ReturnRepo::Slurp(repo.host + "/.git/config");
  const std::string sandbox = repo.Copy("sandbox");
  SessionWork(repo, sandbox);
  const std::string sandbox_index = ReturnRepo::Slurp(sandbox + "/.git/index");

  const std::string out = repo.base + "/out";
  std::string err;
  REQUIRE(repo.Return(sandbox, out, &err) == 0);
  INFO(err);
  struct stat info {};
  REQUIRE(::stat(out.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0700);
  // The sandbox's own index is as the session left it.
  CHECK(ReturnRepo::Slurp(sandbox + "/.git/index") == sandbox_index);
  CHECK_FALSE(fs::exists(out + "/mojoup-return.index"));

  auto outcome = ImportReturn(
      repo.Request(out + "/mojoup-return.bundle", out + "/mojoup-return.patch", baseline));
  INFO(outcome.status().message());
  REQUIRE(outcome.ok());
  INFO(outcome->summary);
  const std::string space = "refs/mojoup/" + repo.session + "/heads/";
  CHECK_THAT(fmt::format("{}", fmt::join(outcome->refs, " ")), Contains(space + "feature"));
  CHECK(repo.Out(repo.host, {"rev-parse", space + "feature"}) ==
        repo.Out(sandbox, {"rev-parse", "feature"}));
  CHECK(outcome->refs.size() == 2);
  CHECK(repo.Out(repo.host, {"for-each-ref", "--format=%(refname)", "refs/mojoup/"}) ==
        fmt::format("{0}feature\n{0}main\n", space));
  CHECK(outcome->applied);
  CHECK(outcome->kept.empty());
  CHECK_THAT(outcome->summary, Contains("in the work tree"));

  CHECK(ReturnRepo::Slurp(repo.host + "/a.txt") == "one\ntwo\nthree\n");
  CHECK(ReturnRepo::Slurp(repo.host + "/dir/new file.txt") == "untracked\n");
  CHECK(ReturnRepo::Slurp(repo.host + "/bin.dat") == kBinary);
  REQUIRE(::stat((repo.host + "/script.sh").c_str(), &info) == 0);
  CHECK((info.st_mode & 0100) != 0);
  CHECK_FALSE(fs::exists(repo.host + "/gone.txt"));
  CHECK(fs::is_symlink(repo.host + "/dir/link"));
  CHECK(fs::read_symlink(repo.host + "/dir/link") == "../a.txt");
  CHECK_FALSE(fs::exists(repo.host + "/noise.log"));
  CHECK(ReturnRepo::Slurp(repo.host + "/d\xc3\xa9j\xc3\xa0 vu.txt") == "quoted\n");
  CHECK(ReturnRepo::Slurp(repo.host + "/dir/say \"hi\"\tnow.txt") == "escaped\n");

  CHECK(repo.Out(repo.host, {"rev-parse", "HEAD"}) == head);
  CHECK(repo.Out(repo.host, {"symbolic-ref", "HEAD"}) == "refs/heads/main\n");
  CHECK(ReturnRepo::Slurp(repo.host + "/.git/index") == index);
  CHECK(ReturnRepo::Slurp(repo.host + "/.git/config") == config);
  CHECK_FALSE(fs::exists(repo.host + "/.git/FETCH_HEAD"));
  CHECK_FALSE(fs::exists(repo.keep));
  // The commit is in its ref, not in the work tree: the patch is the work
  // against the session's HEAD.
  CHECK_FALSE(fs::exists(repo.host + "/feature.txt"));
  CHECK(*WorkTreeId(repo.host) != baseline);
}

TEST_CASE(
    "When the host's tree changed while the session ran, its edits are kept and the "
    "summary says where") {
  ReturnRepo repo;
  const std::string baseline = repo.Baseline();
  const std::string sandbox = repo.Copy("sandbox");
  SessionWork(repo, sandbox);
  const std::string out = repo.base + "/out";
  REQUIRE(repo.Return(sandbox, out) == 0);
  ReturnRepo::Write(repo.host, "mine.txt", "the user's own\n");

  auto outcome = ImportReturn(
      repo.Request(out + "/mojoup-return.bundle", out + "/mojoup-return.patch", baseline));
  INFO(outcome.status().message());
  REQUIRE(outcome.ok());
  CHECK_FALSE(outcome->applied);
  CHECK(outcome->kept == repo.keep);
  CHECK_THAT(outcome->summary, Contains("changed while the session ran"));
  CHECK_THAT(outcome->summary, Contains(repo.keep + "/mojoup-return.patch"));
  CHECK(fs::exists(repo.keep + "/mojoup-return.patch"));
  CHECK(fs::exists(repo.keep + "/mojoup-return.bundle"));
  // Nothing forced: the work tree is the user's, with the session's work
  // one `git apply` away.
  CHECK(ReturnRepo::Slurp(repo.host + "/a.txt") == "one\ntwo\n");
  CHECK(fs::exists(repo.host + "/gone.txt"));
  CHECK(repo.Git(repo.host, {"apply", "--check", repo.keep + "/mojoup-return.patch"}).code == 0);
  // The commits are safe in their namespace either way.
  CHECK(repo.Git(repo.host,
                 {"rev-parse", "--verify", "-q", "refs/mojoup/" + repo.session + "/heads/feature"})
            .code == 0);
}

TEST_CASE("A session that changed nothing outside its commits brings back an empty patch") {
  ReturnRepo repo;
  const std::string baseline = repo.Baseline();
  const std::string sandbox = repo.Copy("sandbox");
  ReturnRepo::Write(sandbox, "c.txt", "committed\n");
  REQUIRE(repo.Git(sandbox, {"add", "c.txt"}).code == 0);
  REQUIRE(repo.Git(sandbox, {"commit", "-qm", "c"}).code == 0);
  const std::string out = repo.base + "/out";
  REQUIRE(repo.Return(sandbox, out) == 0);
  CHECK(fs::file_size(out + "/mojoup-return.patch") == 0);

  auto outcome = ImportReturn(
      repo.Request(out + "/mojoup-return.bundle", out + "/mojoup-return.patch", baseline));
  INFO(outcome.status().message());
  REQUIRE(outcome.ok());
  CHECK_FALSE(outcome->applied);
  CHECK(outcome->kept.empty());
  CHECK_THAT(outcome->summary, Contains("no change to the work tree"));
  CHECK(repo.Out(repo.host, {"rev-parse", "refs/mojoup/" + repo.session + "/heads/main"}) ==
        repo.Out(sandbox, {"rev-parse", "main"}));
  CHECK_FALSE(fs::exists(repo.host + "/c.txt"));
}

TEST_CASE("A repository without a commit sends no bundle, and its files still come back") {
  ReturnRepo repo(/*empty=*/true);
  const std::string baseline = repo.Baseline();
  const std::string sandbox = repo.Copy("sandbox");
  ReturnRepo::Write(sandbox, "first.txt", "the first file\n");
  const std::string out = repo.base + "/out";
  std::string err;
  REQUIRE(repo.Return(sandbox, out, &err) == 0);
  INFO(err);
  CHECK_FALSE(fs::exists(out + "/mojoup-return.bundle"));

  auto outcome = ImportReturn(repo.Request("", out + "/mojoup-return.patch", baseline));
  INFO(outcome.status().message());
  REQUIRE(outcome.ok());
  CHECK(outcome->refs.empty());
  CHECK(outcome->applied);
  CHECK_THAT(outcome->summary, Contains("No commit came back"));
  CHECK(ReturnRepo::Slurp(repo.host + "/first.txt") == "the first file\n");
  CHECK(repo.Git(repo.host, {"rev-parse", "--verify", "-q", "HEAD"}).code != 0);
}

TEST_CASE("The return command refuses a directory inside the repository, in one sentence") {
  ReturnRepo repo;
  const std::string sandbox = repo.Copy("sandbox");
  std::string err;
  CHECK(repo.Return(sandbox, sandbox + "/out", &err) != 0);
  CHECK_THAT(err, Contains("is inside the repository"));
  CHECK_FALSE(fs::exists(sandbox + "/out"));
  CHECK(repo.Return(repo.base + "/missing", repo.base + "/out", &err) != 0);
  CHECK_THAT(err, Contains("cannot enter the repository"));
}

TEST_CASE("A session id that is not one is refused before anything is read") {
  ReturnRepo repo;
  auto request = repo.Request("", "", repo.Baseline());
  request.session = "../../heads/main";
  auto outcome = ImportReturn(request);
  REQUIRE_FALSE(outcome.ok());
  CHECK_THAT(std::string(outcome.status().message()), Contains("is not a session id"));
}

TEST_CASE("Links that change, a file that becomes a link and a mode-only change come back") {
  ReturnRepo repo;
  REQUIRE(::mkdir((repo.host + "/d").c_str(), 0755) == 0);
  REQUIRE(::symlink("../a.txt", (repo.host + "/d/to-a").c_str()) == 0);
  REQUIRE(::symlink("a.txt", (repo.host + "/old-link").c_str()) == 0);
  REQUIRE(repo.Git(repo.host, {"add", "-A"}).code == 0);
  REQUIRE(repo.Git(repo.host, {"commit", "-qm", "links"}).code == 0);
  const std::string baseline = repo.Baseline();
  const std::string sandbox = repo.Copy("sandbox");
  REQUIRE(::unlink((sandbox + "/d/to-a").c_str()) == 0);
  REQUIRE(::symlink("../script.sh", (sandbox + "/d/to-a").c_str()) == 0);
  REQUIRE(::unlink((sandbox + "/old-link").c_str()) == 0);
  REQUIRE(::unlink((sandbox + "/gone.txt").c_str()) == 0);
  REQUIRE(::symlink("d", (sandbox + "/gone.txt").c_str()) == 0);
  REQUIRE(::chmod((sandbox + "/script.sh").c_str(), 0755) == 0);
  const std::string out = repo.base + "/out";
  REQUIRE(repo.Return(sandbox, out) == 0);

  auto outcome = ImportReturn(
      repo.Request(out + "/mojoup-return.bundle", out + "/mojoup-return.patch", baseline));
  INFO(outcome.status().message());
  REQUIRE(outcome.ok());
  CHECK(outcome->applied);
  CHECK(fs::read_symlink(repo.host + "/d/to-a") == "../script.sh");
  CHECK_FALSE(fs::is_symlink(repo.host + "/old-link"));
  CHECK(fs::read_symlink(repo.host + "/gone.txt") == "d");
  struct stat info {};
  REQUIRE(::stat((repo.host + "/script.sh").c_str(), &info) == 0);
  CHECK((info.st_mode & 0100) != 0);
  CHECK(*WorkTreeId(repo.host) == *WorkTreeId(sandbox));
}

// The sandbox's tree id as WorkTreeIdCommand prints it there, as the
// copy's check does.
std::string SandboxTreeId(const ReturnRepo& repo, const std::string& sandbox) {
  mojoup::test::Run run = mojoup::test::RunWithEnv(
      repo.Environment(), mojoup::sandbox::WorkTreeIdCommand(sandbox), std::chrono::seconds(60));
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  std::string id = run.result.out;
  while (!id.empty() && id.back() == '\n') id.pop_back();
  return id;
}

TEST_CASE(
    "Against the tree it was sent as, the patch holds what the session changed and not what "
    "the host already had, and applies to the host by construction") {
  ReturnRepo repo;
  // The user's own work, uncommitted and untracked, goes with the copy.
  ReturnRepo::Write(repo.host, "a.txt", "one\ntwo\nmine\n");
  ReturnRepo::Write(repo.host, "notes.txt", "the user's, untracked\n");
  const std::string baseline = repo.Baseline();
  const std::string sandbox = repo.Copy("sandbox");
  CHECK(SandboxTreeId(repo, sandbox) == baseline);
  REQUIRE(repo.Git(sandbox, {"checkout", "-q", "-b", "agent"}).code == 0);
  ReturnRepo::Write(sandbox, "feature.txt", "committed\n");
  REQUIRE(repo.Git(sandbox, {"add", "feature.txt"}).code == 0);
  REQUIRE(repo.Git(sandbox, {"commit", "-qm", "agent"}).code == 0);
  ReturnRepo::Write(sandbox, "a.txt", "one\ntwo\nmine\nagent's\n");

  const std::string out = repo.base + "/out";
  std::string err;
  REQUIRE(repo.Return(sandbox, out, &err, baseline) == 0);
  INFO(err);
  const std::string patch = ReturnRepo::Slurp(out + "/mojoup-return.patch");
  CHECK_THAT(patch, Contains("b/feature.txt"));
  CHECK_THAT(patch, !Contains("notes.txt"));
  auto outcome = ImportReturn(
      repo.Request(out + "/mojoup-return.bundle", out + "/mojoup-return.patch", baseline));
  INFO(outcome.status().message());
  REQUIRE(outcome.ok());
  CHECK(outcome->applied);
  CHECK(ReturnRepo::Slurp(repo.host + "/a.txt") == "one\ntwo\nmine\nagent's\n");
  CHECK(ReturnRepo::Slurp(repo.host + "/feature.txt") == "committed\n");
  CHECK(ReturnRepo::Slurp(repo.host + "/notes.txt") == "the user's, untracked\n");
  CHECK(repo.Out(repo.host, {"symbolic-ref", "HEAD"}) == "refs/heads/main\n");
  CHECK_THAT(repo.Refs(), Contains("refs/mojoup/" + repo.session + "/heads/agent"));

  // A tree the sandbox never had is refused there, in one sentence.
  REQUIRE(repo.Return(sandbox, repo.base + "/out2", &err, std::string(40, 'a')) != 0);
  CHECK_THAT(err, Contains("is not in"));
}

}  // namespace

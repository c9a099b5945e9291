// A host repository and what a remote sandbox sends back for it, with real
// git: the tests of the way back (repo_return_test.cc) and its attacks
// (return_escape_test.cc).
#pragma once

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mojoup/internal/session_id.h"
#include "remote/repo_return.h"
#include "test_support.h"

namespace mojoup::test {

struct GitRun {
  int code = -1;
  std::string out;
  std::string err;
};

struct ReturnRepo {
  TempDir dir;
  std::string base = std::filesystem::canonical(dir.path()).string();
  std::string host = base + "/host";
  std::string home = base + "/home";
  std::string keep = base + "/keep";
  std::string session = internal::RandomHex();

  // An empty repository on branch main, with a commit unless `empty`.
  explicit ReturnRepo(bool empty = false) {
    std::filesystem::create_directories(home);
    REQUIRE(Git(base, {"init", "-q", "-b", "main", host}).code == 0);
    if (empty) return;
    Write(host, "a.txt", "one\ntwo\n");
    Write(host, "gone.txt", "soon gone\n");
    Write(host, "script.sh", "echo hi\n");
    Write(host, "bin.dat", std::string("\0\1\2\3binary", 10));
    REQUIRE(Git(host, {"add", "."}).code == 0);
    REQUIRE(Git(host, {"commit", "-qm", "first"}).code == 0);
  }

  // git as the user runs it: an empty global config of their own.
  GitRun Git(const std::string& where, const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"git", "-C", where};
    argv.insert(argv.end(), args.begin(), args.end());
    Run run = RunWithEnv(Environment(), argv, std::chrono::seconds(60));
    return {run.result.exit_code, run.result.out, run.result.err};
  }

  std::vector<std::string> Environment() const {
    return {"HOME=" + home,         "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=a",
            "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a",  "GIT_COMMITTER_EMAIL=a@b"};
  }

  std::string Out(const std::string& where, const std::vector<std::string>& args) const {
    GitRun run = Git(where, args);
    INFO(run.err);
    REQUIRE(run.code == 0);
    return run.out;
  }

  static void Write(const std::string& root, const std::string& relative,
                    const std::string& bytes) {
    const std::filesystem::path path = std::filesystem::path(root) / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }

  // A copy of the host repository, git directory and all, as the upload
  // leaves it in the sandbox.
  std::string Copy(const std::string& name) const {
    const std::string copy = base + "/" + name;
    REQUIRE(RunWithEnv({}, {"cp", "-a", host, copy}).result.exit_code == 0);
    return copy;
  }

  // ReturnCommand run as the sandbox runs it; its exit code, stderr in `err`.
  // With `sent`, the patch is against the tree the repository was sent as.
  int Return(const std::string& repo, const std::string& out, std::string* err = nullptr,
             const std::string& sent = "") const {
    Run run = RunWithEnv(Environment(), sandbox::ReturnCommand(repo, out, sent),
                         std::chrono::seconds(60));
    if (err != nullptr) *err = run.result.err;
    return run.result.exit_code;
  }

  std::string Baseline() const {
    auto id = sandbox::WorkTreeId(host);
    REQUIRE(id.ok());
    return *id;
  }

  sandbox::ReturnRequest Request(const std::string& bundle, const std::string& patch,
                                 const std::string& baseline) const {
    sandbox::ReturnRequest request;
    request.repo = host;
    request.session = session;
    request.bundle = bundle;
    request.patch = patch;
    request.baseline = baseline;
    request.keep_dir = keep;
    return request;
  }

  // Every ref of the host, with its object.
  std::string Refs() const {
    return Out(host, {"for-each-ref", "--format=%(objectname) %(refname)"});
  }

  static std::string Slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

}  // namespace mojoup::test

// Helpers shared by the tests: temporary directories, skipping with a reason,
// and running the built programs.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "mojoup/probe/command_runner.h"

namespace mojoup::test {

// A test that lacks a real component says SKIP and why. CI (CI set in the
// environment) has every component, so there it fails instead.
#define MOJOUP_SKIP(reason)                                                 \
  do {                                                                      \
    if (std::getenv("CI") != nullptr) FAIL("CI must not skip: " << reason); \
    std::cout << "SKIP: " << reason << std::endl;                           \
    return;                                                                 \
  } while (false)

// A fresh directory under /tmp, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "mojoup-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
    chmod(path_.c_str(), 0755);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

  std::string Write(const std::string& name, const std::string& text) const {
    std::string file = *this / name;
    std::filesystem::create_directories(std::filesystem::path(file).parent_path());
    std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
    return file;
  }

 private:
  std::string path_;
};

// A git directory as `git init` leaves it, as far as sessions look: HEAD,
// config, objects/ and refs/ (no git needed to make it).
inline void MakeGitDir(const std::string& git_dir) {
  std::filesystem::create_directories(git_dir + "/objects");
  std::filesystem::create_directories(git_dir + "/refs/heads");
  std::ofstream(git_dir + "/HEAD") << "ref: refs/heads/main\n";
  std::ofstream(git_dir + "/config") << "[core]\n\trepositoryformatversion = 0\n";
}

// Polls `done` every 50 ms until it is true or `limit` has passed; its last
// answer.
inline bool WaitFor(const std::function<bool()>& done, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

// The whole of a file ("" when it cannot be read).
inline std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Writes `text` at `path` (making directories) with exactly `mode`; returns
// the path.
inline std::string WriteFile(const std::string& path, const std::string& text,
                             unsigned mode = 0600) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  REQUIRE(::chmod(path.c_str(), mode) == 0);
  return path;
}

// A status's message, for the matchers.
inline std::string Message(const absl::Status& status) { return std::string(status.message()); }

// The script's output cut at its "=== name" lines.
inline std::map<std::string, std::string> Sections(const std::string& out) {
  std::map<std::string, std::string> sections;
  std::string name;
  std::size_t at = 0;
  while (at < out.size()) {
    std::size_t end = out.find('\n', at);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(at, end - at);
    if (line.rfind("=== ", 0) == 0) {
      name = line.substr(4);
    } else if (!name.empty()) {
      sections[name] += line + "\n";
    }
    at = end + 1;
  }
  return sections;
}

// Where CMake put the built programs (set by the test's compile definitions).
inline std::string BinDir() { return MOJOUP_TEST_BIN_DIR; }

struct Run {
  probe::CommandResult result;
  double seconds = 0;
};

// Runs argv with `env` (NAME=VALUE entries) added to this process's
// environment, through the real CommandRunner, with a deadline.
inline Run RunWithEnv(const std::vector<std::string>& env, const std::vector<std::string>& argv,
                      std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  std::vector<std::string> full{"env"};
  full.insert(full.end(), env.begin(), env.end());
  full.insert(full.end(), argv.begin(), argv.end());
  auto runner = probe::MakeSystemCommandRunner();
  auto start = std::chrono::steady_clock::now();
  Run run;
  run.result = runner->Run(full, timeout);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace mojoup::test

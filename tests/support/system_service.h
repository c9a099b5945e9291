// The system service as an operator runs it: `mojoup-node serve` as root,
// from a directory of root's (readable by all, writable by none), with a
// node config that allows `allowed` and adds `extra` ("\"key\": value, "
// entries), on its own socket.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "background_process.h"
#include "real_user.h"
#include "sandbox_image.h"

// Declares `first`, `second` and `outsider` (real users: two in the docker
// group, one outside it) for a test of the system service, which runs as
// root; SKIPs, saying why, when any is missing.
#define MOJOUP_REQUIRE_SYSTEM_SERVICE_USERS(first, second, outsider)                       \
  MOJOUP_REQUIRE_REAL_USER(first);                                                         \
  if (::geteuid() != 0) MOJOUP_SKIP("the system service runs as root");                    \
  std::string why_##second;                                                                \
  const mojoup::test::RealUser* second = mojoup::test::RealUser::Second(why_##second);     \
  if (second == nullptr) MOJOUP_SKIP(why_##second);                                        \
  const mojoup::test::RealUser* outsider = mojoup::test::RealUser::Outsider(why_##second); \
  if (outsider == nullptr) MOJOUP_SKIP(why_##second)

namespace mojoup::test {

class SystemService {
 public:
  SystemService(const RealUser& from, const std::string& allowed, const std::string& extra = "") {
    char pattern[] = "/run/mojoup-test-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir = pattern;
    ::chmod(dir.c_str(), 0755);
    std::filesystem::create_directories(dir + "/bin");
    for (const char* program : {"mojoup-node", "mojoup-sandbox-init"}) {
      std::filesystem::copy_file(from.bin + "/" + program, dir + "/bin/" + program);
      ::chmod((dir + "/bin/" + program).c_str(), 0755);
    }
    const std::string config = dir + "/node.json";
    std::ofstream(config) << "{" << extra
                          << "\"node.sandbox.engine\": \"docker\", \"node.sandbox.role\": true, "
                             "\"node.sandbox.runtime\": \"native\", \"node.sandbox.image\": \""
                          << kSandboxImage << "\", \"node.sandbox.allowed_users\": \"" << allowed
                          << "\"}\n";
    ::chmod(config.c_str(), 0644);
    socket = dir + "/node.sock";
    process = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{"MOJOUP_NODE_CONFIG=" + config, "MOJOUP_SERVICE_SOCKET=" + socket},
        std::vector<std::string>{dir + "/bin/mojoup-node", "serve"});
    for (int i = 0; i < 100 && !std::filesystem::exists(socket); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    env = {"MOJOUP_SERVICE_SOCKET=" + socket};
  }
  ~SystemService() {
    process.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

  std::string dir;
  std::string socket;
  std::vector<std::string> env;  // what a client needs to find it
  std::unique_ptr<BackgroundProcess> process;
};

}  // namespace mojoup::test

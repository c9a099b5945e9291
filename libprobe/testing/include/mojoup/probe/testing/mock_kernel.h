// MockKernel: a Kernel with scripted answers, for testing the checks without
// the real kernel. Set the public fields, then hand it to the probe.
//
//   mojoup::probe::testing::MockKernel kernel;   // a healthy Linux 6.18 host
//   kernel.landlock_abi = SyscallResult::Err(EOPNOTSUPP);  // disabled at boot
//   Check check = CheckLandlock(kernel);
//
// Safe to use from the probe's concurrent checks.
#pragma once

#include <map>
#include <mutex>

#include "mojoup/probe/kernel.h"

namespace mojoup::probe::testing {

class MockKernel : public Kernel {
 public:
  // Defaults describe a healthy host: Linux 6.18, Landlock ABI 7, seccomp with
  // user notification, a free listener slot, not WSL.
  UnameInfo uname{"Linux", "6.18.0", "#1 SMP", "x86_64"};
  SyscallResult landlock_abi = SyscallResult::Ok(7);
  SyscallResult landlock_errata = SyscallResult::Ok(0);
  SyscallResult seccomp_exists = SyscallResult::Err(22);       // EINVAL: present
  SyscallResult seccomp_filter_mode = SyscallResult::Err(14);  // EFAULT: present
  SyscallResult seccomp_user_notif = SyscallResult::Ok(0);
  SyscallResult seccomp_notif_sizes = SyscallResult::Ok(0);
  SyscallResult listener_slot = SyscallResult::Ok(0);  // the child's errno
  std::map<std::string, std::string> files;            // path -> contents
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> file_groups;  // path -> group name
  std::string user_name = "alice";

  UnameInfo Uname() override { return Locked(uname); }
  SyscallResult LandlockAbiVersion() override { return Locked(landlock_abi); }
  SyscallResult LandlockErrata() override { return Locked(landlock_errata); }
  SyscallResult SeccompExists() override { return Locked(seccomp_exists); }
  SyscallResult SeccompFilterMode() override { return Locked(seccomp_filter_mode); }
  SyscallResult SeccompActionAvailable(std::uint32_t) override {
    return Locked(seccomp_user_notif);
  }
  SyscallResult SeccompNotifSizes() override { return Locked(seccomp_notif_sizes); }
  SyscallResult ListenerSlotTest(std::chrono::milliseconds) override {
    std::lock_guard lock(mu_);
    ++listener_tests_;
    return listener_slot;
  }
  std::optional<std::string> ReadFile(const std::string& path) override {
    return Lookup(files, path);
  }
  bool FileExists(const std::string& path) override { return Lookup(files, path).has_value(); }
  std::optional<std::string> GetEnv(const std::string& name) override { return Lookup(env, name); }
  std::optional<std::string> FileGroupName(const std::string& path) override {
    return Lookup(file_groups, path);
  }
  std::string UserName() override { return Locked(user_name); }

  // How many times the listener test ran.
  int listener_tests() {
    std::lock_guard lock(mu_);
    return listener_tests_;
  }

 private:
  template <class T>
  T Locked(const T& value) {
    std::lock_guard lock(mu_);
    return value;
  }
  std::optional<std::string> Lookup(const std::map<std::string, std::string>& map,
                                    const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = map.find(key);
    if (it == map.end()) return std::nullopt;
    return it->second;
  }

  std::mutex mu_;
  int listener_tests_ = 0;
};

}  // namespace mojoup::probe::testing

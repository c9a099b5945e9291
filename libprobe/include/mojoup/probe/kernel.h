// Kernel: the probe's seam to the running kernel and the process's host facts.
//
// Every question the probe asks the kernel goes through this interface, so the
// checks can be tested with scripted answers (mojoup/probe/testing/mock_kernel.h)
// and run for real with MakeSystemKernel(). Each query mirrors one syscall
// recipe from the design's FACTS.md and returns the raw result and errno: the
// checks, not the seam, decide what an errno means.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace mojoup::probe {

// A syscall's return value, and errno when it failed (error != 0).
struct SyscallResult {
  long value = 0;
  int error = 0;

  static SyscallResult Ok(long value) { return {value, 0}; }
  static SyscallResult Err(int error) { return {-1, error}; }
  bool ok() const { return error == 0; }
};

struct UnameInfo {
  std::string sysname;
  std::string release;
  std::string version;
  std::string machine;
};

// SECCOMP_RET_USER_NOTIF, which Debian 12's headers have but older ones lack.
inline constexpr std::uint32_t kSeccompRetUserNotif = 0x7fc00000U;

class Kernel {
 public:
  virtual ~Kernel() = default;

  virtual UnameInfo Uname() = 0;

  // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION): the ABI.
  virtual SyscallResult LandlockAbiVersion() = 0;
  // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_ERRATA): a bitmask.
  virtual SyscallResult LandlockErrata() = 0;

  // seccomp(SECCOMP_SET_MODE_STRICT, 1, NULL): EINVAL means seccomp() exists.
  virtual SyscallResult SeccompExists() = 0;
  // prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, NULL): EFAULT means filter mode exists.
  virtual SyscallResult SeccompFilterMode() = 0;
  // seccomp(SECCOMP_GET_ACTION_AVAIL, 0, &action): 0 means the action is known.
  virtual SyscallResult SeccompActionAvailable(std::uint32_t action) = 0;
  // seccomp(SECCOMP_GET_NOTIF_SIZES, 0, &sizes): 0 means user notification works.
  virtual SyscallResult SeccompNotifSizes() = 0;

  // The forked-child listener test: the child sets no_new_privs, installs an
  // allow-all filter with SECCOMP_FILTER_FLAG_NEW_LISTENER, and exits with the
  // errno it got. `value` is that errno (0: the slot is free). `error` is set
  // when the test itself could not run (fork failed; ETIMEDOUT when the child
  // did not finish in time).
  virtual SyscallResult ListenerSlotTest(std::chrono::milliseconds timeout) = 0;

  // Whole contents of a small file such as /proc/sys/kernel/osrelease.
  virtual std::optional<std::string> ReadFile(const std::string& path) = 0;
  virtual bool FileExists(const std::string& path) = 0;
  virtual std::optional<std::string> GetEnv(const std::string& name) = 0;

  // The name of the group that owns `path` (a socket, say), if it can be read.
  virtual std::optional<std::string> FileGroupName(const std::string& path) = 0;
  // The name of the effective user, or "uid N" when it has none.
  virtual std::string UserName() = 0;
};

// The running kernel and this process's environment.
std::unique_ptr<Kernel> MakeSystemKernel();

}  // namespace mojoup::probe

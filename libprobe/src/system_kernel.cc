#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "mojoup/internal/missing_defs.h"
#include "mojoup/probe/kernel.h"

#ifdef __linux__
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

namespace mojoup::probe {
namespace {

namespace uapi = mojoup::internal::uapi;

SyscallResult FromSyscall(long rc) {
  if (rc < 0) return SyscallResult::Err(errno);
  return SyscallResult::Ok(rc);
}

#ifdef __linux__
long RawSeccomp(unsigned op, unsigned flags, void* args) {
  return syscall(SYS_seccomp, op, flags, args);
}

// Runs in the forked child: async-signal-safe calls only.
[[noreturn]] void ListenerChild() {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(errno);
  sock_filter allow = BPF_STMT(BPF_RET | BPF_K, uapi::kSeccompRetAllow);
  sock_fprog prog{1, &allow};
  long fd = RawSeccomp(uapi::kSeccompSetModeFilter, uapi::kSeccompFilterFlagNewListener, &prog);
  if (fd < 0) _exit(errno);
  close(static_cast<int>(fd));
  _exit(0);
}
#endif

class SystemKernel final : public Kernel {
 public:
  UnameInfo Uname() override {
    utsname u{};
    if (uname(&u) != 0) return {};
    return {u.sysname, u.release, u.version, u.machine};
  }

#ifdef __linux__
  SyscallResult LandlockAbiVersion() override {
    return FromSyscall(
        syscall(uapi::kSysLandlockCreateRuleset, nullptr, 0, uapi::kLandlockCreateRulesetVersion));
  }
  SyscallResult LandlockErrata() override {
    return FromSyscall(
        syscall(uapi::kSysLandlockCreateRuleset, nullptr, 0, uapi::kLandlockCreateRulesetErrata));
  }
  SyscallResult SeccompExists() override {
    return FromSyscall(RawSeccomp(uapi::kSeccompSetModeStrict, 1, nullptr));
  }
  SyscallResult SeccompFilterMode() override {
    return FromSyscall(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, nullptr, 0, 0));
  }
  SyscallResult SeccompActionAvailable(std::uint32_t action) override {
    return FromSyscall(RawSeccomp(uapi::kSeccompGetActionAvail, 0, &action));
  }
  SyscallResult SeccompNotifSizes() override {
    struct {
      std::uint16_t notif, resp, data;
    } sizes{};
    return FromSyscall(RawSeccomp(uapi::kSeccompGetNotifSizes, 0, &sizes));
  }
  SyscallResult ListenerSlotTest(std::chrono::milliseconds timeout) override {
    pid_t pid = fork();
    if (pid < 0) return SyscallResult::Err(errno);
    if (pid == 0) ListenerChild();
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      int status = 0;
      pid_t got = waitpid(pid, &status, WNOHANG);
      if (got == pid) {
        if (WIFEXITED(status)) return SyscallResult::Ok(WEXITSTATUS(status));
        return SyscallResult::Err(ECHILD);
      }
      if (got < 0 && errno != EINTR) return SyscallResult::Err(errno);
      if (std::chrono::steady_clock::now() >= deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return SyscallResult::Err(ETIMEDOUT);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
#else
  SyscallResult LandlockAbiVersion() override { return SyscallResult::Err(ENOSYS); }
  SyscallResult LandlockErrata() override { return SyscallResult::Err(ENOSYS); }
  SyscallResult SeccompExists() override { return SyscallResult::Err(ENOSYS); }
  SyscallResult SeccompFilterMode() override { return SyscallResult::Err(ENOSYS); }
  SyscallResult SeccompActionAvailable(std::uint32_t) override {
    return SyscallResult::Err(ENOSYS);
  }
  SyscallResult SeccompNotifSizes() override { return SyscallResult::Err(ENOSYS); }
  SyscallResult ListenerSlotTest(std::chrono::milliseconds) override {
    return SyscallResult::Ok(ENOSYS);
  }
#endif

  std::optional<std::string> ReadFile(const std::string& path) override {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  bool FileExists(const std::string& path) override { return access(path.c_str(), F_OK) == 0; }
  std::optional<std::string> GetEnv(const std::string& name) override {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  }
  std::optional<std::string> FileGroupName(const std::string& path) override {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return std::nullopt;
    group grp{};
    group* found = nullptr;
    char buf[4096];
    if (getgrgid_r(st.st_gid, &grp, buf, sizeof buf, &found) != 0 || found == nullptr) {
      return "gid " + std::to_string(st.st_gid);
    }
    return std::string(found->gr_name);
  }
  std::string UserName() override {
    passwd pw{};
    passwd* found = nullptr;
    char buf[4096];
    uid_t uid = geteuid();
    if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) != 0 || found == nullptr) {
      return "uid " + std::to_string(uid);
    }
    return std::string(found->pw_name);
  }
};

}  // namespace

std::unique_ptr<Kernel> MakeSystemKernel() { return std::make_unique<SystemKernel>(); }

}  // namespace mojoup::probe

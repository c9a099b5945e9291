#include "landlock.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "mojoup/internal/fd.h"
#include "mojoup/internal/missing_defs.h"
#include "mojoup/internal/sandbox_devices.h"
#include "mojoup/probe/minimums.h"

namespace mojoup::supervisor {
namespace {

namespace uapi = mojoup::internal::uapi;
using mojoup::internal::Fd;

// The only rights Landlock accepts on a rule for a non-directory.
constexpr std::uint64_t kFileRights = uapi::kLandlockAccessFsWriteFile |
                                      uapi::kLandlockAccessFsTruncate |
                                      uapi::kLandlockAccessFsIoctlDev;

std::string Errno(int error) { return std::strerror(error); }

std::string AbiError(int abi) {
  if (abi == -ENOSYS) {
    return "Landlock is unavailable (the kernel lacks it, or a seccomp profile blocks it), so "
           "writes cannot be confined; refusing to run the command";
  }
  if (abi == -EOPNOTSUPP) {
    return "Landlock is built into the kernel but disabled at boot (lsm= lacks landlock), so "
           "writes cannot be confined; refusing to run the command";
  }
  if (abi < 0) {
    return "cannot query the Landlock ABI (" + Errno(-abi) + "); refusing to run the command";
  }
  return "the kernel offers Landlock ABI " + std::to_string(abi) + " but ABI " +
         std::to_string(probe::kMinLandlockAbi) +
         " (Linux 6.2) or later is needed to confine truncation too; refusing to run the command";
}

// Adds a rule for `path`; an empty string when done (or skipped). `optional`
// paths that do not exist are skipped.
std::string AddRule(int ruleset, const std::string& path, bool directory, std::uint64_t access,
                    bool optional) {
  int flags = O_PATH | O_CLOEXEC | (directory ? O_DIRECTORY : 0);
  Fd fd(open(path.c_str(), flags));
  if (fd.get() < 0) {
    int error = errno;
    if (optional && (error == ENOENT || error == ENOTDIR)) return {};
    return "cannot allow writes " + std::string(directory ? "under " : "to ") + path + ": " +
           Errno(error);
  }
  uapi::LandlockPathBeneathAttr rule{};
  rule.allowed_access = access;
  rule.parent_fd = fd.get();
  if (syscall(uapi::kSysLandlockAddRule, ruleset, uapi::kLandlockRulePathBeneath, &rule, 0U) != 0) {
    return "cannot add the Landlock rule for " + path + ": " + Errno(errno);
  }
  return {};
}

}  // namespace

int LandlockAbi() {
  const auto abi =
      syscall(uapi::kSysLandlockCreateRuleset, nullptr, 0UL, uapi::kLandlockCreateRulesetVersion);
  if (abi < 0) return -errno;
  return static_cast<int>(abi);
}

std::uint64_t LandlockWriteAccess(int abi) {
  std::uint64_t access = uapi::kLandlockAccessFsWriteFile | uapi::kLandlockAccessFsRemoveDir |
                         uapi::kLandlockAccessFsRemoveFile | uapi::kLandlockAccessFsMakeChar |
                         uapi::kLandlockAccessFsMakeDir | uapi::kLandlockAccessFsMakeReg |
                         uapi::kLandlockAccessFsMakeSock | uapi::kLandlockAccessFsMakeFifo |
                         uapi::kLandlockAccessFsMakeBlock | uapi::kLandlockAccessFsMakeSym;
  if (abi >= 2) access |= uapi::kLandlockAccessFsRefer;
  if (abi >= 3) access |= uapi::kLandlockAccessFsTruncate;
  if (abi >= 5) access |= uapi::kLandlockAccessFsIoctlDev;
  return access;
}

std::string ApplyLandlock(const std::vector<std::string>& write_dirs,
                          const std::vector<std::string>& write_files) {
  int abi = LandlockAbi();
  if (abi < probe::kMinLandlockAbi) return AbiError(abi);

  std::uint64_t handled = LandlockWriteAccess(abi);
  std::uint64_t file_access = handled & kFileRights;
  // Reads and execution stay unhandled, hence allowed everywhere.
  uapi::LandlockRulesetAttr attr{};
  attr.handled_access_fs = handled;
  Fd ruleset(static_cast<int>(
      syscall(uapi::kSysLandlockCreateRuleset, &attr, uapi::kLandlockRulesetAttrFsSize, 0U)));
  if (ruleset.get() < 0) return "cannot create a Landlock ruleset: " + Errno(errno);

  for (const std::string& dir : write_dirs) {
    if (std::string error = AddRule(ruleset.get(), dir, true, handled, false); !error.empty()) {
      return error;
    }
  }
  for (const std::string& file : write_files) {
    if (std::string error = AddRule(ruleset.get(), file, false, file_access, false);
        !error.empty()) {
      return error;
    }
  }
  // A missing device is skipped: images vary.
  for (const char* device : internal::kSandboxDeviceFiles) {
    if (std::string error = AddRule(ruleset.get(), device, false, file_access, true);
        !error.empty()) {
      return error;
    }
  }
  for (const char* dir : internal::kSandboxDeviceDirs) {
    if (std::string error = AddRule(ruleset.get(), dir, true, handled, true); !error.empty()) {
      return error;
    }
  }

  if (syscall(uapi::kSysLandlockRestrictSelf, ruleset.get(), 0U) != 0) {
    int error = errno;
    if (error == EPERM) {
      return "cannot enforce the Landlock ruleset: no_new_privs is not set and the process lacks "
             "CAP_SYS_ADMIN";
    }
    return "cannot enforce the Landlock ruleset: " + Errno(error);
  }
  return {};
}

}  // namespace mojoup::supervisor

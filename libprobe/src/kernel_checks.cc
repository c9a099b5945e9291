// The kernel checks: os, Landlock, seccomp, the listener slot, WSL.
// Recipes and errno meanings: the design's FACTS.md, "Landlock", "seccomp", "WSL 2".
#include <cerrno>

#include "check_util.h"
#include "fmt/format.h"
#include "mojoup/probe/probe.h"

namespace mojoup::probe {
namespace {

using internal::ErrnoName;
using internal::FailedCheck;
using internal::Pass;
using internal::Seconds;
using internal::Skip;
using internal::Warn;

// The kernel release that brought each Landlock ABI, index = ABI.
constexpr std::string_view kLandlockAbiKernel[] = {"",     "5.13", "5.19", "6.2", "6.7",
                                                   "6.10", "6.12", "6.15", "7.0", "7.1"};

std::string AbiKernel(long abi) {
  if (abi > 0 && abi < static_cast<long>(std::size(kLandlockAbiKernel))) {
    return fmt::format("Linux {}", kLandlockAbiKernel[abi]);
  }
  return "a kernel newer than this list";
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\0')) {
    text.pop_back();
  }
  return text;
}

bool UnderSeccompFilter(Kernel& kernel) {
  auto status = kernel.ReadFile("/proc/self/status");
  return status && status->find("\nSeccomp:\t2") != std::string::npos;
}

constexpr std::string_view kWslFix =
    "set networkingMode=nat under [wsl2] in %UserProfile%\\.wslconfig and run `wsl --shutdown`";

}  // namespace

Check CheckOsLinux(Kernel& kernel) {
  UnameInfo info = kernel.Uname();
#ifdef __linux__
  constexpr bool kBuiltForLinux = true;
#else
  constexpr bool kBuiltForLinux = false;
#endif
  if (!kBuiltForLinux || info.sysname != "Linux") {
    std::string name = info.sysname.empty() ? "this system" : info.sysname;
    return FailedCheck(
        check_id::kOsLinux,
        fmt::format("This is {}, not Linux, and agent sandboxes need the Linux kernel "
                    "(Landlock, seccomp)",
                    name),
        "run the node on Linux 6.2 or later");
  }
  return Pass(check_id::kOsLinux, fmt::format("Linux {} on {}", info.release, info.machine));
}

Check CheckLandlock(Kernel& kernel) {
  const std::string release = kernel.Uname().release;
  SyscallResult abi = kernel.LandlockAbiVersion();
  if (abi.ok()) {
    std::string detail =
        fmt::format("ABI {} ({}); kernel {}", abi.value, AbiKernel(abi.value), release);
    if (SyscallResult errata = kernel.LandlockErrata(); errata.ok()) {
      detail += fmt::format("; errata 0x{:x}", errata.value);
    }
    if (abi.value >= kMinLandlockAbi) {
      return Pass(check_id::kLandlock,
                  fmt::format("Landlock ABI {} is available (ABI {} or later is needed)", abi.value,
                              kMinLandlockAbi),
                  detail);
    }
    return FailedCheck(
        check_id::kLandlock,
        fmt::format("Landlock ABI {} is too old: the sandbox needs ABI {}, which Linux {} "
                    "brings, and this kernel is {}",
                    abi.value, kMinLandlockAbi, kLandlockAbiKernel[kMinLandlockAbi], release),
        fmt::format("upgrade the kernel to Linux {} or later", kLandlockAbiKernel[kMinLandlockAbi]),
        detail);
  }
  auto lsm = kernel.ReadFile("/sys/kernel/security/lsm");
  const std::string active = lsm ? Trimmed(*lsm) : std::string();
  switch (abi.error) {
    case EOPNOTSUPP: {
      std::string param = active.empty() ? "lsm=landlock,..." : "lsm=landlock," + active;
      return FailedCheck(
          check_id::kLandlock, "Landlock is built into this kernel but disabled at boot",
          fmt::format("add landlock to the kernel's boot parameters ({}) and reboot", param),
          fmt::format("landlock_create_ruleset: {}; active LSMs: {}", ErrnoName(abi.error),
                      active.empty() ? "unknown" : active));
    }
    case ENOSYS:
      if (active.find("landlock") != std::string::npos || UnderSeccompFilter(kernel)) {
        return FailedCheck(
            check_id::kLandlock,
            "Landlock's syscalls are blocked by a seccomp filter around this process "
            "(a container's profile or gVisor)",
            "run the node on the host, or allow syscalls 444 to 446 in that profile",
            fmt::format("landlock_create_ruleset: {}; active LSMs: {}", ErrnoName(abi.error),
                        active.empty() ? "unknown" : active));
      }
      return FailedCheck(check_id::kLandlock,
                         fmt::format("Landlock is not built into this kernel ({})", release),
                         "use a kernel built with CONFIG_SECURITY_LANDLOCK=y, Linux 6.2 or later",
                         fmt::format("landlock_create_ruleset: {}", ErrnoName(abi.error)));
    default:
      return FailedCheck(
          check_id::kLandlock,
          fmt::format("The Landlock ABI query failed with {}, which points to an unusual "
                      "seccomp filter around this process",
                      ErrnoName(abi.error)),
          "run the node outside that filter, or let it pass syscalls 444 to 446",
          fmt::format("landlock_create_ruleset: {}", ErrnoName(abi.error)));
  }
}

Check CheckSeccomp(Kernel& kernel) {
  constexpr std::string_view kConfigFix =
      "use a kernel built with CONFIG_SECCOMP=y and CONFIG_SECCOMP_FILTER=y";
  SyscallResult exists = kernel.SeccompExists();
  if (exists.error == ENOSYS) {
    return FailedCheck(check_id::kSeccomp, "This kernel has no seccomp (CONFIG_SECCOMP)",
                       std::string(kConfigFix), "seccomp(SECCOMP_SET_MODE_STRICT, 1): ENOSYS");
  }
  if (exists.error != EINVAL) {
    return FailedCheck(check_id::kSeccomp,
                       fmt::format("The seccomp() probe failed with {}", ErrnoName(exists.error)),
                       "run the node outside whatever filters seccomp() here");
  }
  SyscallResult filter = kernel.SeccompFilterMode();
  if (filter.error != EFAULT) {
    return FailedCheck(check_id::kSeccomp,
                       fmt::format("This kernel has no seccomp filter mode (CONFIG_SECCOMP_FILTER; "
                                   "prctl answered {})",
                                   filter.ok() ? std::string("0") : ErrnoName(filter.error)),
                       std::string(kConfigFix));
  }
  SyscallResult action = kernel.SeccompActionAvailable(kSeccompRetUserNotif);
  SyscallResult sizes = action.ok() ? kernel.SeccompNotifSizes() : action;
  if (!action.ok() || !sizes.ok()) {
    return FailedCheck(
        check_id::kSeccomp,
        fmt::format("This kernel lacks seccomp user notification, which needs Linux 5.0 "
                    "or later ({})",
                    ErrnoName(action.ok() ? sizes.error : action.error)),
        "upgrade the kernel to Linux 6.2 or later");
  }
  return Pass(check_id::kSeccomp, "The kernel has seccomp filters and user notification");
}

WslInfo DetectWsl(Kernel& kernel, CommandRunner& commands, std::chrono::milliseconds timeout) {
  WslInfo info;
  std::string release = kernel.ReadFile("/proc/sys/kernel/osrelease").value_or("");
  if (release.find("microsoft") != std::string::npos || release.find("WSL2") != std::string::npos) {
    info.version = 2;
  } else if (release.find("Microsoft") != std::string::npos) {
    info.version = 1;
  } else if (kernel.FileExists("/proc/sys/fs/binfmt_misc/WSLInterop") ||
             kernel.GetEnv("WSL_DISTRO_NAME") || kernel.GetEnv("WSL_INTEROP")) {
    info.version = 2;
  }
  if (info.version == 2) {
    CommandResult mode = commands.Run({"wslinfo", "--networking-mode"}, timeout);
    std::string word = internal::FirstLine(mode.out);
    if (mode.Succeeded() && !word.empty()) info.networking_mode = word;
  }
  return info;
}

Check CheckSeccompListener(Kernel& kernel, const Check& seccomp, const WslInfo& wsl,
                           std::chrono::milliseconds timeout) {
  if (seccomp.status != Status::kPass) {
    return Skip(check_id::kSeccompListener, "Not tested: seccomp user notification is unusable",
                true);
  }
  SyscallResult test = kernel.ListenerSlotTest(timeout);
  if (!test.ok()) {
    if (test.error == ETIMEDOUT) {
      return FailedCheck(
          check_id::kSeccompListener,
          fmt::format("The seccomp listener test did not answer within {}", Seconds(timeout)),
          "run `mojoup-node doctor` again, and report it if it persists");
    }
    return FailedCheck(
        check_id::kSeccompListener,
        fmt::format("The seccomp listener test could not run: {}", ErrnoName(test.error)),
        "free process slots or memory and run `mojoup-node doctor` again");
  }
  const std::string detail = fmt::format(
      "a forked child installing a SECCOMP_FILTER_FLAG_NEW_LISTENER filter got {}",
      test.value == 0 ? std::string("success") : ErrnoName(static_cast<int>(test.value)));
  switch (test.value) {
    case 0:
      return Pass(check_id::kSeccompListener, "The seccomp user-notification listener slot is free",
                  detail);
    case EBUSY:
      if (wsl.version == 2) {
        std::string holder =
            !wsl.networking_mode
                ? "WSL's networking (mode unknown; mirrored networking holds this slot)"
            : *wsl.networking_mode == "mirrored" || *wsl.networking_mode == "consomme"
                ? fmt::format("WSL's {} networking", *wsl.networking_mode)
                : fmt::format("WSL's networking (mode {}, which can fall back to consomme)",
                              *wsl.networking_mode);
        return FailedCheck(check_id::kSeccompListener,
                           fmt::format("The seccomp listener slot is held by {}", holder),
                           std::string(kWslFix), detail);
      }
      return FailedCheck(
          check_id::kSeccompListener,
          "The seccomp listener slot is held by another supervisor: an ancestor "
          "process keeps a seccomp user-notification listener (a container runtime or "
          "another sandbox)",
          "run the node outside that supervisor, directly on the host", detail);
    case EINVAL:
      return FailedCheck(check_id::kSeccompListener,
                         "This kernel does not know SECCOMP_FILTER_FLAG_NEW_LISTENER (Linux 5.0 or "
                         "later)",
                         "upgrade the kernel to Linux 6.2 or later", detail);
    case EACCES:
      return FailedCheck(
          check_id::kSeccompListener,
          "The listener test could not set no_new_privs before installing its filter",
          "run the node where no_new_privs is allowed (outside restrictive LSM rules)", detail);
    case ENOSYS:
      return FailedCheck(check_id::kSeccompListener, "This kernel has no seccomp (CONFIG_SECCOMP)",
                         "use a kernel built with CONFIG_SECCOMP=y and CONFIG_SECCOMP_FILTER=y",
                         detail);
    default:
      return FailedCheck(check_id::kSeccompListener,
                         fmt::format("Installing a seccomp listener failed with {}",
                                     ErrnoName(static_cast<int>(test.value))),
                         "run the node directly on the host, outside other sandboxes", detail);
  }
}

Check CheckWsl(const WslInfo& wsl) {
  if (wsl.version == 0) return Pass(check_id::kWsl, "Not running under WSL");
  if (wsl.version == 1) {
    return FailedCheck(check_id::kWsl, "This is WSL 1, which has no Linux kernel of its own",
                       "convert the distribution to WSL 2 with `wsl --set-version <distro> 2`");
  }
  if (!wsl.networking_mode) {
    return Pass(check_id::kWsl, "WSL 2, networking mode unknown (wslinfo did not say)");
  }
  const std::string& mode = *wsl.networking_mode;
  if (mode == "mirrored" || mode == "consomme") {
    return Warn(
        check_id::kWsl,
        fmt::format("WSL 2 in {} networking mode, which holds the seccomp listener slot", mode),
        std::string(kWslFix));
  }
  return Pass(check_id::kWsl, fmt::format("WSL 2, networking mode {}", mode));
}

}  // namespace mojoup::probe

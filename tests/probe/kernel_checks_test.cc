// The kernel checks against MockKernel: every errno branch of the design's
// FACTS.md recipes, Landlock ABI 1 to 9, and WSL's networking modes.
#include <catch2/catch.hpp>
#include <cerrno>

#include "mojoup/probe/probe.h"
#include "mojoup/probe/testing/mock_kernel.h"
#include "mojoup/probe/testing/scripted_command_runner.h"

using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;
using mojoup::probe::Check;
using mojoup::probe::CheckLandlock;
using mojoup::probe::CheckOsLinux;
using mojoup::probe::CheckSeccomp;
using mojoup::probe::CheckSeccompListener;
using mojoup::probe::CheckWsl;
using mojoup::probe::DetectWsl;
using mojoup::probe::Status;
using mojoup::probe::SyscallResult;
using mojoup::probe::WslInfo;
using mojoup::probe::testing::MockKernel;
using mojoup::probe::testing::ScriptedCommandRunner;

namespace {

constexpr auto kTimeout = std::chrono::milliseconds(2000);

// A failed check's reason is one sentence: it names the cause, then the fix.
void RequireOneSentence(const Check& check) {
  INFO(check.reason);
  REQUIRE(check.status == Status::kFail);
  REQUIRE_THAT(check.reason, EndsWith("."));
  REQUIRE(check.reason.find("; ") != std::string::npos);
  REQUIRE(check.reason.find('\n') == std::string::npos);
  REQUIRE(check.remedy.has_value());
}

Check Listener(MockKernel& kernel, const WslInfo& wsl = {}) {
  return CheckSeccompListener(kernel, CheckSeccomp(kernel), wsl, kTimeout);
}

}  // namespace

TEST_CASE("os.linux passes on Linux and names another system", "[kernel]") {
  MockKernel kernel;
  Check check = CheckOsLinux(kernel);
  REQUIRE(check.status == Status::kPass);
  REQUIRE_THAT(check.summary, Contains("6.18.0"));

  kernel.uname.sysname = "FreeBSD";
  check = CheckOsLinux(kernel);
  RequireOneSentence(check);
  REQUIRE_THAT(check.reason, StartsWith("This is FreeBSD, not Linux"));
}

TEST_CASE("Landlock ABI 1 to 9: 3 and later pass, older ones name the kernel that brings ABI 3",
          "[kernel][landlock]") {
  const char* kernels[] = {"", "5.13", "5.19", "6.2", "6.7", "6.10", "6.12", "6.15", "7.0", "7.1"};
  for (int abi = 1; abi <= 9; ++abi) {
    MockKernel kernel;
    kernel.uname.release = "5.15.0-generic";
    kernel.landlock_abi = SyscallResult::Ok(abi);
    Check check = CheckLandlock(kernel);
    INFO("ABI " << abi << ": " << check.summary);
    REQUIRE_THAT(check.detail, Contains(std::string("Linux ") + kernels[abi]));
    if (abi >= 3) {
      REQUIRE(check.status == Status::kPass);
      REQUIRE_THAT(check.summary, Contains("Landlock ABI " + std::to_string(abi)));
    } else {
      RequireOneSentence(check);
      REQUIRE_THAT(check.reason, Contains("Landlock ABI " + std::to_string(abi) + " is too old"));
      REQUIRE_THAT(check.reason, Contains("Linux 6.2"));
      REQUIRE_THAT(check.reason, Contains("5.15.0-generic"));
    }
  }
}

TEST_CASE("Landlock disabled at boot (EOPNOTSUPP) says how to enable it", "[kernel][landlock]") {
  MockKernel kernel;
  kernel.landlock_abi = SyscallResult::Err(EOPNOTSUPP);
  kernel.files["/sys/kernel/security/lsm"] = "lockdown,capability,yama,apparmor\n";
  Check check = CheckLandlock(kernel);
  RequireOneSentence(check);
  REQUIRE_THAT(check.reason, Contains("disabled at boot"));
  REQUIRE_THAT(check.reason, Contains("lsm=landlock,lockdown,capability,yama,apparmor"));
}

TEST_CASE("Landlock ENOSYS: not built in, or blocked by a seccomp filter", "[kernel][landlock]") {
  MockKernel kernel;
  kernel.landlock_abi = SyscallResult::Err(ENOSYS);
  kernel.files["/sys/kernel/security/lsm"] = "capability,apparmor";
  kernel.files["/proc/self/status"] = "Name:\tx\nSeccomp:\t0\n";
  Check check = CheckLandlock(kernel);
  RequireOneSentence(check);
  REQUIRE_THAT(check.reason, Contains("not built into this kernel"));
  REQUIRE_THAT(check.reason, Contains("CONFIG_SECURITY_LANDLOCK"));

  SECTION("the LSM list has landlock: something filters the syscall") {
    kernel.files["/sys/kernel/security/lsm"] = "landlock,capability";
    check = CheckLandlock(kernel);
    RequireOneSentence(check);
    REQUIRE_THAT(check.reason, Contains("blocked by a seccomp filter"));
  }
  SECTION("this process runs under a seccomp filter") {
    kernel.files["/proc/self/status"] = "Name:\tx\nSeccomp:\t2\n";
    check = CheckLandlock(kernel);
    REQUIRE_THAT(check.reason, Contains("blocked by a seccomp filter"));
  }
}

TEST_CASE("Landlock: any other errno is reported raw", "[kernel][landlock]") {
  MockKernel kernel;
  kernel.landlock_abi = SyscallResult::Err(EPERM);
  Check check = CheckLandlock(kernel);
  RequireOneSentence(check);
  REQUIRE_THAT(check.reason, Contains("EPERM (1)"));
}

TEST_CASE("seccomp: each recipe's answer", "[kernel][seccomp]") {
  MockKernel kernel;
  REQUIRE(CheckSeccomp(kernel).status == Status::kPass);

  SECTION("seccomp() missing: ENOSYS") {
    kernel.seccomp_exists = SyscallResult::Err(ENOSYS);
    Check check = CheckSeccomp(kernel);
    RequireOneSentence(check);
    REQUIRE_THAT(check.reason, Contains("has no seccomp"));
  }
  SECTION("no filter mode: prctl says EINVAL") {
    kernel.seccomp_filter_mode = SyscallResult::Err(EINVAL);
    Check check = CheckSeccomp(kernel);
    RequireOneSentence(check);
    REQUIRE_THAT(check.reason, Contains("CONFIG_SECCOMP_FILTER"));
  }
  SECTION("no user notification: GET_ACTION_AVAIL says EOPNOTSUPP") {
    kernel.seccomp_user_notif = SyscallResult::Err(EOPNOTSUPP);
    Check check = CheckSeccomp(kernel);
    RequireOneSentence(check);
    REQUIRE_THAT(check.reason, Contains("user notification"));
    REQUIRE_THAT(check.reason, Contains("Linux 5.0"));
  }
  SECTION("GET_NOTIF_SIZES fails") {
    kernel.seccomp_notif_sizes = SyscallResult::Err(EINVAL);
    REQUIRE(CheckSeccomp(kernel).status == Status::kFail);
  }
}

TEST_CASE("listener slot: the child's errno decides", "[kernel][listener]") {
  MockKernel kernel;
  Check check = Listener(kernel);
  REQUIRE(check.status == Status::kPass);

  SECTION("EBUSY off WSL: another supervisor holds it") {
    kernel.listener_slot = SyscallResult::Ok(EBUSY);
    check = Listener(kernel);
    RequireOneSentence(check);
    REQUIRE_THAT(check.reason, Contains("held by another supervisor"));
  }
  SECTION("EINVAL: NEW_LISTENER unknown") {
    kernel.listener_slot = SyscallResult::Ok(EINVAL);
    check = Listener(kernel);
    RequireOneSentence(check);
    REQUIRE_THAT(check.reason, Contains("SECCOMP_FILTER_FLAG_NEW_LISTENER"));
  }
  SECTION("EACCES: no_new_privs problem") {
    kernel.listener_slot = SyscallResult::Ok(EACCES);
    check = Listener(kernel);
    RequireOneSentence(check);
    REQUIRE_THAT(check.reason, Contains("no_new_privs"));
  }
  SECTION("ENOSYS: no seccomp") {
    kernel.listener_slot = SyscallResult::Ok(ENOSYS);
    check = Listener(kernel);
    RequireOneSentence(check);
    REQUIRE_THAT(check.reason, Contains("no seccomp"));
  }
  SECTION("the test could not finish in time") {
    kernel.listener_slot = SyscallResult::Err(ETIMEDOUT);
    check = Listener(kernel);
    RequireOneSentence(check);
    REQUIRE_THAT(check.reason, Contains("did not answer within 2 s"));
  }
  SECTION("fork failed") {
    kernel.listener_slot = SyscallResult::Err(EAGAIN);
    check = Listener(kernel);
    RequireOneSentence(check);
    REQUIRE_THAT(check.reason, Contains("EAGAIN"));
  }
  SECTION("without seccomp the slot is not tested") {
    kernel.seccomp_exists = SyscallResult::Err(ENOSYS);
    const int before = kernel.listener_tests();
    check = Listener(kernel);
    REQUIRE(check.status == Status::kSkip);
    REQUIRE(kernel.listener_tests() == before);
  }
}

TEST_CASE("WSL: detection and the networking mode", "[kernel][wsl]") {
  MockKernel kernel;
  ScriptedCommandRunner runner;
  kernel.files["/proc/sys/kernel/osrelease"] = "6.18.0\n";
  WslInfo info = DetectWsl(kernel, runner, kTimeout);
  REQUIRE(info.version == 0);
  REQUIRE(runner.calls().empty());
  REQUIRE(CheckWsl(info).status == Status::kPass);

  kernel.files["/proc/sys/kernel/osrelease"] = "4.4.0-19041-Microsoft\n";
  info = DetectWsl(kernel, runner, kTimeout);
  REQUIRE(info.version == 1);
  RequireOneSentence(CheckWsl(info));

  kernel.files["/proc/sys/kernel/osrelease"] = "6.6.87.2-microsoft-standard-WSL2\n";
  SECTION("mirrored: the slot is WSL's, and the fix is NAT") {
    runner.Prints("wslinfo --networking-mode", "mirrored\n");
    info = DetectWsl(kernel, runner, kTimeout);
    REQUIRE(info.version == 2);
    REQUIRE(info.networking_mode == "mirrored");
    Check wsl = CheckWsl(info);
    REQUIRE(wsl.status == Status::kWarn);
    kernel.listener_slot = SyscallResult::Ok(EBUSY);
    Check check = Listener(kernel, info);
    RequireOneSentence(check);
    REQUIRE_THAT(check.reason, Contains("WSL's mirrored networking"));
    REQUIRE_THAT(check.reason, Contains("networkingMode=nat"));
    REQUIRE_THAT(check.reason, Contains("wsl --shutdown"));
  }
  SECTION("nat: named, with the consomme fallback") {
    runner.Prints("wslinfo --networking-mode", "nat\n");
    info = DetectWsl(kernel, runner, kTimeout);
    REQUIRE(CheckWsl(info).status == Status::kPass);
    REQUIRE_THAT(CheckWsl(info).summary, Contains("nat"));
    kernel.listener_slot = SyscallResult::Ok(EBUSY);
    Check check = Listener(kernel, info);
    REQUIRE_THAT(check.reason, Contains("mode nat"));
    REQUIRE_THAT(check.reason, Contains("networkingMode=nat"));
  }
  SECTION("unknown: wslinfo missing, detected through the environment") {
    kernel.files["/proc/sys/kernel/osrelease"] = "6.6.0\n";
    kernel.env["WSL_DISTRO_NAME"] = "Debian";
    info = DetectWsl(kernel, runner, kTimeout);
    REQUIRE(info.version == 2);
    REQUIRE_FALSE(info.networking_mode.has_value());
    kernel.listener_slot = SyscallResult::Ok(EBUSY);
    Check check = Listener(kernel, info);
    REQUIRE_THAT(check.reason, Contains("mode unknown"));
    REQUIRE_THAT(check.reason, Contains("networkingMode=nat"));
  }
}

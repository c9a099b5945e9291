// The kernel checks against the running kernel, and a real taken listener slot.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include "../support/test_support.h"
#include "mojoup/probe/probe.h"

using namespace mojoup::probe;
using Catch::Matchers::Contains;

TEST_CASE("the running kernel: Landlock as the check reports it", "[real][landlock]") {
  auto kernel = MakeSystemKernel();
  SyscallResult abi = kernel->LandlockAbiVersion();
  Check check = CheckLandlock(*kernel);
  INFO(check.summary);
  // A kernel without usable Landlock is a property of this machine, not a
  // missing component: the check must then fail, naming the errno's meaning.
  if (!abi.ok()) {
    REQUIRE(check.status == Status::kFail);
    return;
  }
  REQUIRE(check.status == (abi.value >= 3 ? Status::kPass : Status::kFail));
  REQUIRE_THAT(check.summary, Contains("Landlock ABI " + std::to_string(abi.value)));
}

TEST_CASE("the running kernel: seccomp with user notification, and a free slot",
          "[real][seccomp]") {
  auto kernel = MakeSystemKernel();
  Check seccomp = CheckSeccomp(*kernel);
  SyscallResult slot = kernel->ListenerSlotTest(std::chrono::seconds(2));
  Check listener_now = CheckSeccompListener(*kernel, seccomp, WslInfo{}, std::chrono::seconds(2));
  INFO(seccomp.summary << " / " << listener_now.summary);
  // Kernel properties, asserted as what the checks must then say.
  if (seccomp.status != Status::kPass) {
    REQUIRE(listener_now.status != Status::kPass);
    return;
  }
  REQUIRE(slot.ok());
  if (slot.value == EBUSY) {
    REQUIRE(listener_now.status == Status::kFail);
    return;
  }
  auto filters = [&] {
    std::string status = kernel->ReadFile("/proc/self/status").value_or("");
    auto at = status.find("Seccomp_filters:");
    return status.substr(at, status.find('\n', at) - at);
  };
  const std::string before = filters();
  Check listener = CheckSeccompListener(*kernel, seccomp, WslInfo{}, std::chrono::seconds(2));
  REQUIRE(listener.status == Status::kPass);
  // The test ran in a child: this process gained no filter.
  REQUIRE(filters() == before);
}

TEST_CASE("the running kernel: a held listener slot is seen as held", "[real][seccomp]") {
  auto kernel = MakeSystemKernel();
  // Without seccomp, or with the slot already held above this test, there is
  // no free slot to take: what the checks say then is the test above's.
  if (CheckSeccomp(*kernel).status != Status::kPass ||
      kernel->ListenerSlotTest(std::chrono::seconds(2)).value == EBUSY) {
    SUCCEED("no free listener slot on this machine to take");
    return;
  }
  // A child takes the slot and keeps the fd open, then runs the check itself:
  // its forked grandchild must get EBUSY.
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    sock_fprog prog{1, &allow};
    long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 1UL << 3, &prog);
    if (fd < 0) _exit(100);
    SyscallResult held = kernel->ListenerSlotTest(std::chrono::seconds(2));
    _exit(held.ok() ? static_cast<int>(held.value) : 101);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == EBUSY);
}

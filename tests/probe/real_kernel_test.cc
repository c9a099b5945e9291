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
  if (!abi.ok()) MOJOUP_SKIP("this kernel has no usable Landlock (errno " << abi.error << ")");
  Check check = CheckLandlock(*kernel);
  INFO(check.summary);
  REQUIRE(check.status == (abi.value >= 3 ? Status::kPass : Status::kFail));
  REQUIRE_THAT(check.summary, Contains("Landlock ABI " + std::to_string(abi.value)));
}

TEST_CASE("the running kernel: seccomp with user notification, and a free slot",
          "[real][seccomp]") {
  auto kernel = MakeSystemKernel();
  Check seccomp = CheckSeccomp(*kernel);
  if (seccomp.status != Status::kPass) MOJOUP_SKIP("seccomp unusable here: " << seccomp.summary);
  SyscallResult slot = kernel->ListenerSlotTest(std::chrono::seconds(2));
  REQUIRE(slot.ok());
  if (slot.value == EBUSY) MOJOUP_SKIP("an ancestor of this test already holds the listener slot");
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
  if (CheckSeccomp(*kernel).status != Status::kPass) MOJOUP_SKIP("seccomp unusable here");
  if (kernel->ListenerSlotTest(std::chrono::seconds(2)).value == EBUSY) {
    MOJOUP_SKIP("an ancestor of this test already holds the listener slot");
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

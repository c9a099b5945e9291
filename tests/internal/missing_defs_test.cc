#include "mojoup/internal/missing_defs.h"

#include <sys/syscall.h>

#include <catch2/catch.hpp>

namespace uapi = mojoup::internal::uapi;

TEST_CASE("the Landlock syscall numbers agree with the system's where it has them",
          "[missing_defs]") {
#ifdef SYS_landlock_create_ruleset
  REQUIRE(uapi::kSysLandlockCreateRuleset == SYS_landlock_create_ruleset);
  REQUIRE(uapi::kSysLandlockAddRule == SYS_landlock_add_rule);
  REQUIRE(uapi::kSysLandlockRestrictSelf == SYS_landlock_restrict_self);
#else
  WARN("SKIP: the libc headers lack the Landlock syscall numbers");
#endif
}

TEST_CASE("the Landlock rights are distinct bits, one per ABI step", "[missing_defs]") {
  const std::uint64_t rights[] = {
      uapi::kLandlockAccessFsExecute,   uapi::kLandlockAccessFsWriteFile,
      uapi::kLandlockAccessFsReadFile,  uapi::kLandlockAccessFsReadDir,
      uapi::kLandlockAccessFsRemoveDir, uapi::kLandlockAccessFsRemoveFile,
      uapi::kLandlockAccessFsMakeChar,  uapi::kLandlockAccessFsMakeDir,
      uapi::kLandlockAccessFsMakeReg,   uapi::kLandlockAccessFsMakeSock,
      uapi::kLandlockAccessFsMakeFifo,  uapi::kLandlockAccessFsMakeBlock,
      uapi::kLandlockAccessFsMakeSym,   uapi::kLandlockAccessFsRefer,
      uapi::kLandlockAccessFsTruncate,  uapi::kLandlockAccessFsIoctlDev};
  std::uint64_t seen = 0;
  for (std::uint64_t right : rights) {
    REQUIRE((seen & right) == 0);
    seen |= right;
  }
  REQUIRE(seen == (1ULL << 16) - 1);
}

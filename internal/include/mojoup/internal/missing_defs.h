// Kernel UAPI definitions that Debian 12's 6.1-era headers lack or that
// differ between libcs (Landlock rights after ABI 2, Landlock and seccomp
// syscall arguments), defined once, here. Values are the kernel's
// (include/uapi/linux/landlock.h, seccomp.h); the names carry our own prefix
// so they never collide with a newer system header.
#pragma once

#include <cstdint>

namespace mojoup::internal::uapi {

// Landlock syscall numbers: the same on every architecture.
inline constexpr long kSysLandlockCreateRuleset = 444;
inline constexpr long kSysLandlockAddRule = 445;
inline constexpr long kSysLandlockRestrictSelf = 446;

// landlock_create_ruleset(NULL, 0, flag) answers with the ABI version or the
// errata bitmask instead of creating a ruleset.
inline constexpr std::uint32_t kLandlockCreateRulesetVersion = 1U << 0;
inline constexpr std::uint32_t kLandlockCreateRulesetErrata = 1U << 1;

// landlock_add_rule's rule type for a file or directory hierarchy.
inline constexpr int kLandlockRulePathBeneath = 1;

// Filesystem access rights, by the ABI that introduced them.
// ABI 1:
inline constexpr std::uint64_t kLandlockAccessFsExecute = 1ULL << 0;
inline constexpr std::uint64_t kLandlockAccessFsWriteFile = 1ULL << 1;
inline constexpr std::uint64_t kLandlockAccessFsReadFile = 1ULL << 2;
inline constexpr std::uint64_t kLandlockAccessFsReadDir = 1ULL << 3;
inline constexpr std::uint64_t kLandlockAccessFsRemoveDir = 1ULL << 4;
inline constexpr std::uint64_t kLandlockAccessFsRemoveFile = 1ULL << 5;
inline constexpr std::uint64_t kLandlockAccessFsMakeChar = 1ULL << 6;
inline constexpr std::uint64_t kLandlockAccessFsMakeDir = 1ULL << 7;
inline constexpr std::uint64_t kLandlockAccessFsMakeReg = 1ULL << 8;
inline constexpr std::uint64_t kLandlockAccessFsMakeSock = 1ULL << 9;
inline constexpr std::uint64_t kLandlockAccessFsMakeFifo = 1ULL << 10;
inline constexpr std::uint64_t kLandlockAccessFsMakeBlock = 1ULL << 11;
inline constexpr std::uint64_t kLandlockAccessFsMakeSym = 1ULL << 12;
// ABI 2:
inline constexpr std::uint64_t kLandlockAccessFsRefer = 1ULL << 13;
// ABI 3:
inline constexpr std::uint64_t kLandlockAccessFsTruncate = 1ULL << 14;
// ABI 5:
inline constexpr std::uint64_t kLandlockAccessFsIoctlDev = 1ULL << 15;

// struct landlock_ruleset_attr. The kernel grew it at ABI 4 and 6 and accepts
// any size that covers the fields a caller sets, so we pass only the prefix
// up to handled_access_fs (kLandlockRulesetAttrFsSize), which every ABI knows.
struct LandlockRulesetAttr {
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;  // ABI 4
  std::uint64_t scoped;              // ABI 6
};
inline constexpr unsigned long kLandlockRulesetAttrFsSize = sizeof(std::uint64_t);

// struct landlock_path_beneath_attr: packed in the UAPI, 12 bytes.
struct __attribute__((packed)) LandlockPathBeneathAttr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};
static_assert(sizeof(LandlockPathBeneathAttr) == 12);

// seccomp(2) operations, filter flags and return actions.
inline constexpr unsigned kSeccompSetModeStrict = 0;
inline constexpr unsigned kSeccompSetModeFilter = 1;
inline constexpr unsigned kSeccompGetActionAvail = 2;
inline constexpr unsigned kSeccompGetNotifSizes = 3;
inline constexpr unsigned kSeccompFilterFlagNewListener = 1U << 3;
inline constexpr std::uint32_t kSeccompRetAllow = 0x7fff0000U;

}  // namespace mojoup::internal::uapi

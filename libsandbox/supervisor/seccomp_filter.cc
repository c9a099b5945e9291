#include "seccomp_filter.h"

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace mojoup::supervisor {
namespace {

enum class When {
  kAlways,
  kNewUserNamespace,  // only when the flags argument asks for CLONE_NEWUSER
  kVsockFamily,       // only for sockets of the AF_VSOCK family
  kSetIdMode,         // only when the mode argument has S_ISUID or S_ISGID
  kSetIdCreation,     // the same, and only when the flags argument creates a file
};

struct Rule {
  const char* name;
  int error;
  When when = When::kAlways;
  unsigned mode_arg = 0;   // kSetIdMode, kSetIdCreation
  unsigned flags_arg = 0;  // kSetIdCreation
  // The system call's number where this libseccomp may not know its name;
  // -1 where there is no such fallback.
  int fallback_number = -1;
};

// clone's flags: the first argument, except on s390 where the first two swap.
#if defined(__s390__) || defined(__s390x__)
constexpr unsigned kCloneFlagsArg = 1;
#else
constexpr unsigned kCloneFlagsArg = 0;
#endif

// fchmodat2 (Linux 6.6) is 452 in the unified table that these architectures
// share; libseccomp releases before 2.5.5 do not know its name.
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || defined(__arm__) || \
    defined(__riscv) || defined(__powerpc64__) || defined(__s390x__) || defined(__loongarch64)
constexpr int kFchmodat2 = 452;
#else
constexpr int kFchmodat2 = -1;
#endif

// The mode bits that make an executable run as its owner or its group. On
// the host, outside every sandbox, such a file in the repository would run as
// the user for anyone who can reach it (and a set-group-ID one as the user's
// group); inside, no_new_privs already makes them inert.
constexpr scmp_datum_t kSetIdBits[] = {S_ISUID, S_ISGID};

// The open flags that create a file with the mode argument: O_CREAT, and
// O_TMPFILE (an unnamed file that linkat can give a name later). glibc's
// O_TMPFILE includes O_DIRECTORY, which plain directory opens carry too.
constexpr scmp_datum_t kCreatingFlags[] = {O_CREAT, O_TMPFILE & ~O_DIRECTORY};

constexpr Rule kRules[] = {
    // New mounts would let the command lay a writable tree over a read-only one.
    {"mount", EPERM},
    {"umount2", EPERM},
    {"fsopen", EPERM},
    {"fsconfig", EPERM},
    {"fsmount", EPERM},
    {"fspick", EPERM},
    {"move_mount", EPERM},
    {"open_tree", EPERM},
    {"mount_setattr", EPERM},
    {"pivot_root", EPERM},
    // Reading or steering another process's memory.
    {"ptrace", EPERM},
    {"process_vm_readv", EPERM},
    {"process_vm_writev", EPERM},
    // Large kernel attack surface no build or test needs.
    {"bpf", EPERM},
    {"perf_event_open", EPERM},
    {"kexec_load", EPERM},
    {"kexec_file_load", EPERM},
    {"init_module", EPERM},
    {"finit_module", EPERM},
    {"delete_module", EPERM},
    {"userfaultfd", EPERM},
    // io_uring performs file and socket operations its own way; Landlock
    // covers them, but the interface has a long record of kernel bugs.
    {"io_uring_setup", EPERM},
    {"io_uring_enter", EPERM},
    {"io_uring_register", EPERM},
    // A user namespace hands out every capability inside it, and with them
    // mounts and the rest of the kernel's namespaced attack surface. Other
    // namespaces still need capabilities, which the container has dropped.
    {"setns", EPERM},
    {"unshare", EPERM, When::kNewUserNamespace},
    {"clone", EPERM, When::kNewUserNamespace},
    // clone3 takes its flags in a struct in memory, which a seccomp filter
    // cannot read, so CLONE_NEWUSER cannot be told apart there. ENOSYS rather
    // than EPERM: glibc (and other runtimes) then fall back to clone, whose
    // flags the rule above checks, so threads and fork keep working.
    {"clone3", ENOSYS},
    // AF_VSOCK reaches the hypervisor and other VMs' services directly,
    // around the network namespace: a container with no network must not.
    {"socket", EPERM, When::kVsockFamily},
    // No set-user-ID or set-group-ID file: neither by changing a mode nor by
    // creating a file with one. Every other mode (git, npm and tar set them
    // all the time) goes through. A set-group-ID directory is refused too: the
    // filter cannot tell a directory from a file.
    {"chmod", EPERM, When::kSetIdMode, 1},
    {"fchmod", EPERM, When::kSetIdMode, 1},
    {"fchmodat", EPERM, When::kSetIdMode, 2},
    {"fchmodat2", EPERM, When::kSetIdMode, 2, 0, kFchmodat2},
    {"creat", EPERM, When::kSetIdMode, 1},
    {"open", EPERM, When::kSetIdCreation, 2, 1},
    {"openat", EPERM, When::kSetIdCreation, 3, 2},
    {"mknod", EPERM, When::kSetIdMode, 1},
    {"mknodat", EPERM, When::kSetIdMode, 2},
    // openat2 takes its flags and mode in a struct in memory, like clone3:
    // ENOSYS, and glibc and most programs fall back to openat.
    {"openat2", ENOSYS},
};

class Filter {
 public:
  Filter() : ctx_(seccomp_init(SCMP_ACT_ALLOW)) {}
  ~Filter() {
    if (ctx_ != nullptr) seccomp_release(ctx_);
  }
  Filter(const Filter&) = delete;
  Filter& operator=(const Filter&) = delete;
  scmp_filter_ctx get() const { return ctx_; }

 private:
  scmp_filter_ctx ctx_;
};

// libseccomp's SCMP_A0() builds a C compound literal, which ISO C++ rejects.
scmp_arg_cmp FlagsContain(unsigned arg, scmp_datum_t flags) {
  scmp_arg_cmp cmp{};
  cmp.arg = arg;
  cmp.op = SCMP_CMP_MASKED_EQ;
  cmp.datum_a = flags;  // mask
  cmp.datum_b = flags;  // value after masking
  return cmp;
}

// The rules that refuse `rule` when its mode has a set-ID bit: one per bit
// (libseccomp ORs a call's rules, and ANDs the comparisons within one), and
// for a creating call one per bit and creating flag. Masked comparisons
// ignore whatever the caller left in the rest of the register.
int AddSetIdRules(scmp_filter_ctx ctx, const Rule& rule, int number) {
  const uint32_t action = SCMP_ACT_ERRNO(static_cast<unsigned>(rule.error));
  for (scmp_datum_t bit : kSetIdBits) {
    scmp_arg_cmp mode = FlagsContain(rule.mode_arg, bit);
    if (rule.when == When::kSetIdMode) {
      if (int rc = seccomp_rule_add_array(ctx, action, number, 1, &mode); rc < 0) return rc;
      continue;
    }
    for (scmp_datum_t flag : kCreatingFlags) {
      const scmp_arg_cmp both[] = {FlagsContain(rule.flags_arg, flag), mode};
      if (int rc = seccomp_rule_add_array(ctx, action, number, 2, both); rc < 0) return rc;
    }
  }
  return 0;
}

std::string AddRule(scmp_filter_ctx ctx, const Rule& rule) {
  int number = seccomp_syscall_resolve_name(rule.name);
  if (number == __NR_SCMP_ERROR) number = rule.fallback_number;
  // Unknown to this libseccomp, or (a negative pseudo number) not a system
  // call on this architecture: nothing the command could call, nothing to deny.
  if (number == __NR_SCMP_ERROR || number < 0) return {};
  int rc;
  if (rule.when == When::kSetIdMode || rule.when == When::kSetIdCreation) {
    rc = AddSetIdRules(ctx, rule, number);
  } else if (rule.when == When::kVsockFamily) {
    scmp_arg_cmp cmp{};
    cmp.arg = 0;  // socket(domain, type, protocol)
    cmp.op = SCMP_CMP_MASKED_EQ;
    cmp.datum_a = 0xffffffff;  // an int: the register's upper half is not the caller's
    cmp.datum_b = AF_VSOCK;
    rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(static_cast<unsigned>(rule.error)), number, 1,
                                &cmp);
  } else if (rule.when == When::kNewUserNamespace) {
    unsigned arg = std::strcmp(rule.name, "clone") == 0 ? kCloneFlagsArg : 0;
    scmp_arg_cmp cmp = FlagsContain(arg, CLONE_NEWUSER);
    rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(static_cast<unsigned>(rule.error)), number, 1,
                                &cmp);
  } else {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(static_cast<unsigned>(rule.error)), number, 0);
  }
  if (rc < 0) {
    return std::string("cannot add the seccomp rule for ") + rule.name + ": " + std::strerror(-rc);
  }
  return {};
}

}  // namespace

std::string ApplySeccompDenyList() {
  Filter filter;
  if (filter.get() == nullptr) return "cannot create a seccomp filter (libseccomp failed)";
  // The kernel's own errno from seccomp_load, not libseccomp's -ECANCELED.
  if (int rc = seccomp_attr_set(filter.get(), SCMP_FLTATR_API_SYSRAWRC, 1); rc < 0) {
    return std::string("cannot configure the seccomp filter: ") + std::strerror(-rc);
  }
  for (const Rule& rule : kRules) {
    if (std::string error = AddRule(filter.get(), rule); !error.empty()) return error;
  }
  if (int rc = seccomp_load(filter.get()); rc < 0) {
    return std::string("cannot install the seccomp filter: ") + std::strerror(-rc);
  }
  return {};
}

}  // namespace mojoup::supervisor

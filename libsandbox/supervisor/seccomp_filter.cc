#include "seccomp_filter.h"

#include <sched.h>
#include <seccomp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace mojoup::supervisor {
namespace {

enum class When {
  kAlways,
  kNewUserNamespace,  // only when the flags argument asks for CLONE_NEWUSER
  kVsockFamily,       // only for sockets of the AF_VSOCK family
};

struct Rule {
  const char* name;
  int error;
  When when = When::kAlways;
};

// clone's flags: the first argument, except on s390 where the first two swap.
#if defined(__s390__) || defined(__s390x__)
constexpr unsigned kCloneFlagsArg = 1;
#else
constexpr unsigned kCloneFlagsArg = 0;
#endif

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

std::string AddRule(scmp_filter_ctx ctx, const Rule& rule) {
  int number = seccomp_syscall_resolve_name(rule.name);
  // Unknown to this libseccomp, or (a negative pseudo number) not a system
  // call on this architecture: nothing the command could call, nothing to deny.
  if (number == __NR_SCMP_ERROR || number < 0) return {};
  int rc;
  if (rule.when == When::kVsockFamily) {
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

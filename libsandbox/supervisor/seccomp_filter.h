// The supervisor's seccomp deny-list: everything is allowed except the system
// calls that reach past Landlock and the container (mounts, new user
// namespaces, tracing other processes, kernel modules, BPF, io_uring, ...),
// and any mode with a set-user-ID or set-group-ID bit (chmod and its kin,
// file creation with such a mode), which the host would honour.
//
//   if (std::string error = ApplySeccompDenyList(); !error.empty()) Refuse(error);
//
// A deny-list, not an allow-list: the command is an arbitrary toolchain in an
// arbitrary image, and Docker's own profile already sits underneath.
#pragma once

#include <string>

namespace mojoup::supervisor {

// Installs the filter on the calling thread (inherited across fork and exec).
// Only the native architecture's calls pass; another ABI (i386 through
// int 0x80, x32) kills the thread. Returns an empty string on success, else
// one sentence saying what failed; then no filter was installed.
std::string ApplySeccompDenyList();

}  // namespace mojoup::supervisor

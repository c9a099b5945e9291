// Landlock for the sandbox supervisor: confine where the command may write,
// leave reading and executing alone.
//
// The supervisor calls this after setting no_new_privs and before exec; the
// ruleset then binds the command and everything it starts:
//
//   if (std::string error = ApplyLandlock({"/repo", "/home/agent", "/tmp"}, {}); !error.empty())
//     Refuse(error);  // never run the command half-enforced
//
// Below ABI 3 (Linux 6.2, probe::kMinLandlockAbi) truncate(2) on any file
// stays unconfined, so the supervisor refuses rather than enforce part of the
// promise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mojoup::supervisor {

// The Landlock ABI the running kernel offers (>= 1), or -errno when it offers
// none: -ENOSYS (not built in, or blocked by a seccomp profile), -EOPNOTSUPP
// (built in but disabled at boot).
int LandlockAbi();

// Every write-type filesystem right `abi` knows: what the ruleset handles.
std::uint64_t LandlockWriteAccess(int abi);

// Restricts the calling thread and its future children: writes only beneath
// `write_dirs`, to `write_files`, and to the device files programs expect to
// write (/dev/null, /dev/tty, /dev/pts, /dev/shm, ...). Needs no_new_privs (or
// CAP_SYS_ADMIN). Returns an empty string on success, else one sentence saying
// what failed; then nothing was enforced and the caller must not go on.
std::string ApplyLandlock(const std::vector<std::string>& write_dirs,
                          const std::vector<std::string>& write_files);

}  // namespace mojoup::supervisor

// The devices a sandboxed command may write on every runtime: the native
// supervisor's Landlock rules and the OpenShell policy's read_write list
// both grant exactly these, so `2>/dev/null`, a terminal or shared memory
// behave alike whichever runtime runs the session.
#pragma once

namespace mojoup::internal {

// Programs write to these as a matter of course (redirections to /dev/null,
// terminals, entropy seeding).
inline constexpr const char* kSandboxDeviceFiles[] = {
    "/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/urandom", "/dev/random"};
// Pseudo-terminals are created under /dev/pts, POSIX shared memory under
// /dev/shm.
inline constexpr const char* kSandboxDeviceDirs[] = {"/dev/pts", "/dev/shm"};

}  // namespace mojoup::internal

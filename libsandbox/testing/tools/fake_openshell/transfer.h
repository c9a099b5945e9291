// What `sandbox upload` and `sandbox download` share (transfer.cc).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fake_openshell.h"
#include "mojoup/internal/fd.h"
#include "mojoup/internal/spawn.h"

namespace mojoup::fake_openshell {

// The CLI's SSH session to a sandbox (ssh.rs ssh_session_config).
struct Session {
  std::optional<Docker> docker;
  Sandbox sandbox;
  std::string workdir;  // where the session's commands start
};

// Opens the session to sandbox `name`: the exit code when the gateway, the
// sandbox (missing, not Ready) or the host's `ssh` stops it.
std::optional<int> OpenSession(const Context& ctx, const std::string& name, Session& session);

// Runs a shell command line over the session, as `ssh -T sandbox CMD` runs
// it: its stdin from `input_fd` (none when negative), its stdout to `out`
// (ours when empty), its stderr to ours. The exit status, or nothing when
// Docker failed (`error`).
std::optional<int> RunRemote(Session& session, const std::string& command, int input_fd,
                             const std::function<void(const char*, std::size_t)>& out,
                             std::string& error);
// The same with stdout captured (ssh.rs ssh_run_capture_stdout): the
// output and the exit status in `status`.
std::optional<std::string> RunRemoteCapture(Session& session, const std::string& command,
                                            int& status, std::string& error);

// The host's tar with one end of a pipe: its archive to read (creating) or
// ours to write (extracting, `reading`).
struct HostTar {
  internal::Child child;
  internal::Fd pipe;
};
std::optional<HostTar> StartHostTar(const std::vector<std::string>& args, bool reading,
                                    std::string& error);
// Closes our end and waits: "" when tar succeeded, else what it said.
std::string FinishHostTar(HostTar& tar);

}  // namespace mojoup::fake_openshell

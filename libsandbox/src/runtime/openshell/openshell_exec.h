// The session's command as OpenShell's exec can carry it. The gateway
// refuses an exec whose fields pass its limits (v0.0.111
// crates/openshell-server/src/grpc/validation.rs validate_exec_request_fields),
// then joins them into one shell line (grpc/sandbox.rs
// build_remote_exec_command) that the sandbox runs as `/bin/bash -lc LINE`.
// What does not fit is staged: an earlier exec writes it into the sandbox
// from its stdin (read whole by the CLI, up to 4 MiB), and the command's
// shell sources it before it becomes the command. What cannot be staged is
// refused before anything is created.
//
//   auto request = PlanOpenShellExec(workdir, environment, command, OpenShellStageDir());
//   if (!request.ok()) return request.status();  // one sentence, InvalidArgument
//   if (!request->staged.empty()) stage request->staged with OpenShellStageCommand(...)
//   exec --workdir request->workdir --env ... -- request->command
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace mojoup::sandbox {

// v0.0.26..v0.0.111 validation.rs: MAX_EXEC_COMMAND_ARGS, MAX_EXEC_ARG_LEN
// (each argument and each environment value, which may hold no line break),
// MAX_EXEC_WORKDIR_LEN.
inline constexpr std::size_t kOpenShellMaxExecArgs = 1024;
inline constexpr std::size_t kOpenShellMaxExecArg = 32 * 1024;
inline constexpr std::size_t kOpenShellMaxExecWorkdir = 4096;
// The gateway refuses a line over 256 KiB (MAX_COMMAND_STRING_LEN), but the
// line is one argument of bash in the sandbox, which the kernel takes only
// below 128 KiB with its NUL (MAX_ARG_STRLEN).
inline constexpr std::size_t kOpenShellMaxExecLine = 128 * 1024 - 1;
// The CLI's MAX_STDIN_PAYLOAD (v0.0.111 crates/openshell-cli/src/run.rs).
inline constexpr std::size_t kOpenShellMaxStdin = 4 * 1024 * 1024;

// Where the command leaves its process id in the sandbox, for a signal.
inline constexpr std::string_view kOpenShellCommandPidFile = "/tmp/.mojoup-command.pid";

// One exec of the session's command.
struct OpenShellExecRequest {
  std::string workdir;                             // --workdir; "" for none
  std::map<std::string, std::string> environment;  // --env NAME=VALUE
  std::vector<std::string> command;                // after `--`
  // A shell script the command's shell sources first (it may `cd`, export
  // and `set --`), written to the stage directory by an earlier exec; ""
  // when nothing is staged.
  std::string staged;
};

// A fresh directory for the staged script: /tmp/.mojoup-stage-<16 hex>.
std::string OpenShellStageDir();

// The exec request for the session's command in `workdir` with
// `environment`, staging in `stage_dir` what the gateway would refuse or
// the sandbox could not run. InvalidArgument, in one sentence, when it
// cannot be met: a working directory over 4096 bytes, a variable name the
// CLI refuses, or more than 4 MiB to stage.
absl::StatusOr<OpenShellExecRequest> PlanOpenShellExec(
    const std::string& workdir, const std::map<std::string, std::string>& environment,
    const std::vector<std::string>& command, const std::string& stage_dir);

// The command of the exec that stages: it makes `stage_dir` (which must not
// exist) private to the sandbox's user and writes its stdin there.
std::vector<std::string> OpenShellStageCommand(const std::string& stage_dir);

// The line the gateway assembles for an exec, as build_remote_exec_command
// does (POSIX quoting of each word, `NAME=VALUE` first, `cd W && ` before).
std::string OpenShellExecLine(const std::string& workdir,
                              const std::map<std::string, std::string>& environment,
                              const std::vector<std::string>& command);

}  // namespace mojoup::sandbox

#include "runtime/openshell/openshell_exec.h"

#include <algorithm>
#include <cctype>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "mojoup/internal/session_id.h"

namespace mojoup::sandbox {
namespace {

// The staged script's name in the stage directory.
constexpr std::string_view kStagedScript = "script";

bool HasLineBreak(std::string_view value) {
  return value.find_first_of("\r\n") != std::string_view::npos;
}

// A name `--env` takes (v0.0.111 crates/openshell-cli/src/commands/common.rs
// parse_env_pairs; the gateway's is_valid_env_key): [A-Za-z_][A-Za-z0-9_]*,
// not starting with OPENSHELL_.
bool ExecVariableName(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front())) != 0) return false;
  if (name.substr(0, 10) == "OPENSHELL_") return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return c == '_' || (c < 0x80 && std::isalnum(c) != 0);
  });
}

// The gateway's shell_escape (v0.0.111 grpc/sandbox.rs): a word of
// [A-Za-z0-9./_-] as it is, else in single quotes with `'"'"'` for each quote.
std::string GatewayQuote(std::string_view word) {
  if (word.empty()) return "''";
  const bool plain = std::all_of(word.begin(), word.end(), [](unsigned char c) {
    return (c < 0x80 && std::isalnum(c) != 0) || c == '.' || c == '/' || c == '-' || c == '_';
  });
  if (plain) return std::string(word);
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
  return out + "'";
}

// Any bytes but NUL, exactly, trailing line breaks included.
std::string ScriptQuote(std::string_view value) {
  std::string out = "'";
  for (char c : value) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The shell the session's command runs under. OpenShell's exec passes no
// signal on: the CLI forwards none and ExecSandboxInput carries only start,
// stdin and resize (v0.0.111 crates/openshell-cli/src/run.rs,
// proto/openshell.proto). And it reports a command a signal killed as exit 1
// (crates/openshell-supervisor-process/src/ssh.rs, status.code()
// .unwrap_or(1)). So the command runs as the child of a shell that stays:
// the child sources what was staged (`stage_dir`, "" for nothing), leaves
// its pid where a signal's exec finds it, then becomes the command; the
// shell exits as sh reports the command's end, 128 + the signal for one
// that killed it. The shell's traps keep it alive through a signal meant
// for the command (a terminal's ^C reaches both) and, being traps, are not
// inherited; its own stderr, where it would print "Terminated", is
// /dev/null, while the command's is the session's.
std::string CommandWrapper(const std::string& stage_dir) {
  std::string staged;
  if (!stage_dir.empty()) {
    staged = fmt::format(". {0}/{1} || exit 126; rm -rf {0}; ", stage_dir, kStagedScript);
  }
  return fmt::format(
      "trap : INT TERM HUP QUIT; exec 3>&2 2>/dev/null; "
      "/bin/sh -c 'exec 2>&3 3>&-; {}echo $$ > {}; exec \"$@\"' sh \"$@\"",
      staged, kOpenShellCommandPidFile);
}

// The request's command: the wrapper, then the session's command unless it
// is staged.
void SetCommand(OpenShellExecRequest& request, const std::vector<std::string>& command,
                const std::string& stage_dir, bool staging, bool command_staged) {
  request.command = {"/bin/sh", "-c", CommandWrapper(staging ? stage_dir : ""), "sh"};
  if (!command_staged)
    request.command.insert(request.command.end(), command.begin(), command.end());
}

// Whether the command's words, after the wrapper's four, pass the gateway.
bool CommandFits(const std::vector<std::string>& command) {
  if (command.size() + 4 > kOpenShellMaxExecArgs) return false;
  return std::all_of(command.begin(), command.end(),
                     [](const std::string& word) { return word.size() <= kOpenShellMaxExecArg; });
}

absl::Status CheckUnstageable(const std::string& workdir,
                              const std::map<std::string, std::string>& environment) {
  if (workdir.size() > kOpenShellMaxExecWorkdir) {
    return absl::InvalidArgumentError(fmt::format(
        "the working directory is {} bytes long, and OpenShell's exec takes one of at most {}",
        workdir.size(), kOpenShellMaxExecWorkdir));
  }
  for (const auto& [name, value] : environment) {
    if (!ExecVariableName(name)) {
      return absl::InvalidArgumentError(fmt::format(
          "the environment variable name '{}' is not one OpenShell's exec takes (letters, digits "
          "and _, not first a digit, not starting with OPENSHELL_)",
          name));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string OpenShellStageDir() { return "/tmp/.mojoup-stage-" + internal::RandomHex(); }

std::string OpenShellExecLine(const std::string& workdir,
                              const std::map<std::string, std::string>& environment,
                              const std::vector<std::string>& command) {
  std::string line;
  auto add = [&line](const std::string& word) {
    if (!line.empty()) line += ' ';
    line += word;
  };
  for (const auto& [name, value] : environment) add(name + "=" + GatewayQuote(value));
  for (const std::string& word : command) add(GatewayQuote(word));
  if (!workdir.empty()) line = "cd " + GatewayQuote(workdir) + " && " + line;
  return line;
}

absl::StatusOr<OpenShellExecRequest> PlanOpenShellExec(
    const std::string& workdir, const std::map<std::string, std::string>& environment,
    const std::vector<std::string>& command, const std::string& stage_dir) {
  if (absl::Status checked = CheckUnstageable(workdir, environment); !checked.ok()) return checked;
  OpenShellExecRequest request;
  request.workdir = workdir;
  request.environment = environment;
  std::string script;
  if (HasLineBreak(workdir)) {
    script += "cd -- " + ScriptQuote(workdir) + " || exit 1\n";
    request.workdir.clear();
  }
  auto stage_variable = [&](const std::string& name) {
    script += "export " + name + "=" + ScriptQuote(request.environment[name]) + "\n";
    request.environment.erase(name);
  };
  for (const auto& [name, value] : environment) {
    if (value.size() > kOpenShellMaxExecArg || HasLineBreak(value)) stage_variable(name);
  }
  bool command_staged = !CommandFits(command);
  for (;;) {
    SetCommand(request, command, stage_dir, command_staged || !script.empty(), command_staged);
    if (OpenShellExecLine(request.workdir, request.environment, request.command).size() <=
        kOpenShellMaxExecLine) {
      break;
    }
    if (!command_staged) {
      command_staged = true;
      continue;
    }
    // The largest value left goes; the words left (the wrapper, a workdir
    // of at most 4096 bytes) always fit.
    auto largest = std::max_element(
        request.environment.begin(), request.environment.end(),
        [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
    if (largest == request.environment.end()) break;
    stage_variable(largest->first);
  }
  if (command_staged) {
    script += "set --";
    for (const std::string& word : command) script += " " + ScriptQuote(word);
    script += "\n";
  }
  if (script.size() > kOpenShellMaxStdin) {
    return absl::InvalidArgumentError(fmt::format(
        "the command and its environment need {} bytes staged in the OpenShell sandbox, more "
        "than the {} its exec can carry; pass large data in a file in the repository instead",
        script.size(), kOpenShellMaxStdin));
  }
  request.staged = std::move(script);
  return request;
}

std::vector<std::string> OpenShellStageCommand(const std::string& stage_dir) {
  return {"/bin/sh", "-c",
          fmt::format("umask 077 && mkdir -- \"$1\" && cat > \"$1/{}\"", kStagedScript), "sh",
          stage_dir};
}

}  // namespace mojoup::sandbox

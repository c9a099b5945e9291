// The `openshell` CLI as the openshell runtime drives it: each call's
// command line, and what its output means (the commands are listed in
// mojoup/sandbox/openshell_backend.h). Every call but the session's own
// exec goes through the options' CommandRunner; the exec streams the
// caller's stdio.
//
//   OpenShellCli cli(options);
//   std::optional<probe::SemVer> gateway = cli.GatewayVersion();
//   if (absl::Status made = cli.CreateSandbox(create); !made.ok()) return made;
//   absl::StatusOr<int> exit = cli.Exec(name, workdir, environment, command, stdio);
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mojoup/probe/command_runner.h"
#include "mojoup/probe/semver.h"
#include "mojoup/sandbox/backend.h"
#include "mojoup/sandbox/openshell_backend.h"

namespace mojoup::sandbox {

// The sandbox name of a session: a DNS-1123 label of at most 19 characters,
// "mojoup-" and 12 of the session id (or of its SHA-256).
std::string OpenShellSandboxName(const std::string& session);

// One of `openshell provider list-profiles -o json` (v0.0.111
// crates/openshell-providers/src/profiles.rs ProviderTypeProfile, serialized
// by profiles_to_json): the env_vars of its credentials and its endpoints.
struct OpenShellProviderProfile {
  std::string id;
  std::vector<std::string> variables;
  std::vector<std::string> hosts;
  std::vector<std::uint16_t> ports;  // each endpoint's, 443 when it names none
};

// What `sandbox create` is given.
struct OpenShellCreate {
  std::string name;
  std::string image;        // as the spec names it; qualified for the CLI
  std::string policy_file;  // OpenShell's policy YAML
  std::map<std::string, std::string> labels;
  std::vector<std::string> providers;  // --provider NAME
  std::string driver_config;           // --driver-config-json
};

class OpenShellCli {
 public:
  explicit OpenShellCli(const OpenShellBackendOptions& options);

  const probe::SemVer& version() const { return version_; }

  // What a failed call means, in one sentence that says what OpenShell did
  // not do (`what`: "create the sandbox").
  absl::Status Explain(const std::string& what, const probe::CommandResult& result) const;

  // `sandbox create`: the sandbox with its main process, which outlives
  // every exec. On failure whatever half of it exists is left to the caller.
  absl::Status CreateSandbox(const OpenShellCreate& create);

  // The phase `sandbox get -o json` says, nullopt when it says none.
  std::optional<std::string> SandboxPhase(const std::string& name);

  // `sandbox delete`; a sandbox that is not found counts as gone.
  absl::Status DeleteSandbox(const std::string& name);

  // The sandboxes `sandbox list` gives for these labels.
  absl::StatusOr<std::vector<SandboxInfo>> ListSandboxes(
      const std::map<std::string, std::string>& labels);

  // The gateway's own version, from `status -o json`; nullopt when unknown.
  std::optional<probe::SemVer> GatewayVersion();

  // `provider list-profiles -o json`.
  absl::StatusOr<std::vector<OpenShellProviderProfile>> ProviderProfiles();

  // `provider create` of the profile's type, NAME, holding the credentials,
  // whose values reach the CLI through its environment (never its command
  // line).
  absl::Status CreateProvider(const std::string& name, const std::string& profile,
                              const std::vector<const SandboxCredential*>& credentials);

  // The providers of the sandbox NAME (<NAME>-<profile>), created by this or
  // an earlier process.
  absl::StatusOr<std::vector<std::string>> ProvidersOf(const std::string& sandbox);

  // `provider delete` of the sandbox's providers.
  absl::Status DeleteProviders(const std::string& sandbox, const std::vector<std::string>& names);

  // Sends `signal` to the session's command in the sandbox, from a second
  // exec.
  absl::Status SignalCommand(const std::string& sandbox, int signal);

  // The session's command, by `sandbox exec` on the caller's stdio: its
  // exit status, 128 + the signal that ended the exec. What the gateway
  // would refuse is staged in the sandbox by an exec before it
  // (openshell_exec.h); what cannot be is InvalidArgument.
  absl::StatusOr<int> Exec(const std::string& sandbox, const std::string& workdir,
                           const std::map<std::string, std::string>& environment,
                           const std::vector<std::string>& command, const Stdio& stdio);

  // The gateway's last `lines` lines of the sandbox's own log (`logs NAME -n
  // N --source sandbox`), as the CLI prints them; within `timeout`.
  absl::StatusOr<std::string> SandboxLogs(const std::string& name, int lines,
                                          std::chrono::milliseconds timeout);

  // Adds host:port for every program to the live sandbox's policy and waits
  // for its supervisor to load it (`policy update NAME --add-endpoint
  // HOST:PORT --binary '/**' --wait --timeout SECS`): what the CLI said it
  // did, in its own last line ("Policy version 3 loaded (active version:
  // 3)", "Policy unchanged (version 2, ...)"), or why it did not.
  absl::StatusOr<std::string> AddEndpoint(const std::string& name, const std::string& host,
                                          std::uint16_t port, std::chrono::seconds wait);

  // `sandbox upload NAME LOCAL DEST --no-git-ignore`: LOCAL, a directory,
  // with everything in it (its git directory too), arrives as DEST/<its
  // name>, written by the sandbox's user (v0.0.111 crates/openshell-cli/src/
  // ssh.rs sandbox_sync_up: `mkdir -p DEST && tar xf - -C DEST`).
  absl::Status Upload(const std::string& name, const std::string& local, const std::string& dest,
                      std::chrono::milliseconds timeout);

  // `sandbox download NAME PATH DEST/`: the file PATH, which must be under
  // the sandbox's working directory, written as DEST/<its name>. No file the
  // CLI writes may grow past max_bytes (its RLIMIT_FSIZE, by prlimit(1)):
  // what the sandbox sends is not ours to trust. NotFound when PATH does
  // not exist.
  absl::Status Download(const std::string& name, const std::string& path, const std::string& dest,
                        std::uint64_t max_bytes, std::chrono::milliseconds timeout);

  // A command of ours in the sandbox, `sandbox exec -n NAME --no-tty -- ARGV`
  // from its working directory, without input: what it printed, bounded.
  probe::CommandResult RunIn(const std::string& name, const std::vector<std::string>& argv,
                             std::chrono::milliseconds timeout);

  // The running exec's process id, 0 when none runs.
  pid_t running() const { return running_; }

 private:
  // The command line of one call: the CLI, `-g gateway` when one is named,
  // then `words`.
  std::vector<std::string> Argv(std::initializer_list<std::string> words) const;

  // Writes `script` to `stage_dir` in the sandbox, from an exec's stdin.
  absl::Status Stage(const std::string& sandbox, const std::string& stage_dir,
                     const std::string& script);

  std::string path_;
  std::string gateway_;  // empty: none named
  probe::SemVer version_;
  std::chrono::milliseconds create_timeout_;
  std::chrono::milliseconds call_timeout_;
  std::unique_ptr<probe::CommandRunner> own_runner_;  // when none is lent
  probe::CommandRunner* runner_;
  std::atomic<pid_t> running_{0};
};

}  // namespace mojoup::sandbox

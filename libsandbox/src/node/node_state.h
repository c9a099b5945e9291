// What a mojoup::Node holds, shared by its source files. They depend one
// way: node.cc (the node's operations) and node_run.cc (starting runs) use
// node_inputs.cc (a request's repository, policy, tool and proxy inputs),
// node_image.cc and node_state.cc (the node's seams, runtime and notices);
// none of these uses node.cc or node_run.cc.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "mojoup/sandbox/node.h"

namespace mojoup {

// Where a node says what it did on the side (NodeOptions::notice).
struct Notices {
  std::function<void(std::string_view)> sink;
  void operator()(std::string_view sentence) const;
  void WriteBack(const sandbox::WriteBackReport& report) const;
  void Close(const sandbox::CloseReport& report) const;
};

// A repository's policy read once: its bytes (nullopt: no policy file) and
// the change times of .mojoup/ and policy.json, taken from the descriptors
// the bytes came through.
struct PolicySnapshot {
  std::optional<std::string> text;
  std::map<std::string, std::int64_t> ctimes;
};

// Reads the policy of the repository root `root` without following links
// or blocking. InvalidArgument naming the file when it is a link, a FIFO,
// not a regular file or over 1 MiB.
absl::StatusOr<PolicySnapshot> SnapshotPolicy(const std::string& root);

// What the operator answered session `id` of the node whose state
// directory is `state_dir`, through its control socket (node_ask.cc): its
// live grants and its denials. InvalidArgument, one sentence, when `id` is
// not such a session, is not running or does not ask.
absl::StatusOr<policy::SessionRules> SessionRulesOf(const std::string& state_dir,
                                                    const std::string& id);

struct Node::State {
  NodeOptions options;
  policy::NodeConfig config;
  std::string state_dir;
  std::string supervisor;
  // The runtime, made when first needed; backend_error says why it could not be.
  std::unique_ptr<sandbox::Backend> owned_backend;
  sandbox::Backend* backend = nullptr;
  std::string backend_error;
  std::optional<sandbox::SessionManager> manager;

  Notices notice;
  probe::Report Probe() const;
  std::unique_ptr<sandbox::Backend> MakeBackend(std::string& error) const;
  // The runtime sessions run in: the one NodeOptions::backend hands over,
  // else the one node.sandbox.runtime names, made once. The only place a
  // runtime is chosen.
  absl::StatusOr<sandbox::Backend*> Runtime();
  // The session manager over the runtime; an error when the runtime cannot be had.
  absl::StatusOr<sandbox::SessionManager*> Manager();
  // Reaps, telling of each session cleaned up, notice and error.
  sandbox::ReapReport ReapWith(sandbox::SessionManager& sessions) const;
  // The effective policy for `dir`; InvalidArgument when a policy file is
  // bad. The repository's own comes from `snapshot` when the caller read it.
  absl::StatusOr<policy::EffectivePolicy> PolicyFor(const std::string& dir,
                                                    const PolicySnapshot* snapshot = nullptr) const;
  // The canonical root of the repository holding `dir` (a request's
  // workdir), with `workdir` set to canonical `dir`; a notice when a
  // symbolic link leads there from another repository's path.
  absl::StatusOr<std::string> RepositoryOf(const std::string& dir, std::string& workdir) const;
  // The effective policy for `workdir` in `repo` from one read of the
  // repository's policy, refused when a session may have written it since
  // it was last trusted, unless `accept` (the user says the change is theirs).
  absl::StatusOr<policy::EffectivePolicy> TrustedPolicy(const std::string& repo,
                                                        const std::string& workdir, bool accept);
};

// Bad input is the caller's to fix; anything else from below means "not
// possible here" (FailedPrecondition).
absl::Status NotPossible(const absl::Status& status);

// doctor's host.git check (node_git.cc): how the host's git treats bare
// repositories, asked through `commands`.
probe::Check GitCheck(probe::CommandRunner& commands);

// The canonical directory `dir` (a request's workdir, as `--repo` gives it);
// InvalidArgument naming it when it is not a directory.
absl::StatusOr<std::string> RepositoryDirectory(const std::string& dir);

// The canonical root of the repository holding `dir` (policy::FindRepoRoot).
std::string RepositoryRoot(const std::string& dir, std::error_code& ec);

// An image's agents as people read them: "claude-code 2.1.332, codex 0.171.0".
std::string AgentList(const std::map<std::string, std::string>& agents);

// `tool` names a known agent tool, or is empty: InvalidArgument otherwise.
absl::Status CheckTool(const std::string& tool);

// The request's proxy inputs, checked and put into `options`: the
// credentials (NAME[=HOST,...], values from `getenv`), the --resolve
// pins, --upstream-ca (a readable PEM file of certificates) and --audit (a
// file that can be created). InvalidArgument naming the input otherwise.
absl::Status AddProxyInputs(const policy::NodeConfig& config,
                            const std::vector<std::string>& credentials,
                            const std::vector<std::string>& resolve, const std::string& upstream_ca,
                            const std::string& audit_file, const sandbox::Getenv& getenv,
                            credproxy::ProxyOptions& options);

}  // namespace mojoup

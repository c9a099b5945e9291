// What a request names, checked before anything starts: its repository and
// the policy read there, its tool, and the proxy's inputs.
#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>

#include "fileinfo/file_info.h"
#include "fmt/format.h"
#include "mojoup/internal/file_checks.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/policy/effective_policy.h"
#include "mojoup/policy/tool_profiles.h"
#include "mojoup/sandbox/policy_watch.h"
#include "node/node_state.h"

namespace mojoup {
namespace {

namespace fs = std::filesystem;

// `dir` with every link resolved, or empty.
std::string RealPathOf(const std::string& dir) {
  std::error_code ec;
  fs::path real = fs::canonical(dir, ec);
  return ec ? std::string() : real.string();
}

// The directory the user named reaches another repository than its own
// path says: it is, or lies below, a symbolic link leading there.
bool IsOtherRepository(const std::string& real, const std::string& named, const std::string& repo) {
  if (real.empty()) return false;
  std::error_code ec;
  const fs::path lexical = fs::absolute(named, ec).lexically_normal();
  std::string path = lexical.string();
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return !ec && path != real && !sandbox::IsWithin(path, repo);
}

}  // namespace

absl::StatusOr<std::string> RepositoryDirectory(const std::string& dir) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(dir, ec);
  if (!ec && fs::is_directory(canonical, ec)) return canonical.string();
  return absl::InvalidArgumentError(
      fmt::format("--repo {}: {}; expected a repository's directory", dir,
                  fs::exists(dir, ec) ? "not a directory" : "no such directory"));
}

std::string RepositoryRoot(const std::string& dir, std::error_code& ec) {
  return fs::canonical(policy::FindRepoRoot(dir), ec).string();
}

absl::StatusOr<policy::EffectivePolicy> Node::State::PolicyFor(
    const std::string& dir, const PolicySnapshot* snapshot) const {
  policy::PolicyPaths paths = policy::PolicyPathsFor(dir, config);
  if (snapshot != nullptr) {
    paths.repo_read = true;
    paths.repo_text = snapshot->text;
  }
  auto effective = policy::LoadEffectivePolicy(paths);
  if (!effective.ok()) return absl::InvalidArgumentError(effective.status().message());
  return effective;
}

absl::StatusOr<PolicySnapshot> SnapshotPolicy(const std::string& root) {
  PolicySnapshot snapshot;
  auto dir = internal::OpenDirectory(root);
  if (!dir.ok()) return absl::InvalidArgumentError(std::string(dir.status().message()));
  const std::string mojoup_path = root + "/.mojoup";
  auto mojoup = internal::OpenBeneath(dir->get(), ".mojoup", O_RDONLY | O_DIRECTORY);
  if (absl::IsNotFound(mojoup.status())) return snapshot;
  if (!mojoup.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}; expected a directory holding policy.json", mojoup_path,
                    std::string(mojoup.status().message())));
  }
  struct stat info {};
  if (::fstat(mojoup->get(), &info) == 0)
    snapshot.ctimes[mojoup_path] = sandbox::ChangeTimeOf(info);
  const std::string policy_path = mojoup_path + "/policy.json";
  auto fd = internal::OpenBeneath(mojoup->get(), "policy.json", O_RDONLY);
  if (absl::IsNotFound(fd.status())) return snapshot;
  if (!fd.ok()) {
    return absl::InvalidArgumentError(fmt::format("{}: {}; expected a regular JSON file",
                                                  policy_path, std::string(fd.status().message())));
  }
  auto read = internal::ReadRegular(*fd, policy_path, policy::kMaxPolicyBytes);
  if (!read.ok()) {
    return absl::InvalidArgumentError(fmt::format(
        "{}; expected a regular JSON file of at most 1 MiB", std::string(read.status().message())));
  }
  struct stat after {};
  if (::fstat(fd->get(), &after) != 0 ||
      sandbox::ChangeTimeOf(after) != sandbox::ChangeTimeOf(read->info)) {
    return absl::FailedPreconditionError(
        fmt::format("{} changed while it was read; run again", policy_path));
  }
  snapshot.ctimes[policy_path] = sandbox::ChangeTimeOf(read->info);
  snapshot.text = std::move(read->bytes);
  return snapshot;
}

absl::StatusOr<std::string> Node::State::RepositoryOf(const std::string& dir,
                                                      std::string& workdir) const {
  std::error_code ec;
  const fs::path canonical = fs::canonical(dir, ec);
  if (ec || !fs::is_directory(canonical)) {
    return absl::InvalidArgumentError(fmt::format("--repo {}: not a directory", dir));
  }
  workdir = canonical.string();
  std::string repo = RepositoryRoot(workdir, ec);
  if (ec) {
    return absl::InvalidArgumentError(fmt::format("--repo {}: {}", dir, std::string(ec.message())));
  }
  if (std::string real = RealPathOf(dir); IsOtherRepository(real, dir, repo)) {
    notice(fmt::format("{} is a symbolic link into {}: the session runs on that repository", dir,
                       repo));
  }
  return repo;
}

absl::StatusOr<policy::EffectivePolicy> Node::State::TrustedPolicy(const std::string& repo,
                                                                   const std::string& workdir,
                                                                   bool accept) {
  // One look-up decides: the policy whose change time is checked is the
  // policy that is used, read through the same descriptor, so a session
  // racing this start cannot swap one for the other.
  auto snapshot = SnapshotPolicy(repo);
  if (!snapshot.ok()) return snapshot.status();
  // A policy a sandboxed session may have written is not used unless the user owns it.
  sandbox::PolicyWatch watch(state_dir);
  if (auto change = watch.FindChange(repo, snapshot->ctimes)) {
    if (!accept) {
      return absl::FailedPreconditionError(
          fmt::format("{}, so the agent may have written it and it is not used; if the change is "
                      "yours, run again with --accept-policy",
                      change->Sentence()));
    }
    if (absl::Status accepted = watch.Accept(repo, snapshot->ctimes); !accepted.ok()) {
      return NotPossible(accepted);
    }
    notice(fmt::format("the policy of {} is accepted as yours", repo));
  }
  return PolicyFor(workdir, &*snapshot);
}

absl::Status CheckTool(const std::string& tool) {
  if (tool.empty() || policy::FindToolProfile(tool) != nullptr) return absl::OkStatus();
  return absl::InvalidArgumentError(
      fmt::format("unknown --tool \"{}\"; expected one of {}", tool, policy::ToolNames()));
}

absl::Status AddProxyInputs(const policy::NodeConfig& config,
                            const std::vector<std::string>& credentials,
                            const std::vector<std::string>& resolve, const std::string& upstream_ca,
                            const std::string& audit_file, const sandbox::Getenv& getenv,
                            credproxy::ProxyOptions& options) {
  for (const std::string& item : credentials) {
    if (absl::Status added = sandbox::AddCredential(item, config, getenv, options.vault);
        !added.ok()) {
      return absl::InvalidArgumentError(added.message());
    }
  }
  for (const std::string& item : resolve) {
    if (absl::Status pinned = sandbox::AddPin(item, options.pins); !pinned.ok()) {
      return absl::InvalidArgumentError(pinned.message());
    }
  }
  if (!upstream_ca.empty()) {
    constexpr std::string_view kExpected = "a PEM file of CA certificates";
    std::string problem = internal::ReadableFileProblem("--upstream-ca", upstream_ca, kExpected);
    if (problem.empty()) {
      std::optional<std::string> text = sandbox::ReadWholeFile(upstream_ca);
      if (!text || text->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
        problem = fmt::format("--upstream-ca {}: holds no PEM certificate; expected {}",
                              upstream_ca, kExpected);
      }
    }
    if (!problem.empty()) return absl::InvalidArgumentError(problem);
  }
  if (!audit_file.empty()) {
    if (std::string problem = internal::NewFileProblem("--audit", audit_file); !problem.empty()) {
      return absl::InvalidArgumentError(problem);
    }
  }
  options.upstream_ca = upstream_ca;
  options.audit_file = audit_file;
  return absl::OkStatus();
}

}  // namespace mojoup

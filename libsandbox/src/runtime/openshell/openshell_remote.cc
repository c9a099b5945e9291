#include "runtime/openshell/openshell_remote.h"

#include <cstdio>

#include "fmt/format.h"
#include "mojoup/internal/safe_file.h"
#include "remote/repo_return.h"

namespace mojoup::sandbox {
namespace {

// How long each step may take: a copy of a large repository over a slow
// link is minutes, a check is seconds.
constexpr std::chrono::minutes kCopyTimeout{20};
constexpr std::chrono::seconds kCheckTimeout{60};

// Where the return command leaves its files, under the sandbox's working
// directory (the only place `sandbox download` takes from).
constexpr std::string_view kReturnDir = ".mojoup-return";

std::string Parent(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::string Base(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// What the sandbox printed, for a sentence: its own text, so bounded.
std::string Trimmed(std::string text) {
  constexpr std::size_t kSaid = 300;
  if (text.size() > kSaid) text = text.substr(0, kSaid) + " ...";
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

// The check, run in the sandbox as the session's user: its working
// directory first (where files come back from), then whether the
// repository is there and writable, then its work tree as WorkTreeId reads
// it on the host (WorkTreeIdCommand: the same git commands).
std::vector<std::string> CheckCommand(const std::string& repo) {
  const std::vector<std::string> tree = WorkTreeIdCommand(repo);
  return {"/bin/sh",
          "-c",
          "printf 'workspace=%s\\n' \"$(pwd -P)\"; cd -- \"$1\" 2>/dev/null || { echo missing; "
          "exit 0; }; { [ -w . ] && [ -w \"$(git rev-parse --git-dir)\" ]; } || { echo read-only; "
          "exit 0; }; id=$(/bin/sh -c \"$2\" sh \"$1\") && printf 'tree=%s\\n' \"$id\"",
          "sh",
          repo,
          tree.at(2)};
}

// The staged home goes in at the home's own path: upload names a directory
// by its own name, so for the copy the staging is moved, for a moment, to
// a directory of that name, and back.
absl::Status SendHome(OpenShellCli& cli, const std::string& name, const SandboxSpec& spec) {
  std::string staged;
  for (const BindMount& mount : spec.mounts) {
    if (mount.target == spec.home) staged = mount.source;
  }
  if (staged.empty() || Base(spec.home).empty()) return absl::OkStatus();
  const std::string holder = spec.session_dir + "/home-upload";
  if (absl::Status made = internal::MakePrivateDir(holder, "the session's home copy"); !made.ok()) {
    return made;
  }
  const std::string named = holder + "/" + Base(spec.home);
  if (std::rename(staged.c_str(), named.c_str()) != 0) {
    return absl::InternalError(fmt::format("cannot move {} to {} to copy it", staged, named));
  }
  absl::Status sent = cli.Upload(name, named, Parent(spec.home), kCopyTimeout);
  if (std::rename(named.c_str(), staged.c_str()) != 0) {
    return absl::InternalError(fmt::format("cannot move {} back to {}", named, staged));
  }
  ::rmdir(holder.c_str());
  return sent;
}

}  // namespace

std::string GatewayWords(const std::string& gateway) {
  return gateway.empty() ? "the OpenShell gateway" : "the OpenShell gateway " + gateway;
}

absl::StatusOr<RemoteCopy> SendRepository(OpenShellCli& cli, const std::string& name,
                                          const SandboxSpec& spec, const std::string& gateway) {
  RemoteCopy copy;
  copy.session = spec.session;
  copy.repo = spec.repo;
  copy.download_dir = spec.session_dir + "/return";
  copy.keep_dir = spec.returns_dir;
  auto baseline = WorkTreeId(spec.repo);
  if (!baseline.ok()) {
    return absl::FailedPreconditionError(fmt::format(
        "a session on {} works on a copy of the repository that comes back through git, and {} "
        "is not a git work tree git can read ({})",
        GatewayWords(gateway), spec.repo, std::string(baseline.status().message())));
  }
  copy.baseline = *baseline;
  if (absl::Status sent = SendHome(cli, name, spec); !sent.ok()) return sent;
  if (absl::Status sent = cli.Upload(name, spec.repo, Parent(spec.repo), kCopyTimeout);
      !sent.ok()) {
    return absl::FailedPreconditionError(fmt::format(
        "the repository could not be copied into the sandbox {} on {}: {}; the image or a volume "
        "must let the session's user write {} (docs/openshell.md, \"Remote gateways\")",
        name, GatewayWords(gateway), std::string(sent.message()), Parent(spec.repo)));
  }
  probe::CommandResult checked = cli.RunIn(name, CheckCommand(spec.repo), kCheckTimeout);
  std::string tree;
  for (std::string_view rest = checked.out; !rest.empty();) {
    const std::size_t end = std::min(rest.find('\n'), rest.size());
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(std::min(end + 1, rest.size()));
    if (line.substr(0, 10) == "workspace=") copy.workspace = std::string(line.substr(10));
    if (line.substr(0, 5) == "tree=") tree = std::string(line.substr(5));
    if (line == "missing" || line == "read-only") tree = std::string(line);
  }
  if (!checked.Succeeded() || copy.workspace.empty() || copy.workspace.front() != '/' ||
      tree != copy.baseline) {
    const std::string what =
        tree == "missing"      ? "is not there"
        : tree == "read-only"  ? "is there but not writable by the session's user"
        : !checked.Succeeded() ? fmt::format("could not be checked ({})", Trimmed(checked.err))
                               : "is not as it was sent";
    return absl::FailedPreconditionError(fmt::format(
        "the repository {} {} in the sandbox {} on {}; the image or a volume must let the "
        "session's user write {} (docs/openshell.md, \"Remote gateways\")",
        spec.repo, what, name, GatewayWords(gateway), Parent(spec.repo)));
  }
  return copy;
}

absl::StatusOr<std::string> BringBackRepository(OpenShellCli& cli, const std::string& name,
                                                const RemoteCopy& copy,
                                                const std::string& gateway) {
  const std::string out = copy.workspace + "/" + std::string(kReturnDir);
  probe::CommandResult made =
      cli.RunIn(name, ReturnCommand(copy.repo, out, copy.baseline), kCopyTimeout);
  if (!made.Succeeded()) {
    return absl::UnavailableError(fmt::format(
        "the session's work could not be packed in the sandbox {} on {} ({})", name,
        GatewayWords(gateway), Trimmed(made.err).empty() ? "it said nothing" : Trimmed(made.err)));
  }
  if (absl::Status fresh = internal::MakePrivateDir(copy.download_dir, "the session's return");
      !fresh.ok()) {
    return fresh;
  }
  ReturnRequest request;
  request.repo = copy.repo;
  request.session = copy.session;
  request.baseline = copy.baseline;
  request.keep_dir = copy.keep_dir;
  struct File {
    std::string_view name;
    std::string* into;
    std::uint64_t max;
  };
  for (File file : {File{kReturnBundleName, &request.bundle, request.max_bundle_bytes},
                    File{kReturnPatchName, &request.patch, request.max_patch_bytes}}) {
    absl::Status got = cli.Download(name, out + "/" + std::string(file.name), copy.download_dir,
                                    file.max, kCopyTimeout);
    if (absl::IsNotFound(got)) continue;
    if (!got.ok()) return got;
    *file.into = copy.download_dir + "/" + std::string(file.name);
  }
  // A refusal is an answer, not a failure: it says what was refused and
  // where the files are kept, and the sandbox can go.
  auto outcome = ImportReturn(request);
  if (!outcome.ok()) return std::string(outcome.status().message());
  return outcome->summary;
}

}  // namespace mojoup::sandbox

#include "remote/repo_return.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "fmt/format.h"
#include "mojoup/internal/fd.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/internal/session_id.h"
#include "mojoup/internal/spawn.h"
#include "remote/return_patch.h"

namespace mojoup::sandbox {
namespace repo_return {
namespace {

// git's quick questions, and the calls that read a whole tree or bundle.
constexpr std::chrono::seconds kQuickGit{60};
constexpr std::chrono::minutes kLongGit{20};
// `git bundle list-heads` of this many refs is some MiB; more is refused.
constexpr std::size_t kMaxRefs = 100000;
constexpr std::size_t kMaxListBytes = 32u << 20;
// Where a child sees the bundle: open once, checked, and never reopened by
// a name someone could swap.
constexpr char kBundleFd[] = "/dev/fd/3";

// Runs in the sandbox as `sh -c kScript sh REPO OUT`: POSIX sh and git.
// The bundle holds branches, tags and HEAD: what the host takes. The rest
// of `--all` (remote-tracking refs the upload brought, a stash, notes)
// would have the whole bundle refused.
// git runs without hooks or fsmonitor whatever the repository's config
// says, and writes its diff in the one form the host parses (prefixes,
// quoting, no renames, no external diff or textconv).
constexpr char kScript[] = R"sh(set -u
umask 077
unset GIT_DIR GIT_WORK_TREE GIT_COMMON_DIR GIT_INDEX_FILE GIT_OBJECT_DIRECTORY \
  GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_CONFIG GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT \
  GIT_NAMESPACE GIT_EXTERNAL_DIFF GIT_DIFF_OPTS GIT_PAGER GIT_PREFIX
fail() { printf 'mojoup-return: %s\n' "$1" >&2; exit 1; }
[ $# -eq 2 ] || [ $# -eq 3 ] || fail "expected the repository, the directory to write to and a tree."
repo=$1 out=$2 sent=${3:-}
repo=$(cd -P -- "$repo" 2>/dev/null && pwd -P) || fail "cannot enter the repository $1."
[ -L "$out" ] && fail "$out is a symbolic link, not a directory to write to."
made=
if [ ! -d "$out" ]; then
  mkdir -m 700 -- "$out" 2>/dev/null || fail "cannot create the directory $out."
  made=yes
fi
out=$(cd -P -- "$out" 2>/dev/null && pwd -P) || fail "cannot enter the directory $2."
case "$out/" in
  "$repo"/*)
    [ -n "$made" ] && rmdir -- "$out"
    fail "$out is inside the repository $repo, whose changes it would join." ;;
esac
chmod 700 -- "$out" || fail "cannot make $out private."
cd -- "$repo" || fail "cannot enter the repository $repo."
bundle=$out/mojoup-return.bundle patch=$out/mojoup-return.patch
index=$out/mojoup-return.index errors=$out/mojoup-return.err
rm -f -- "$bundle" "$patch" "$index" "$errors" || fail "cannot clear $out."
g() {
  git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c core.fileMode=true \
    -c core.symlinks=true -c core.quotePath=true -c safe.directory='*' -c gc.auto=0 \
    -c maintenance.auto=false -c diff.relative=false -c diff.noprefix=false \
    -c diff.mnemonicPrefix=false -c diff.suppressBlankEmpty=false "$@" 2>"$errors"
}
run() {
  what=$1
  shift
  if ! g "$@"; then
    said=
    IFS= read -r said <"$errors"
    fail "$what in $repo failed: ${said:-git said nothing}."
  fi
}
base=
if g rev-parse --verify -q HEAD >/dev/null; then
  run "git bundle create" bundle create -q "$bundle" --branches --tags HEAD
  base=HEAD
fi
if [ -n "$sent" ]; then
  case $sent in
    *[!0-9a-f]*) fail "$sent is not a tree id." ;;
  esac
  g cat-file -e "$sent^{tree}" || fail "the tree $sent the repository was sent as is not in $repo."
  base=$sent
fi
GIT_INDEX_FILE=$index
export GIT_INDEX_FILE
if [ -n "$base" ]; then
  run "git read-tree" read-tree "$base"
else
  base=$(g hash-object -t tree /dev/null) || fail "git hash-object in $repo failed."
fi
run "git add" add -A
run "git diff" diff --cached --binary --full-index --no-color \
  --no-ext-diff --no-textconv --no-renames --ignore-submodules=none --src-prefix=a/ \
  --dst-prefix=b/ "$base" -- >"$patch"
rm -f -- "$index" "$errors"
)sh";

// Runs in the sandbox as `sh -c kTreeScript sh REPO`: the work tree's id as
// WorkTreeId computes it on the host (a temporary index seeded from HEAD,
// `git add -A`, `git write-tree`), which also leaves that tree in the
// sandbox's object store for the return's patch to start from.
constexpr char kTreeScript[] = R"sh(set -u
unset GIT_DIR GIT_WORK_TREE GIT_COMMON_DIR GIT_INDEX_FILE GIT_OBJECT_DIRECTORY \
  GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_CONFIG GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT
cd -- "$1" || exit 1
scratch=$(mktemp -d) || exit 1
trap 'rm -rf -- "$scratch"' EXIT
index=$scratch/index
g() {
  GIT_INDEX_FILE=$index git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c gc.auto=0 \
    -c maintenance.auto=false "$@"
}
if g rev-parse --verify -q HEAD >/dev/null; then g read-tree HEAD || exit 1; fi
g add -A && g write-tree
)sh";

struct GitIo {
  std::vector<std::string> environment;  // NAME=VALUE added
  int in = -1;                           // stdin, else /dev/null
  int bundle = -1;                       // the child's fd 3 (kBundleFd)
  std::chrono::seconds timeout = kQuickGit;
  std::size_t cap = internal::kDefaultCaptureCap;
};

// This process's environment without any GIT_* (GIT_DIR, GIT_CONFIG_*,
// GIT_INDEX_FILE would each redirect git), and without the system config.
std::vector<std::string> GitEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> environment;
  for (std::string& entry : internal::CurrentEnvironment()) {
    if (!absl::StartsWith(entry, "GIT_")) environment.push_back(std::move(entry));
  }
  environment.push_back("GIT_CONFIG_NOSYSTEM=1");
  environment.push_back("GIT_TERMINAL_PROMPT=0");
  environment.insert(environment.end(), extra.begin(), extra.end());
  return environment;
}

absl::StatusOr<internal::ChildExit> Git(const std::string& repo,
                                        const std::vector<std::string>& args,
                                        const GitIo& io = {}) {
  internal::SpawnOptions options;
  options.argv = {"git",
                  "-C",
                  repo,
                  "-c",
                  "core.hooksPath=/dev/null",
                  "-c",
                  "core.fsmonitor=false",
                  "-c",
                  "gc.auto=0",
                  "-c",
                  "maintenance.auto=false"};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.environment = GitEnvironment(io.environment);
  options.in = internal::Stream::DescriptorOrNull(io.in);
  options.out = internal::Stream::Capture();
  options.err = internal::Stream::Capture();
  if (io.bundle >= 0) options.keep = {{io.bundle, 3}};
  options.group = internal::SpawnOptions::Group::kGroup;
  auto child = internal::Spawn(options);
  if (!child.ok()) return child.status();
  return child->Wait(std::chrono::steady_clock::now() + io.timeout, io.cap);
}

// What went wrong with a git call, for a sentence: its first line of
// complaint, or how it ended.
std::string GitSaid(const internal::ChildExit& done, std::string_view bundle = "") {
  if (done.timed_out) return "it did not finish in time";
  std::string said(absl::StripAsciiWhitespace(done.err.substr(0, done.err.find('\n'))));
  if (!bundle.empty())
    said =
        absl::StrReplaceAll(said, {{kBundleFd, absl::string_view(bundle.data(), bundle.size())}});
  if (said.empty()) return fmt::format("it exited with {}", done.ShellCode());
  return said;
}

std::string Subcommand(const std::vector<std::string>& args) {
  std::size_t at = 0;
  while (at + 1 < args.size() && args[at] == "-c") at += 2;
  return at < args.size() ? args[at] : "";
}

// Runs git and returns its output, or a sentence naming what failed.
absl::StatusOr<std::string> GitOut(const std::string& repo, const std::vector<std::string>& args,
                                   const GitIo& io = {}) {
  auto done = Git(repo, args, io);
  if (!done.ok()) return done.status();
  if (!done->Succeeded() || done->out_truncated) {
    return absl::FailedPreconditionError(
        fmt::format("git {} in {} failed: {}", Subcommand(args), repo,
                    done->out_truncated ? "it said too much" : GitSaid(*done)));
  }
  return std::move(done->out);
}

// A directory of this user's alone for a temporary index, removed with
// what git left in it when this goes.
class ScratchDir {
 public:
  static absl::StatusOr<ScratchDir> Make() {
    std::error_code error;
    std::filesystem::path base = std::filesystem::temp_directory_path(error);
    if (error) base = "/tmp";
    std::string path = (base / "mojoup-return-XXXXXX").string();
    if (::mkdtemp(path.data()) == nullptr) {
      return absl::InternalError(
          fmt::format("cannot make a directory for a temporary index under {}: {}", base.string(),
                      std::strerror(errno)));
    }
    return ScratchDir(std::move(path));
  }
  ScratchDir(ScratchDir&& other) noexcept : path_(std::exchange(other.path_, "")) {}
  ScratchDir& operator=(ScratchDir&&) = delete;
  ~ScratchDir() {
    if (!path_.empty()) (void)internal::RemoveTree(path_);
  }
  const std::string& path() const { return path_; }

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

bool IsObjectId(std::string_view text) {
  return (text.size() == 40 || text.size() == 64) &&
         text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// A name every git takes for a ref (refs.c check_refname_format): plain
// characters, no component starting with '.' or ending with ".lock", no
// "..", no empty component. Any other name is asked of git.
bool PlainRefName(std::string_view name) {
  if (name.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-") !=
          std::string_view::npos ||
      name.find("..") != std::string_view::npos) {
    return false;
  }
  for (absl::string_view part : absl::StrSplit(absl::string_view(name.data(), name.size()), '/')) {
    if (part.empty() || part.front() == '.' || part.back() == '.' ||
        absl::EndsWith(part, ".lock")) {
      return false;
    }
  }
  return true;
}

// Why the bundle may not carry `name`, or "".
std::string RefProblem(const std::string& repo, const std::string& name) {
  if (name == "HEAD") return "";
  if (!absl::StartsWith(name, "refs/heads/") && !absl::StartsWith(name, "refs/tags/")) {
    return fmt::format("it carries {}, a ref outside refs/heads/ and refs/tags/", name);
  }
  if (PlainRefName(name)) return "";
  auto checked = Git(repo, {"check-ref-format", name});
  if (checked.ok() && checked->Succeeded()) return "";
  return fmt::format("it carries {}, a name git does not take for a ref", name);
}

// The refs of the bundle open at `bundle` (heads and tags, full names),
// once git verified it against `repo` and every ref is one it may carry.
absl::StatusOr<std::vector<std::string>> CheckBundle(const std::string& repo,
                                                     const std::string& path, int bundle) {
  GitIo io;
  io.bundle = bundle;
  io.timeout = kLongGit;
  auto verified = Git(repo, {"bundle", "verify", "-q", kBundleFd}, io);
  if (!verified.ok()) return verified.status();
  if (!verified->Succeeded()) {
    return absl::InvalidArgumentError(
        fmt::format("the bundle {} fails `git bundle verify`: {}", path, GitSaid(*verified, path)));
  }
  io.cap = kMaxListBytes;
  auto listed = Git(repo, {"bundle", "list-heads", kBundleFd}, io);
  if (!listed.ok()) return listed.status();
  if (!listed->Succeeded() || listed->out_truncated) {
    return absl::InvalidArgumentError(
        fmt::format("the bundle {} cannot be listed: {}", path,
                    listed->out_truncated ? "it lists too many refs" : GitSaid(*listed, path)));
  }
  std::vector<std::string> refs;
  std::size_t count = 0;
  for (absl::string_view line : absl::StrSplit(listed->out, '\n', absl::SkipEmpty())) {
    std::vector<std::string> fields = absl::StrSplit(line, absl::MaxSplits(' ', 1));
    if (++count > kMaxRefs) {
      return absl::InvalidArgumentError(
          fmt::format("the bundle {} carries more than {} refs", path, kMaxRefs));
    }
    if (fields.size() != 2 || !IsObjectId(fields[0])) {
      return absl::InvalidArgumentError(
          fmt::format("the bundle {} lists \"{}\", which is no object id and ref", path,
                      std::string(line.substr(0, 80))));
    }
    if (std::string problem = RefProblem(repo, fields[1]); !problem.empty()) {
      return absl::InvalidArgumentError(fmt::format("the bundle {}: {}", path, problem));
    }
    if (fields[1] != "HEAD") refs.push_back(fields[1]);
  }
  return refs;
}

// Where the pack starts in the bundle open at `fd`: after its header, which
// ends at the first empty line (gitformat-bundle(5)).
absl::StatusOr<off_t> PackStart(int fd, const std::string& path) {
  std::string header;
  std::vector<char> buffer(1 << 16);
  while (header.size() < kMaxListBytes) {
    ssize_t n = ::pread(fd, buffer.data(), buffer.size(), static_cast<off_t>(header.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    const std::size_t from = header.empty() ? 0 : header.size() - 1;
    header.append(buffer.data(), static_cast<std::size_t>(n));
    if (std::size_t end = header.find("\n\n", from); end != std::string::npos) {
      return static_cast<off_t>(end + 2);
    }
  }
  return absl::InvalidArgumentError(fmt::format("the bundle {} has no end to its header", path));
}

// fsck of every object the bundle carries, before any reaches the host: git
// 2.39 unbundles without the fetch's fsckObjects (bundle.c unbundle runs
// index-pack without --fsck-objects), so its pack is indexed with --strict
// into a scratch store that borrows the host's objects for what it builds
// on, and thrown away.
absl::Status FsckBundle(const std::string& repo, const std::string& path, int bundle) {
  auto start = PackStart(bundle, path);
  if (!start.ok()) return start.status();
  auto scratch = ScratchDir::Make();
  if (!scratch.ok()) return scratch.status();
  auto format = GitOut(repo, {"rev-parse", "--show-object-format"});
  if (!format.ok()) return format.status();
  auto objects = GitOut(repo, {"rev-parse", "--path-format=absolute", "--git-path", "objects"});
  if (!objects.ok()) return objects.status();
  const std::string store = scratch->path() + "/objects.git";
  if (auto made =
          GitOut(scratch->path(),
                 {"init", "-q", "--bare",
                  "--object-format=" + std::string(absl::StripAsciiWhitespace(*format)), store});
      !made.ok()) {
    return made.status();
  }
  const std::string alternates = store + "/objects/info/alternates";
  internal::Fd file(
      ::open(alternates.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  const std::string line = std::string(absl::StripAsciiWhitespace(*objects)) + "\n";
  if (!file.ok() ||
      ::write(file.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
      file.Close() != 0) {
    return absl::InternalError(
        fmt::format("cannot write {}: {}", alternates, std::strerror(errno)));
  }
  if (::lseek(bundle, *start, SEEK_SET) != *start) {
    return absl::InternalError(fmt::format("cannot seek in the bundle {}", path));
  }
  GitIo io;
  io.in = bundle;
  io.timeout = kLongGit;
  auto indexed = Git(store, {"index-pack", "--stdin", "--strict", "--fix-thin"}, io);
  if (!indexed.ok()) return indexed.status();
  if (!indexed->Succeeded()) {
    return absl::InvalidArgumentError(
        fmt::format("the bundle {} fails git's object checks: {}", path, GitSaid(*indexed)));
  }
  return absl::OkStatus();
}

// Copies the regular file `from` (not followed) to `to`, new, 0600: for
// keeping a file on another filesystem, where it cannot be moved.
absl::Status CopyFile(const std::string& from, const std::string& to) {
  struct stat info {};
  auto in = internal::OpenRegularFile(from, UINT64_MAX, &info);
  if (!in.ok()) return in.status();
  internal::Fd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!out.ok()) return absl::InternalError(fmt::format("{}: {}", to, std::strerror(errno)));
  for (off_t left = info.st_size; left > 0;) {
    ssize_t sent = ::sendfile(out.get(), in->get(), nullptr, static_cast<std::size_t>(left));
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0) return absl::InternalError(fmt::format("{}: {}", to, std::strerror(errno)));
    if (sent == 0) break;
    left -= sent;
  }
  if (out.Close() != 0) return absl::InternalError(fmt::format("{}: {}", to, std::strerror(errno)));
  return absl::OkStatus();
}

// Moves what came back into keep_dir (a link itself, never what it names),
// and says where it is.
absl::StatusOr<std::string> Keep(const ReturnRequest& request) {
  if (request.keep_dir.empty()) {
    return absl::InvalidArgumentError("no directory was named to keep what came back in");
  }
  if (absl::Status made =
          internal::MakePrivateDir(request.keep_dir, "the directory for what came back");
      !made.ok()) {
    return made;
  }
  const std::pair<const std::string*, const char*> files[] = {{&request.bundle, kReturnBundleName},
                                                              {&request.patch, kReturnPatchName}};
  for (const auto& [from, name] : files) {
    const std::string to = request.keep_dir + "/" + name;
    if (from->empty() || *from == to) continue;
    if (::rename(from->c_str(), to.c_str()) == 0 || errno == ENOENT) continue;
    if (errno != EXDEV) {
      return absl::InternalError(
          fmt::format("cannot move {} to {}: {}", *from, to, std::strerror(errno)));
    }
    (void)::unlink(to.c_str());
    if (absl::Status copied = CopyFile(*from, to); !copied.ok()) return copied;
  }
  return request.keep_dir;
}

// The refusal: one sentence, with the files kept where the user can look.
absl::Status Refuse(const ReturnRequest& request, const absl::Status& why) {
  if (why.code() != absl::StatusCode::kInvalidArgument) return why;
  auto kept = Keep(request);
  return absl::InvalidArgumentError(fmt::format(
      "What came back from session {} was refused, so nothing was applied and no ref was "
      "written: {}; {}.",
      request.session, std::string(absl::StripSuffix(why.message(), ".")),
      kept.ok()
          ? fmt::format("the files are kept in {}", *kept)
          : fmt::format("the files could not be kept ({})", std::string(kept.status().message()))));
}

// What ImportReturn checked before it changes anything.
struct Checked {
  internal::Fd bundle;
  std::vector<std::string> refs;  // the bundle's, as it names them
  std::optional<CheckedPatch> patch;
};

absl::StatusOr<Checked> CheckAll(const ReturnRequest& request, int tree) {
  Checked checked;
  if (!request.bundle.empty()) {
    auto bundle = internal::OpenRegularFile(request.bundle, request.max_bundle_bytes);
    if (!bundle.ok()) return absl::InvalidArgumentError(bundle.status().message());
    auto refs = CheckBundle(request.repo, request.bundle, bundle->get());
    if (!refs.ok()) return refs.status();
    if (absl::Status fsck = FsckBundle(request.repo, request.bundle, bundle->get()); !fsck.ok()) {
      return fsck;
    }
    checked.bundle = std::move(*bundle);
    checked.refs = std::move(*refs);
  }
  if (!request.patch.empty()) {
    PatchCaps caps;
    caps.max_bytes = request.max_patch_bytes;
    auto patch = CheckReturnPatch(request.patch, tree, caps);
    if (!patch.ok()) return patch.status();
    checked.patch = std::move(*patch);
  }
  return checked;
}

// Fetches the bundle's branches and tags into the session's namespace, and
// nothing else: no HEAD, no FETCH_HEAD, no other ref, every object checked.
absl::StatusOr<std::vector<std::string>> FetchRefs(const ReturnRequest& request,
                                                   const Checked& checked) {
  const std::string space = "refs/mojoup/" + request.session + "/";
  GitIo io;
  io.bundle = checked.bundle.get();
  io.timeout = kLongGit;
  auto fetched = Git(
      request.repo,
      {"-c", "transfer.fsckObjects=true", "-c", "fetch.fsckObjects=true", "fetch", "--quiet",
       "--no-tags", "--no-write-fetch-head", "--atomic", "--no-prune", "--no-recurse-submodules",
       "--no-auto-gc", "--no-auto-maintenance", "--no-write-commit-graph", kBundleFd,
       "+refs/heads/*:" + space + "heads/*", "+refs/tags/*:" + space + "tags/*"},
      io);
  if (!fetched.ok()) return fetched.status();
  if (!fetched->Succeeded()) {
    return absl::InvalidArgumentError(fmt::format("the bundle {} could not be fetched: {}",
                                                  request.bundle,
                                                  GitSaid(*fetched, request.bundle)));
  }
  std::vector<std::string> written;
  for (const std::string& ref : checked.refs) {
    written.push_back(space + std::string(absl::StripPrefix(ref, "refs/")));
  }
  return written;
}

// Applies the checked patch to the work tree (never the index: it is the
// user's), or says why not.
absl::StatusOr<std::string> Apply(const ReturnRequest& request, const CheckedPatch& patch) {
  auto now = WorkTreeId(request.repo);
  if (!now.ok()) return now.status();
  if (*now != request.baseline) {
    return std::string(fmt::format("{} changed while the session ran", request.repo));
  }
  for (bool check : {true, false}) {
    if (::lseek(patch.copy.get(), 0, SEEK_SET) != 0) {
      return absl::InternalError(fmt::format("cannot rewind the copy of {}", request.patch));
    }
    std::vector<std::string> args = {"apply", "--binary", "--whitespace=nowarn"};
    if (check) args.insert(args.begin() + 1, "--check");
    GitIo io;
    io.in = patch.copy.get();
    io.timeout = kLongGit;
    auto applied = Git(request.repo, args, io);
    if (!applied.ok()) return applied.status();
    if (!applied->Succeeded()) {
      return fmt::format("the changes do not apply to {} (git apply: {})", request.repo,
                         GitSaid(*applied));
    }
  }
  return std::string();
}

}  // namespace
}  // namespace repo_return

absl::StatusOr<std::string> WorkTreeId(const std::string& repo) {
  using repo_return::GitOut;
  auto scratch = repo_return::ScratchDir::Make();
  if (!scratch.ok()) return scratch.status();
  repo_return::GitIo io;
  io.environment = {"GIT_INDEX_FILE=" + scratch->path() + "/index"};
  io.timeout = repo_return::kLongGit;
  auto head = repo_return::Git(repo, {"rev-parse", "--verify", "-q", "HEAD"}, io);
  if (!head.ok()) return head.status();
  if (head->Succeeded()) {
    if (auto read = GitOut(repo, {"read-tree", "HEAD"}, io); !read.ok()) return read.status();
  }
  if (auto added = GitOut(repo, {"add", "-A"}, io); !added.ok()) return added.status();
  auto tree = GitOut(repo, {"write-tree"}, io);
  if (!tree.ok()) return tree.status();
  std::string id(absl::StripAsciiWhitespace(*tree));
  if (!repo_return::IsObjectId(id)) {
    return absl::InternalError(fmt::format("git write-tree in {} gave no tree id", repo));
  }
  return id;
}

std::vector<std::string> ReturnCommand(const std::string& repo, const std::string& out_dir,
                                       const std::string& sent) {
  std::vector<std::string> argv = {"/bin/sh", "-c", repo_return::kScript, "sh", repo, out_dir};
  if (!sent.empty()) argv.push_back(sent);
  return argv;
}

std::vector<std::string> WorkTreeIdCommand(const std::string& repo) {
  return {"/bin/sh", "-c", repo_return::kTreeScript, "sh", repo};
}

absl::StatusOr<ReturnOutcome> ImportReturn(const ReturnRequest& request) {
  if (!internal::IsRandomHex(request.session)) {
    return absl::InvalidArgumentError(fmt::format(
        "\"{}\" is not a session id (16 lowercase hex digits), so nothing was brought back",
        request.session));
  }
  auto tree = internal::OpenDirectory(request.repo);
  if (!tree.ok()) return tree.status();
  auto checked = repo_return::CheckAll(request, tree->get());
  if (!checked.ok()) return repo_return::Refuse(request, checked.status());
  ReturnOutcome outcome;
  if (checked->bundle.ok()) {
    auto refs = repo_return::FetchRefs(request, *checked);
    if (!refs.ok()) return repo_return::Refuse(request, refs.status());
    outcome.refs = std::move(*refs);
  }
  std::string refs_said =
      outcome.refs.empty()
          ? std::string("No commit came back")
          : fmt::format("The session's {} {} under refs/mojoup/{}/", outcome.refs.size(),
                        outcome.refs.size() == 1 ? "ref is" : "refs are", request.session);
  if (!checked->patch || checked->patch->files == 0) {
    outcome.summary = refs_said + ", and no change to the work tree.";
    return outcome;
  }
  const std::size_t files = checked->patch->files;
  auto not_applied = repo_return::Apply(request, *checked->patch);
  if (!not_applied.ok()) return not_applied.status();
  if (not_applied->empty()) {
    outcome.applied = true;
    outcome.summary = fmt::format("{}, and its changes to {} file{} are in the work tree.",
                                  refs_said, files, files == 1 ? "" : "s");
    return outcome;
  }
  auto kept = repo_return::Keep(request);
  if (!kept.ok()) return kept.status();
  outcome.kept = *kept;
  outcome.summary = fmt::format(
      "{}, but {}, so its changes to {} file{} were not applied: they are kept in {}/{} (`git "
      "apply --binary` it when ready).",
      refs_said, *not_applied, files, files == 1 ? "" : "s", outcome.kept, kReturnPatchName);
  return outcome;
}

}  // namespace mojoup::sandbox

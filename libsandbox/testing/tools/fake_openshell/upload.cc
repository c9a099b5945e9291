// `sandbox upload NAME LOCAL [DEST] [--no-git-ignore]` as v0.0.111 does it
// (crates/openshell-cli/src/main.rs SandboxCommands::Upload; run.rs
// sandbox_upload, sandbox_upload_plan, git_repo_root, git_sync_files;
// ssh.rs sandbox_sync_up, sandbox_sync_up_files, ssh_tar_upload,
// write_upload_archive). The archive is the host's GNU tar's where the CLI
// builds its own with the tar crate: the same names, types and modes.

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "transfer.h"

namespace mojoup::fake_openshell {

namespace {

namespace fs = std::filesystem;

// A path without trailing separators and "." components, as Rust's Path
// iterates it.
std::string Trimmed(std::string path) {
  while (path.size() > 1 && (path.back() == '/' || path.ends_with("/."))) {
    path.resize(path.size() - (path.back() == '/' ? 1 : 2));
  }
  return path;
}

// Rust's Path::file_name: the last component, none for "..", "/" or "".
std::string FileName(const std::string& path) {
  const std::string trimmed = Trimmed(path);
  const std::string last = trimmed.substr(trimmed.rfind('/') + 1);
  return last == ".." || last == "." ? std::string() : last;
}

// git with the caller's GIT_* variables scrubbed (run.rs scrub_git_env),
// in `dir`: its stdout, or nothing when it could not run or failed.
std::optional<std::string> Git(const std::vector<std::string>& args, const std::string& dir) {
  internal::SpawnOptions options;
  options.argv = {"git"};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  for (const std::string& entry : internal::CurrentEnvironment()) {
    if (!entry.starts_with("GIT_")) options.environment.push_back(entry);
  }
  options.workdir = dir;
  options.out = internal::Stream::Capture();
  options.err = internal::Stream::Null();
  auto child = internal::Spawn(options);
  if (!child.ok()) return std::nullopt;
  internal::ChildExit done =
      child->Wait(std::chrono::steady_clock::now() + std::chrono::minutes(5), 256u << 20);
  if (!done.Succeeded() || done.out_truncated) return std::nullopt;
  return done.out;
}

struct Plan {
  enum class Kind { kGitAware, kGitFilteredEmpty, kRegular } kind = Kind::kRegular;
  std::string base_dir;            // kGitAware: where the files are
  std::vector<std::string> files;  // relative to base_dir
};

// git_sync_files: the work tree's files at or under `local` that git
// tracks or would track, relative to the directory uploaded. False when
// `local` is in no work tree (or git fails): the upload is then unfiltered.
bool GitSyncFiles(const std::string& local, Plan& plan) {
  std::error_code ec;
  const bool is_dir = fs::is_directory(local, ec);
  // The parent of a bare relative file name is "", where git cannot run.
  const std::string dir = is_dir ? local : fs::path(local).parent_path().string();
  if (dir.empty()) return false;
  auto top = Git({"rev-parse", "--show-toplevel"}, dir);
  if (!top || Trim(*top).empty()) return false;
  const fs::path root = fs::canonical(Trim(*top), ec);
  if (ec) return false;
  const fs::path path = fs::canonical(fs::absolute(local, ec), ec);
  if (ec) return false;
  const fs::path relative = path.lexically_relative(root);
  if (relative.empty() || *relative.begin() == "..") return false;
  const bool is_file = fs::is_regular_file(path, ec);
  plan.base_dir = is_file ? path.parent_path().string() : path.string();
  std::vector<std::string> args = {"ls-files", "-co", "--exclude-standard", "-z"};
  if (relative != ".") args.push_back(relative.string());
  auto listed = Git(args, root.string());
  if (!listed) return false;
  for (std::size_t start = 0; start < listed->size();) {
    std::size_t end = listed->find('\0', start);
    if (end == std::string::npos) end = listed->size();
    const fs::path entry(listed->substr(start, end - start));
    start = end + 1;
    if (entry.empty()) continue;
    fs::path name = entry;
    if (is_file) {
      name = entry.filename();
    } else if (relative != ".") {
      name = entry.lexically_relative(relative);
      if (name.empty() || *name.begin() == "..") return false;  // strip_prefix failed
    }
    if (!name.empty() && name != ".") plan.files.push_back(name.string());
  }
  plan.kind = plan.files.empty() ? Plan::Kind::kGitFilteredEmpty : Plan::Kind::kGitAware;
  return true;
}

// GNU tar's --transform takes a sed BRE and its replacement.
std::string SedEscape(std::string_view text, std::string_view special) {
  std::string out;
  for (char c : text) {
    if (special.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// The host's tar over `names` in `dir` (recursing into directories,
// keeping symlinks as links, hard links as files: the tar crate's way),
// `from` renamed `to` when they differ ("" `from`: a prefix `to/` on every
// name). The list goes through a file so that tar never waits on us.
std::optional<HostTar> ArchiveOf(const std::string& dir, const std::vector<std::string>& names,
                                 const std::string& from, const std::string& to,
                                 std::string& list_path, std::string& error) {
  char path[] = "/tmp/fake-openshell-upload-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) {
    error = "cannot make a file list in /tmp";
    return std::nullopt;
  }
  list_path = path;
  std::string list;
  for (const std::string& name : names) list += name + '\0';
  WriteAllWaiting(fd, list.data(), list.size());
  ::close(fd);
  std::vector<std::string> args = {"-c", "-f", "-", "--hard-dereference", "-C", dir};
  if (from.empty() && !to.empty()) {
    args.push_back(fmt::format("--transform=s\x01^\x01{}/\x01S", SedEscape(to, "\\&\n")));
  } else if (from != to) {
    args.push_back(fmt::format("--transform=s\x01^{}$\x01{}\x01S", SedEscape(from, "\\.*[]^$"),
                               SedEscape(to, "\\&\n")));
  }
  args.insert(args.end(), {"--null", "--verbatim-files-from", "-T", list_path});
  return StartHostTar(args, false, error);
}

// What goes where: the sandbox directory tar extracts into ("" for the
// session's working directory) and the host tar that makes the archive.
std::optional<HostTar> UploadArchive(const Plan& plan, const std::string& local,
                                     const std::optional<std::string>& dest, std::string& dest_dir,
                                     std::string& list_path, std::string& error) {
  std::error_code ec;
  dest_dir = dest.value_or("");
  if (plan.kind == Plan::Kind::kGitAware) {
    // file_list_archive_prefix: a directory's name wraps its files.
    const std::string prefix = fs::is_directory(local, ec) ? FileName(local) : "";
    std::vector<std::string> present;
    for (const std::string& file : plan.files) {
      struct stat info {};
      if (::lstat((plan.base_dir + "/" + file).c_str(), &info) == 0) present.push_back(file);
    }
    return ArchiveOf(plan.base_dir, present, "", prefix, list_path, error);
  }
  // sandbox_sync_up: a file (or link) to a destination without a trailing
  // '/' is written under that name, unless its parent would be "/".
  const fs::file_status status = fs::symlink_status(local, ec);
  const bool file_like = fs::is_regular_file(status) || fs::is_symlink(status);
  std::string tar_name = FileName(local);
  if (dest && file_like && !dest->ends_with('/')) {
    const std::size_t slash = dest->rfind('/');
    const std::string parent =
        slash == std::string::npos ? "." : (slash == 0 ? "/" : dest->substr(0, slash));
    if (parent != "/") {
      dest_dir = parent;
      tar_name = dest->substr(slash == std::string::npos ? 0 : slash + 1);
    }
  }
  const std::string base = FileName(local);
  if (base.empty()) return ArchiveOf(local, {"."}, ".", ".", list_path, error);
  std::string dir = fs::path(Trimmed(local)).parent_path().string();
  if (dir.empty()) dir = ".";
  return ArchiveOf(dir, {base}, base, tar_name.empty() ? "." : tar_name, list_path, error);
}

}  // namespace

int SandboxUpload(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{.usage = "openshell sandbox upload [OPTIONS] <NAME> <LOCAL_PATH> [DEST]",
                        .flags = {{.name = "no-git-ignore"}},
                        .max_positionals = 3};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  if (auto code = TransferPositionals(args, grammar.usage, "LOCAL_PATH")) return *code;
  const std::string& local = args.positionals[1];
  std::optional<std::string> dest;
  if (args.positionals.size() == 3) dest = args.positionals[2];
  // sandbox_upload_plan: the local path first; a symlink is never filtered.
  struct stat info {};
  if (::lstat(local.c_str(), &info) != 0) {
    if (errno == ENOENT) return PrintError(fmt::format("local path does not exist: {}", local));
    return PrintError(fmt::format("failed to inspect local upload path: {}", local));
  }
  Plan plan;
  if (args.Has("no-git-ignore") || S_ISLNK(info.st_mode) || !GitSyncFiles(local, plan)) {
    plan = Plan{};
  }
  std::fputs(fmt::format("Uploading {} -> sandbox:{}\n", local, dest.value_or("~")).c_str(),
             stderr);
  if (plan.kind == Plan::Kind::kGitFilteredEmpty) {
    std::fputs(fmt::format(
                   "⚠ .gitignore filtering excluded all files in {}; uploading unfiltered\n", local)
                   .c_str(),
               stderr);
  }
  Session session;
  if (auto code = OpenSession(ctx, args.positionals[0], session)) return *code;
  std::string dest_dir, list_path, error;
  auto tar = UploadArchive(plan, local, dest, dest_dir, list_path, error);
  if (!tar) return PrintError(fmt::format("failed to build the upload archive: {}", error));
  // ssh_tar_upload: run as the session's user, in its working directory.
  const std::string quoted = ShellQuote(dest_dir.empty() ? "." : dest_dir);
  auto code = RunRemote(session, fmt::format("mkdir -p {0} && cat | tar xf - -C {0}", quoted),
                        tar->pipe.get(), {}, error);
  const std::string local_problem = FinishHostTar(*tar);
  ::unlink(list_path.c_str());
  if (!code) return PrintError(GrpcError("Unavailable", error));
  if (*code != 0) {
    return PrintError(fmt::format("ssh tar extract exited with status exit status: {}", *code));
  }
  if (!local_problem.empty()) {
    return PrintError(fmt::format("failed to build the upload archive: {}", local_problem));
  }
  std::fputs("✓ Upload complete\n", stderr);
  return 0;
}

}  // namespace mojoup::fake_openshell

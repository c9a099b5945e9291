// `sandbox download NAME SANDBOX_PATH [DEST]` as v0.0.111 does it
// (crates/openshell-cli/src/main.rs SandboxCommands::Download; ssh.rs
// sandbox_sync_down, resolve_sandbox_source_path,
// validate_sandbox_source_path, validate_discovered_workspace_root,
// probe_sandbox_source_kind, sandbox_sync_down_file,
// sandbox_sync_down_directory, place_downloaded_file). The archive is
// unpacked by the host's GNU tar where the CLI uses the tar crate (which
// also refuses entries that would land outside the destination: not
// modelled); modes lose set-id bits either way.

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "transfer.h"

namespace mojoup::fake_openshell {

namespace {

namespace fs = std::filesystem;

// lexical_clean_absolute_path: nothing for a relative path.
std::optional<std::string> LexicalClean(const std::string& path) {
  if (!path.starts_with('/')) return std::nullopt;
  std::vector<std::string> stack;
  for (std::size_t start = 1; start <= path.size();) {
    std::size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    const std::string part = path.substr(start, slash - start);
    if (part == "..") {
      if (!stack.empty()) stack.pop_back();
    } else if (!part.empty() && part != ".") {
      stack.push_back(part);
    }
    start = slash + 1;
  }
  std::string out;
  for (const std::string& part : stack) out += "/" + part;
  return out.empty() ? "/" : out;
}

// resolve_sandbox_source_path: the source with every link resolved inside
// the sandbox, refused when it leaves the workspace. Nothing when refused
// (`code` set).
std::optional<std::string> ResolveSource(Session& session, const std::string& path, int& code) {
  std::string error;
  int status = 0;
  auto output =
      RunRemoteCapture(session, "pwd -P && realpath -e -- " + ShellQuote(path), status, error);
  if (!output) {
    code = PrintError(GrpcError("Unavailable", error));
    return std::nullopt;
  }
  if (status != 0) {
    code = PrintError(fmt::format("failed to resolve sandbox source path '{}'", path),
                      {fmt::format("ssh probe exited with status exit status: {}", status)});
    return std::nullopt;
  }
  std::string text = *output;
  if (text.ends_with('\n')) text.pop_back();
  if (text.ends_with('\r')) text.pop_back();
  const std::size_t newline = text.find('\n');
  const std::string root = text.substr(0, newline);
  const std::string resolved = newline == std::string::npos ? "" : text.substr(newline + 1);
  std::string refusal;
  auto cleaned_root = LexicalClean(root);
  if (newline == std::string::npos || resolved.find('\n') != std::string::npos) {
    refusal = fmt::format("unexpected response while resolving sandbox source path '{}'", path);
  } else if (!cleaned_root) {
    refusal = "remote workspace must be an absolute path";
  } else if (*cleaned_root == "/") {
    refusal = "remote workspace resolved to the container root";
  } else if (*cleaned_root != root) {
    refusal = fmt::format("remote workspace '{}' is not a canonical absolute path", root);
  } else if (path.empty()) {
    refusal = "sandbox source path is empty";
  } else if (auto candidate = LexicalClean(path.starts_with('/') ? path : root + "/" + path);
             !candidate) {
    refusal = fmt::format("sandbox source path is invalid (got '{}')", path);
  } else if (!PathIsOrUnder(*candidate, root)) {
    refusal =
        fmt::format("sandbox source path '{}' is outside the sandbox workspace ({})", path, root);
  } else if (resolved.empty()) {
    refusal = fmt::format("sandbox source path '{}' does not exist", path);
  } else if (!PathIsOrUnder(resolved, root)) {
    refusal =
        fmt::format("sandbox source path '{}' resolves to '{}', outside the sandbox workspace ({})",
                    path, resolved, root);
  }
  if (!refusal.empty()) {
    code = PrintError(refusal);
    return std::nullopt;
  }
  return resolved;
}

// stream_sandbox_tar: the sandbox's `tar_command` unpacked into `into`.
std::optional<int> StreamSandboxTar(Session& session, const std::string& tar_command,
                                    const std::string& into) {
  std::string error;
  auto tar = StartHostTar({"-x", "-f", "-", "-C", into, "--no-same-owner", "--no-same-permissions"},
                          true, error);
  if (!tar) return PrintError("failed to extract tar archive from sandbox", {error});
  const int pipe = tar->pipe.get();
  auto code = RunRemote(
      session, tar_command, -1,
      [pipe](const char* data, std::size_t size) { WriteAllWaiting(pipe, data, size); }, error);
  const std::string problem = FinishHostTar(*tar);
  if (!code) return PrintError(GrpcError("Unavailable", error));
  if (!problem.empty()) return PrintError("failed to extract tar archive from sandbox", {problem});
  if (*code != 0) {
    return PrintError(fmt::format("ssh tar create exited with status exit status: {}", *code));
  }
  return std::nullopt;
}

std::optional<int> CreateDirectories(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir.empty() ? fs::path(".") : dir, ec);
  if (!ec) return std::nullopt;
  return PrintError(fmt::format("failed to create local destination directory '{}'", dir.string()),
                    {fmt::format("{} (os error {})", std::strerror(ec.value()), ec.value())});
}

// sandbox_sync_down_file: `cp`'s rules for the destination, through a
// staging directory beside it.
std::optional<int> DownloadFile(Session& session, const std::string& source,
                                const std::string& dest) {
  const std::size_t slash = source.rfind('/');
  const std::string parent = slash == 0 ? "/" : source.substr(0, slash);
  const std::string basename = source.substr(slash + 1);
  struct stat info {};
  const bool dest_is_dir = ::lstat(dest.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
  const fs::path final_path =
      dest.ends_with('/') || dest_is_dir ? fs::path(dest) / basename : fs::path(dest);
  const fs::path staging_parent = final_path.parent_path();
  if (auto code = CreateDirectories(staging_parent)) return *code;
  std::string staging = (staging_parent.empty() ? fs::path(".") : staging_parent) / ".tmpXXXXXX";
  if (::mkdtemp(staging.data()) == nullptr) {
    return PrintError("failed to create download staging directory",
                      {fmt::format("{} (os error {})", std::strerror(errno), errno)});
  }
  std::optional<int> code = StreamSandboxTar(
      session, fmt::format("tar cf - -C {} -- {}", ShellQuote(parent), ShellQuote(basename)),
      staging);
  if (!code) {
    const std::string placing =
        fmt::format("failed to place downloaded file at '{}'", final_path.string());
    const std::string staged = staging + "/" + basename;
    if (::lstat(staged.c_str(), &info) != 0) {
      code = PrintError(placing, {"downloaded archive did not contain the expected entry"});
    } else if (!S_ISREG(info.st_mode)) {
      code = PrintError(placing,
                        {fmt::format("downloaded entry '{}' is not a regular file", basename)});
    } else if (struct stat existing{};
               ::lstat(final_path.c_str(), &existing) == 0 && S_ISDIR(existing.st_mode)) {
      code =
          PrintError(placing, {fmt::format("cannot overwrite directory '{}' with downloaded file",
                                           final_path.string())});
    } else if (::rename(staged.c_str(), final_path.c_str()) != 0) {
      code = PrintError(placing, {fmt::format("failed to rename into '{}'", final_path.string()),
                                  fmt::format("{} (os error {})", std::strerror(errno), errno)});
    }
  }
  std::error_code ec;
  fs::remove_all(staging, ec);
  return code;
}

// sandbox_sync_down_directory: the directory's contents into DEST.
std::optional<int> DownloadDirectory(Session& session, const std::string& source,
                                     const std::string& dest) {
  struct stat info {};
  if (::lstat(dest.c_str(), &info) == 0 && !S_ISDIR(info.st_mode)) {
    return PrintError(fmt::format(
        "cannot extract directory '{}' over non-directory destination '{}'", source, dest));
  }
  if (auto code = CreateDirectories(dest)) return *code;
  return StreamSandboxTar(session, fmt::format("tar cf - -C {} .", ShellQuote(source)), dest);
}

}  // namespace

int SandboxDownload(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{.usage = "openshell sandbox download <NAME> <SANDBOX_PATH> [DEST]",
                        .flags = {},
                        .max_positionals = 3};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  if (auto code = TransferPositionals(args, grammar.usage, "SANDBOX_PATH")) return *code;
  const std::string& path = args.positionals[1];
  const std::string dest = args.positionals.size() == 3 ? args.positionals[2] : ".";
  std::fputs(fmt::format("Downloading sandbox:{} -> {}\n", path, dest).c_str(), stderr);
  Session session;
  if (auto code = OpenSession(ctx, args.positionals[0], session)) return *code;
  int code = 0;
  auto source = ResolveSource(session, path, code);
  if (!source) return code;
  // probe_sandbox_source_kind.
  const std::string quoted = ShellQuote(*source);
  std::string error;
  int status = 0;
  auto kind = RunRemoteCapture(
      session,
      fmt::format("if [ -d {0} ]; then printf dir; elif [ -e {0} ]; then printf file; else "
                  "printf missing; fi",
                  quoted),
      status, error);
  if (!kind) return PrintError(GrpcError("Unavailable", error));
  if (status != 0) {
    return PrintError(fmt::format("ssh probe exited with status exit status: {}", status));
  }
  std::optional<int> failed;
  if (*kind == "dir") {
    failed = DownloadDirectory(session, *source, dest);
  } else if (*kind == "file") {
    failed = DownloadFile(session, *source, dest);
  } else if (*kind == "missing") {
    return PrintError(fmt::format("sandbox source path '{}' does not exist", *source));
  } else {
    return PrintError(
        fmt::format("unexpected probe output for sandbox source path '{}': '{}'", *source, *kind));
  }
  if (failed) return *failed;
  std::fputs("✓ Download complete\n", stderr);
  return 0;
}

}  // namespace mojoup::fake_openshell

#include "mojoup/sandbox/testing/sandbox_image.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <system_error>

#include "mojoup/probe/command_runner.h"

namespace mojoup::sandbox::testing {
namespace {

namespace fs = std::filesystem;
using probe::CommandResult;

constexpr auto kQuick = std::chrono::seconds(30);
// docker import of some 50 MB on a busy CI machine.
constexpr auto kImport = std::chrono::seconds(300);

std::string CommandProblem(const std::string& what, const CommandResult& result) {
  std::string why = what;
  if (result.outcome == CommandResult::Outcome::kNotStarted) {
    why += ": cannot start it (errno " + std::to_string(result.spawn_error) + ")";
  } else if (result.outcome == CommandResult::Outcome::kTimedOut) {
    why += ": it did not finish in time";
  } else if (!result.err.empty()) {
    why += ": " + result.err.substr(0, result.err.find('\n'));
  } else {
    why += ": exit " + std::to_string(result.exit_code);
  }
  return why;
}

// The program's path, looked up on PATH as a shell would; empty when absent.
std::string OnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Copies `from` (following symlinks) to the same path under `root`.
void CopyInto(const fs::path& root, const fs::path& from) {
  fs::path to = root / from.relative_path();
  fs::create_directories(to.parent_path());
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

// Every library ldd names for `program`, and the dynamic loader: the lines
// "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)" and
// "\t/lib64/ld-linux-x86-64.so.2 (0x...)".
std::vector<std::string> Libraries(const std::string& ldd_out) {
  std::vector<std::string> libraries;
  std::istringstream lines(ldd_out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string word; words >> word;) fields.push_back(word);
    if (fields.size() >= 3 && fields[1] == "=>" && fields[2].starts_with("/")) {
      libraries.push_back(fields[2]);
    } else if (!fields.empty() && fields[0].starts_with("/")) {
      libraries.push_back(fields[0]);
    }
  }
  return libraries;
}

void WriteFile(const fs::path& path, const std::string& contents) {
  std::ofstream out(path, std::ios::trunc);
  out << contents;
  if (!out.flush()) throw fs::filesystem_error("cannot write", path, std::error_code());
}

absl::Status Assemble(const fs::path& root, const std::vector<std::string>& programs,
                      probe::CommandRunner& runner) {
  for (const char* dir : {"bin", "usr/bin", "etc/ssl/certs", "tmp", "dev", "proc", "sys", "home"}) {
    fs::create_directories(root / dir);
  }
  fs::permissions(root / "tmp", fs::perms::all | fs::perms::sticky_bit);

  const fs::path busybox = root / "bin/busybox";
  fs::copy_file("/bin/busybox", busybox);
  CommandResult list = runner.Run({busybox.string(), "--list"}, kQuick);
  if (!list.Succeeded()) return absl::InternalError(CommandProblem("busybox --list", list));
  std::istringstream tools(list.out);
  for (std::string tool; std::getline(tools, tool);) {
    if (tool.empty() || fs::exists(fs::symlink_status(root / "bin" / tool))) continue;
    fs::create_symlink("busybox", root / "bin" / tool);
  }

  for (const std::string& program : programs) {
    std::string path = OnPath(program);
    if (path.empty()) {
      return absl::FailedPreconditionError(program + " is not on PATH");
    }
    fs::copy_file(path, root / "usr/bin" / program);
    CommandResult ldd = runner.Run({"ldd", path}, kQuick);
    if (!ldd.Succeeded()) return absl::InternalError(CommandProblem("ldd " + path, ldd));
    for (const std::string& library : Libraries(ldd.out)) CopyInto(root, library);
  }

  fs::copy_file("/etc/ssl/certs/ca-certificates.crt", root / "etc/ssl/certs/ca-certificates.crt");
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  const passwd* pw = ::getpwuid(uid);
  const std::string user = pw ? pw->pw_name : "user";
  WriteFile(root / "etc/passwd", "root:x:0:0:root:/root:/bin/sh\n" + user +
                                     ":x:" + std::to_string(uid) + ":" + std::to_string(gid) +
                                     "::/home/user:/bin/sh\n");
  WriteFile(root / "etc/group", "root:x:0:\n");
  return absl::OkStatus();
}

}  // namespace

absl::Status BuildLocalSandboxImage(const std::string& image,
                                    const std::vector<std::string>& programs) {
  if (OnPath("docker").empty()) return absl::FailedPreconditionError("docker is not on PATH");
  if (::access("/bin/busybox", X_OK) != 0) {
    return absl::FailedPreconditionError("/bin/busybox is missing (Debian: busybox-static)");
  }
  auto runner = probe::MakeSystemCommandRunner();
  CommandResult inspect = runner->Run({"docker", "image", "inspect", image}, kQuick);
  if (inspect.Succeeded()) return absl::OkStatus();
  CommandResult info =
      runner->Run({"docker", "version", "--format", "{{.Server.Version}}"}, kQuick);
  if (!info.Succeeded()) {
    return absl::FailedPreconditionError(CommandProblem("no dockerd answers `docker version`", info));
  }

  std::string dir = (fs::temp_directory_path() / "mojoup-image-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) {
    return absl::InternalError("cannot create a directory under " +
                               fs::temp_directory_path().string());
  }
  const fs::path root = dir;
  absl::Status status;
  try {
    status = Assemble(root, programs, *runner);
  } catch (const fs::filesystem_error& e) {
    status = absl::InternalError(std::string("cannot assemble the image: ") + e.what());
  }
  if (status.ok()) {
    // The tree as it is (owners, modes, links), straight into the daemon.
    CommandResult import =
        runner->Run({"/bin/sh", "-c", "tar -C \"$1\" -cf - . | docker import - \"$2\"", "sh",
                     root.string(), image},
                    kImport);
    if (!import.Succeeded()) status = absl::InternalError(CommandProblem("docker import " + image, import));
  }
  std::error_code ignored;
  fs::remove_all(root, ignored);
  return status;
}

}  // namespace mojoup::sandbox::testing

#include "mojoup/internal/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "fmt/format.h"

namespace mojoup::internal {

absl::Status WriteAll(const Fd& fd, std::string_view bytes, const std::string& name) {
  while (!bytes.empty()) {
    ssize_t put = ::write(fd.get(), bytes.data(), bytes.size());
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) {
      return absl::InternalError(fmt::format("{}: cannot write: {}", name, std::strerror(errno)));
    }
    bytes.remove_prefix(static_cast<std::size_t>(put));
  }
  return absl::OkStatus();
}

absl::Status ReplaceAtomically(const std::string& path, std::string_view bytes, unsigned mode) {
  const std::filesystem::path target(path);
  const std::filesystem::path dir =
      target.parent_path().empty() ? std::filesystem::path(".") : target.parent_path();
  std::string temp = (dir / ("." + target.filename().string() + ".mojoup-XXXXXX")).string();
  Fd fd(::mkostemp(temp.data(), O_CLOEXEC));
  if (!fd.ok()) {
    return absl::PermissionDeniedError(
        fmt::format("{}: cannot create a file beside it: {}", path, std::strerror(errno)));
  }
  struct RemoveUnlessRenamed {
    const std::string& temp;
    bool renamed = false;
    ~RemoveUnlessRenamed() {
      if (!renamed) ::unlink(temp.c_str());
    }
  } guard{temp, false};
  if (absl::Status written = WriteAll(fd, bytes, temp); !written.ok()) return written;
  if (::fchmod(fd.get(), mode) != 0) {
    return absl::InternalError(
        fmt::format("{}: cannot set its mode: {}", temp, std::strerror(errno)));
  }
  if (::fsync(fd.get()) != 0 || fd.Close() != 0) {
    return absl::InternalError(fmt::format("{}: cannot sync: {}", temp, std::strerror(errno)));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(
        fmt::format("{}: cannot rename {} over it: {}", path, temp, std::strerror(errno)));
  }
  guard.renamed = true;
  // The rename is done; syncing the directory only makes it survive a crash.
  if (Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); d.ok()) ::fsync(d.get());
  return absl::OkStatus();
}

}  // namespace mojoup::internal

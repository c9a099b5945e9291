#include "session/audit_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fmt/format.h"
#include "mojoup/internal/fd.h"
#include "mojoup/internal/session_id.h"

namespace mojoup::sandbox {
namespace {

constexpr std::string_view kAuditSuffix = ".jsonl";

struct AuditFileEntry {
  std::string id;
  std::chrono::system_clock::time_point written;
};

// The audit files in the directory open at `dir_fd`, newest first.
std::vector<AuditFileEntry> AuditFiles(int dir_fd) {
  std::vector<AuditFileEntry> files;
  DIR* listing = ::fdopendir(::dup(dir_fd));
  if (listing == nullptr) return files;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string_view name = entry->d_name;
    if (name.size() <= kAuditSuffix.size() ||
        name.substr(name.size() - kAuditSuffix.size()) != kAuditSuffix) {
      continue;
    }
    const std::string id(name.substr(0, name.size() - kAuditSuffix.size()));
    struct stat info {};
    if (!internal::IsRandomHex(id) ||
        ::fstatat(dir_fd, entry->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(info.st_mode)) {
      continue;
    }
    const auto written = std::chrono::system_clock::time_point(
        std::chrono::seconds(info.st_mtim.tv_sec) + std::chrono::nanoseconds(info.st_mtim.tv_nsec));
    files.push_back(
        {id, std::chrono::time_point_cast<std::chrono::system_clock::duration>(written)});
  }
  ::closedir(listing);
  std::sort(files.begin(), files.end(), [](const AuditFileEntry& a, const AuditFileEntry& b) {
    return std::tie(b.written, b.id) < std::tie(a.written, a.id);
  });
  return files;
}

}  // namespace

std::vector<std::string> PruneAudits(const std::string& dir, const AuditPruning& pruning,
                                     std::vector<std::string>& errors) {
  std::vector<std::string> removed;
  internal::Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir_fd.ok()) {
    if (errno != ENOENT) {
      errors.push_back(
          fmt::format("cannot read the audit directory {}: {}", dir, std::strerror(errno)));
    }
    return removed;
  }
  const std::vector<AuditFileEntry> files = AuditFiles(dir_fd.get());
  for (std::size_t i = 0; i < files.size(); ++i) {
    const AuditFileEntry& file = files[i];
    if (pruning.live.count(file.id) > 0) continue;
    if (i < pruning.keep && pruning.now - file.written <= pruning.max_age) continue;
    const std::string name = file.id + std::string(kAuditSuffix);
    if (::unlinkat(dir_fd.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
      errors.push_back(
          fmt::format("cannot remove the old audit {}/{}: {}", dir, name, std::strerror(errno)));
      continue;
    }
    removed.push_back(file.id);
  }
  return removed;
}

}  // namespace mojoup::sandbox

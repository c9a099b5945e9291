#include "audit/audit_end.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "fmt/format.h"
#include "mojoup/credproxy/audit.h"
#include "mojoup/internal/rfc3339.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/sandbox/audit_reader.h"

namespace mojoup::sandbox {
namespace {

absl::Status Refused(const std::string& name, std::string_view why) {
  return absl::FailedPreconditionError(
      fmt::format("{}: {}; no end line is added after it", name, why));
}

// `size` bytes from `offset`, all of them (a file that shrank is an error).
absl::StatusOr<std::string> ReadAt(int fd, std::uint64_t offset, std::size_t size,
                                   const std::string& name) {
  std::string bytes(size, '\0');
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n = ::pread(fd, bytes.data() + got, size - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Refused(name, fmt::format("cannot read it ({})", std::strerror(errno)));
    if (n == 0) return Refused(name, "it shrank while it was read");
    got += static_cast<std::size_t>(n);
  }
  return bytes;
}

// The file checks a reaper makes before it writes: what a reader of the
// audit checks (audit_reader.cc), and a single link, so that no other name
// of the file is written through this one.
absl::Status CheckAuditFile(const struct stat& info, uid_t owner, const std::string& name) {
  if (!S_ISREG(info.st_mode)) {
    return Refused(name, fmt::format("it is {}, not a regular file as an audit is",
                                     internal::KindOfFile(info.st_mode)));
  }
  if (info.st_uid != owner) {
    return Refused(name, fmt::format("it belongs to uid {}, not to uid {}", info.st_uid, owner));
  }
  if (info.st_nlink != 1) {
    return Refused(name, fmt::format("it has {} links, not the one an audit has", info.st_nlink));
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Refused(name, fmt::format("others than its owner can write it (mode {:04o})",
                                     info.st_mode & 07777));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<AuditTail> ReadAuditTail(int fd, std::uint64_t size, const std::string& name) {
  AuditTail tail;
  if (size == 0) return tail;
  // The longest line there may be, its newline, and the newline before it.
  const std::size_t want =
      static_cast<std::size_t>(std::min<std::uint64_t>(size, kMaxAuditLineBytes + 2));
  auto bytes = ReadAt(fd, size - want, want, name);
  if (!bytes.ok()) return bytes.status();
  if (bytes->back() != '\n') return Refused(name, "its last line is cut short (no newline)");
  bytes->pop_back();
  const std::size_t newline = bytes->rfind('\n');
  if (newline == std::string::npos && want < size) {
    return Refused(name, fmt::format("its last line is longer than the {} bytes a line may have",
                                     kMaxAuditLineBytes));
  }
  const std::string_view last =
      std::string_view(*bytes).substr(newline == std::string::npos ? 0 : newline + 1);
  auto line = ParseAuditLine(last);
  if (!line.ok()) {
    return Refused(name, fmt::format("its last line does not pass ({})",
                                     std::string(line.status().message())));
  }
  tail.seq = line->seq;
  tail.session = line->session;
  tail.ended = line->event == "session.end";
  return tail;
}

absl::StatusOr<bool> EndOrphanedAudit(const OrphanAuditEnd& end) {
  const std::string file = end.session + ".jsonl";
  const std::string name = end.dir + "/" + file;
  auto dir = internal::OpenDirectory(end.dir);
  if (!dir.ok()) {
    return absl::IsNotFound(dir.status()) ? dir.status()
                                          : Refused(name, std::string(dir.status().message()));
  }
  // Neither a link nor a FIFO is followed or waited on.
  auto fd = internal::OpenBeneath(dir->get(), file, O_RDWR | O_APPEND | O_NOCTTY);
  if (!fd.ok()) {
    if (absl::IsNotFound(fd.status())) return fd.status();
    return Refused(name, std::string(fd.status().message()));
  }
  struct stat info {};
  if (::fstat(fd->get(), &info) != 0) {
    return Refused(name, fmt::format("cannot look at it ({})", std::strerror(errno)));
  }
  if (absl::Status checked = CheckAuditFile(info, end.owner, name); !checked.ok()) return checked;
  // Two cleanups at once: one writes, the other finds it busy and leaves it.
  if (::flock(fd->get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return false;
    return Refused(name, fmt::format("cannot lock it ({})", std::strerror(errno)));
  }
  // What was appended before the lock was had counts.
  if (::fstat(fd->get(), &info) != 0) {
    return Refused(name, fmt::format("cannot look at it ({})", std::strerror(errno)));
  }
  auto tail = ReadAuditTail(fd->get(), static_cast<std::uint64_t>(info.st_size), name);
  if (!tail.ok()) return tail.status();
  if (tail->ended) return false;
  if (!tail->session.empty() && tail->session != end.session) {
    return Refused(name, fmt::format("its last line is of session \"{}\"", tail->session));
  }
  if (tail->seq == std::numeric_limits<std::uint64_t>::max()) {
    return Refused(name, "its last line's seq is the largest there is");
  }
  credproxy::AuditEvent event;
  event.seq = tail->seq + 1;
  event.time = internal::Rfc3339Millis(end.now);
  event.session = end.session;
  event.event = "session.end";
  event.reason = std::string(kOwnerGone);
  event.detail = end.detail;
  const std::string line = credproxy::AuditLine(event) + "\n";
  const ssize_t written = ::write(fd->get(), line.data(), line.size());
  if (written != static_cast<ssize_t>(line.size())) {
    return absl::InternalError(fmt::format("{}: the end line was not written whole ({})", name,
                                           written < 0 ? std::strerror(errno) : "short write"));
  }
  return true;
}

}  // namespace mojoup::sandbox

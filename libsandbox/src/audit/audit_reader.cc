#include "mojoup/sandbox/audit_reader.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "fmt/format.h"
#include "mojoup/internal/fd.h"
#include "mojoup/internal/safe_file.h"

namespace mojoup::sandbox {
namespace {

// An audit file being read: what was read of it so far, and where the
// next line's checks start.
class AuditFile {
 public:
  AuditFile(std::string path, internal::Fd fd, AuditReadOptions options)
      : path_(std::move(path)), fd_(std::move(fd)), options_(options) {}

  const std::string& path() const { return path_; }

  // Reads what was appended since the last call; the complete lines with
  // seq > since go to `out`.
  absl::Status ReadMore(std::vector<AuditLine>& out);

  // True when the file has no name left (reaped, or replaced).
  bool Removed() const {
    struct stat info {};
    return ::fstat(fd_.get(), &info) == 0 && info.st_nlink == 0;
  }

 private:
  absl::Status TakeLines(std::vector<AuditLine>& out);

  std::string path_;
  internal::Fd fd_;
  AuditReadOptions options_;
  std::string pending_;  // bytes read past the last newline
  std::uint64_t read_ = 0;
  std::uint64_t lines_ = 0;
  std::string session_;
};

absl::Status AuditOpenError(int error, const std::string& path) {
  if (error == ENOENT) return absl::NotFoundError(fmt::format("{}: no such audit", path));
  if (error == ELOOP) {
    return absl::FailedPreconditionError(
        fmt::format("{} is a symbolic link, which an audit must not be", path));
  }
  const std::string message = fmt::format("{}: {}", path, std::strerror(error));
  if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

absl::StatusOr<AuditFile> OpenAudit(const std::string& path, const AuditReadOptions& options) {
  internal::Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.ok()) return AuditOpenError(errno, path);
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return AuditOpenError(errno, path);
  if (!S_ISREG(info.st_mode)) {
    return absl::FailedPreconditionError(fmt::format("{} is {}, not a regular file as an audit is",
                                                     path, internal::KindOfFile(info.st_mode)));
  }
  const uid_t reader = options.reader.value_or(::geteuid());
  if (reader != 0 && info.st_uid != reader) {
    return absl::FailedPreconditionError(
        fmt::format("{} belongs to uid {}, not to uid {} who reads it", path, info.st_uid, reader));
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::FailedPreconditionError(fmt::format(
        "{} can be written by others than its owner (mode {:04o})", path, info.st_mode & 07777));
  }
  return AuditFile(path, std::move(fd), options);
}

absl::Status AuditFile::ReadMore(std::vector<AuditLine>& out) {
  std::array<char, 64 * 1024> buffer{};
  for (;;) {
    // One byte past the bound is asked for, so that a file over it is seen.
    const std::uint64_t room = options_.max_bytes - std::min(read_, options_.max_bytes) + 1;
    const ssize_t n =
        ::read(fd_.get(), buffer.data(), std::min<std::uint64_t>(buffer.size(), room));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n < 0) return AuditOpenError(errno, path_);
    if (n == 0) break;
    read_ += static_cast<std::uint64_t>(n);
    if (read_ > options_.max_bytes) {
      return absl::ResourceExhaustedError(fmt::format(
          "{} is over the {} bytes an audit may have; no more is read", path_, options_.max_bytes));
    }
    pending_.append(buffer.data(), static_cast<std::size_t>(n));
    if (absl::Status taken = TakeLines(out); !taken.ok()) return taken;
  }
  return absl::OkStatus();
}

absl::Status AuditFile::TakeLines(std::vector<AuditLine>& out) {
  std::size_t start = 0;
  for (std::size_t end; (end = pending_.find('\n', start)) != std::string::npos; start = end + 1) {
    ++lines_;
    auto line = ParseAuditLine(std::string_view(pending_).substr(start, end - start), lines_);
    if (line.ok() && lines_ > 1 && line->session != session_) {
      line = absl::InvalidArgumentError(fmt::format(
          "field \"session\" must be \"{}\" as on line 1, not \"{}\"", session_, line->session));
    }
    if (!line.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("{}:{}: {}", path_, lines_, std::string(line.status().message())));
    }
    if (lines_ == 1) session_ = line->session;
    if (line->seq > options_.since) out.push_back(*std::move(line));
  }
  pending_.erase(0, start);
  if (pending_.size() > kMaxAuditLineBytes) {
    return absl::InvalidArgumentError(
        fmt::format("{}:{}: the line is over the {} bytes a line may have", path_, lines_ + 1,
                    kMaxAuditLineBytes));
  }
  return absl::OkStatus();
}

// Hands `lines` over in order; true when the follow is over (the session's
// end line went, or `on_line` said to stop).
bool HandOver(std::vector<AuditLine>& lines, const std::function<bool(const AuditLine&)>& on_line) {
  for (const AuditLine& line : lines) {
    if (!on_line(line) || line.event == "session.end") return true;
  }
  lines.clear();
  return false;
}

// Waits up to `wait` for the watch to report a change; without a watch,
// sleeps that long.
void WaitForChange(const internal::Fd& watch, std::chrono::milliseconds wait) {
  pollfd ready{watch.get(), POLLIN, 0};
  const int n =
      ::poll(watch.ok() ? &ready : nullptr, watch.ok() ? 1 : 0, static_cast<int>(wait.count()));
  if (n > 0) {
    // The events only say "look again": drain them.
    std::array<char, 4096> events{};
    while (::read(watch.get(), events.data(), events.size()) > 0) {
    }
  }
}

}  // namespace

absl::StatusOr<std::vector<AuditLine>> ReadAudit(const std::string& path,
                                                 const AuditReadOptions& options) {
  auto file = OpenAudit(path, options);
  if (!file.ok()) return file.status();
  std::vector<AuditLine> lines;
  if (absl::Status read = file->ReadMore(lines); !read.ok()) return read;
  return lines;
}

absl::Status FollowAudit(const std::string& path, const AuditFollowOptions& options,
                         const std::function<bool(const AuditLine&)>& on_line) {
  auto file = OpenAudit(path, options.read);
  if (!file.ok()) return file.status();
  // The watch is on the name as it is now; a write it misses is still read
  // when the wait's deadline passes.
  internal::Fd watch(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (watch.ok() && ::inotify_add_watch(watch.get(), path.c_str(),
                                        IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF |
                                            IN_MOVE_SELF | IN_DONT_FOLLOW) < 0) {
    watch.Reset();
  }
  std::vector<AuditLine> lines;
  for (bool stopping = false;;) {
    if (absl::Status read = file->ReadMore(lines); !read.ok()) return read;
    if (HandOver(lines, on_line) || stopping) return absl::OkStatus();
    if (file->Removed()) {
      return absl::FailedPreconditionError(
          fmt::format("{} was removed before its session ended", path));
    }
    WaitForChange(watch, options.wait);
    // One more read after the caller says stop: what was written by then is seen.
    stopping = options.stop && options.stop();
  }
}

}  // namespace mojoup::sandbox

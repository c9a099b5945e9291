#include "file_util.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "fmt/format.h"

namespace mojoup::sandbox {

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

int Fd::Close() { return ::close(std::exchange(fd_, -1)); }

absl::StatusOr<Fd> LockFile(const std::string& path, std::chrono::milliseconds timeout) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.ok()) {
    return absl::PermissionDeniedError(
        fmt::format("{}: cannot open the lock file: {}", path, std::strerror(errno)));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      return absl::InternalError(fmt::format("{}: cannot lock: {}", path, std::strerror(errno)));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return absl::DeadlineExceededError(
          fmt::format("{}: another mojoup-node has held this lock for {} ms; try again", path,
                      timeout.count()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return fd;
}

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

std::string Sha256Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("EVP_Digest(SHA-256) failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}

std::optional<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

bool IsWithin(const std::string& path, const std::string& dir) {
  if (dir.empty()) return false;
  if (dir == "/") return !path.empty() && path.front() == '/';
  return path == dir || path.rfind(dir + "/", 0) == 0;
}

std::optional<std::int64_t> ChangeTimeNs(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return std::nullopt;
  return static_cast<std::int64_t>(info.st_ctim.tv_sec) * 1000000000 + info.st_ctim.tv_nsec;
}

std::string Rfc3339(std::chrono::system_clock::time_point when) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace mojoup::sandbox

#include "guard/git_index.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "mojoup/internal/safe_file.h"

namespace mojoup::sandbox {
namespace {

constexpr std::uint32_t kGitlinkType = 0160000;
constexpr std::uint32_t kTypeMask = 0170000;
constexpr std::uint16_t kExtendedFlag = 0x4000;
constexpr std::size_t kNameLengthMask = 0x0fff;
// ctime, mtime (seconds and nanoseconds each), dev, ino, mode, uid, gid, size.
constexpr std::size_t kStatBytes = 40;
// Longer than any path git writes (its own limit is the system's PATH_MAX).
constexpr std::size_t kMaxPathBytes = 64 * 1024;

// The index read front to back through a small buffer, so that memory stays
// bounded whatever the file claims; `end` is where the trailing checksum
// begins.
class Stream {
 public:
  using Pull = std::function<std::size_t(char* into, std::size_t most)>;
  Stream(Pull pull, std::uint64_t end) : pull_(std::move(pull)), end_(end) {}

  std::uint64_t at() const { return at_; }
  bool Left(std::uint64_t n) const { return at_ <= end_ && end_ - at_ >= n; }

  bool Bytes(char* out, std::size_t n) {
    if (!Left(n)) return false;
    for (std::size_t done = 0; done < n;) {
      if (!Fill()) return false;
      const std::size_t take = std::min(n - done, buffer_.size() - head_);
      std::memcpy(out + done, buffer_.data() + head_, take);
      head_ += take;
      done += take;
    }
    at_ += n;
    return true;
  }
  bool Skip(std::uint64_t n) {
    if (!Left(n)) return false;
    for (std::uint64_t done = 0; done < n;) {
      if (!Fill()) return false;
      const std::uint64_t take = std::min<std::uint64_t>(n - done, buffer_.size() - head_);
      head_ += static_cast<std::size_t>(take);
      done += take;
    }
    at_ += n;
    return true;
  }
  bool Byte(unsigned char& c) {
    char byte = 0;
    if (!Bytes(&byte, 1)) return false;
    c = static_cast<unsigned char>(byte);
    return true;
  }
  // Up to a NUL (consumed, not kept).
  bool Path(std::string& out) {
    out.clear();
    for (unsigned char c = 0;;) {
      if (!Byte(c)) return false;
      if (c == 0) return true;
      if (out.size() == kMaxPathBytes) return false;
      out.push_back(static_cast<char>(c));
    }
  }

 private:
  bool Fill() {
    if (head_ < buffer_.size()) return true;
    buffer_.resize(kChunk);
    const std::size_t got = pull_(buffer_.data(), buffer_.size());
    buffer_.resize(got);
    head_ = 0;
    return got > 0;
  }

  static constexpr std::size_t kChunk = 64 * 1024;
  Pull pull_;
  std::uint64_t end_;
  std::uint64_t at_ = 0;
  std::string buffer_;
  std::size_t head_ = 0;
};

std::uint32_t U32(const char* bytes) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < 4; ++i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

std::uint16_t U16(const char* bytes) {
  return static_cast<std::uint16_t>((static_cast<unsigned char>(bytes[0]) << 8) |
                                    static_cast<unsigned char>(bytes[1]));
}

absl::Status Malformed(std::string_view what) {
  return absl::DataLossError(fmt::format("the git index is malformed: {}", what));
}

// Version 4's prefix length: git's varint (varint.c), each continuation byte
// adding one before the shift.
bool ReadVarint(Stream& in, std::uint64_t* value) {
  unsigned char c = 0;
  if (!in.Byte(c)) return false;
  std::uint64_t v = c & 127;
  while ((c & 128) != 0) {
    if (v > (UINT64_MAX >> 8) || !in.Byte(c)) return false;
    v = ((v + 1) << 7) | (c & 127);
  }
  *value = v;
  return true;
}

std::string Hex(std::string_view bytes) {
  std::string hex;
  for (unsigned char c : bytes) hex += fmt::format("{:02x}", c);
  return hex;
}

// Each entry's path and mode, in order.
using Visit = std::function<void(const std::string& path, std::uint32_t mode)>;

absl::Status Parse(Stream& in, std::size_t hash_size, std::string* shared, const Visit& visit) {
  shared->clear();
  char header[12];
  if (!in.Bytes(header, sizeof header) || std::memcmp(header, "DIRC", 4) != 0) {
    return Malformed("no header");
  }
  const std::uint32_t version = U32(header + 4);
  if (version < 2 || version > 4) return Malformed(fmt::format("version {}", version));
  const std::uint32_t count = U32(header + 8);
  std::string previous;
  std::string path;
  char fixed[kStatBytes + 32 + 2];
  const std::size_t fixed_size = kStatBytes + hash_size + 2;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint64_t start = in.at();
    if (!in.Bytes(fixed, fixed_size)) return Malformed("an entry runs past the end");
    const std::uint32_t mode = U32(fixed + 24);
    const std::uint16_t flags = U16(fixed + kStatBytes + hash_size);
    if ((flags & kExtendedFlag) != 0) {
      if (version < 3 || !in.Skip(2)) return Malformed("extended flags");
    }
    if (version == 4) {
      std::uint64_t strip = 0;
      if (!ReadVarint(in, &strip)) return Malformed("a path prefix");
      if (strip > previous.size()) strip = previous.size();
      if (!in.Path(path)) return Malformed("an unterminated path");
      path.insert(0, previous, 0, previous.size() - strip);
      if (path.size() > kMaxPathBytes) return Malformed("a path longer than any git writes");
    } else {
      if (!in.Path(path)) return Malformed("an unterminated path");
      if ((flags & kNameLengthMask) != kNameLengthMask &&
          path.size() != (flags & kNameLengthMask)) {
        return Malformed("a path's length");
      }
      // Entries are padded with 1 to 8 NULs to a multiple of eight bytes.
      const std::uint64_t used = in.at() - start;
      if (!in.Skip(((used + 7) & ~std::uint64_t{7}) - used)) {
        return Malformed("padding runs past the end");
      }
    }
    visit(path, mode);
    std::swap(previous, path);
  }
  // Extensions: a split index names its shared part in "link". Each
  // signature is four letters (gitformat-index(5)); anything else ends them.
  char head[8];
  while (in.Left(8) && in.Bytes(head, sizeof head)) {
    if (!std::all_of(head, head + 4,
                     [](char c) { return std::isalpha(static_cast<unsigned char>(c)); })) {
      return Malformed("an extension's signature");
    }
    const std::uint32_t size = U32(head + 4);
    if (!in.Left(size)) return Malformed("an extension runs past the end");
    if (std::memcmp(head, "link", 4) == 0) {
      if (size < hash_size) return Malformed("the link extension");
      std::string name(hash_size, '\0');
      if (!in.Bytes(name.data(), hash_size) || !in.Skip(size - hash_size)) {
        return Malformed("the link extension");
      }
      *shared = Hex(name);
    } else if (!in.Skip(size)) {
      return Malformed("an extension runs past the end");
    }
  }
  return absl::OkStatus();
}

Visit CollectGitlinks(std::vector<std::string>& gitlinks) {
  return [&gitlinks](const std::string& path, std::uint32_t mode) {
    if ((mode & kTypeMask) == kGitlinkType && !path.empty()) gitlinks.push_back(path);
  };
}

// 32 for a repository whose config says extensions.objectFormat = sha256.
std::size_t HashSize(int git_dir) {
  auto read = internal::ReadBeneath(git_dir, "config", kMaxGitConfigBytes);
  std::string config = read.ok() ? std::move(read->bytes) : std::string();
  std::transform(config.begin(), config.end(), config.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::istringstream lines(config);
  for (std::string line; std::getline(lines, line);) {
    line.erase(std::remove_if(line.begin(), line.end(),
                              [](unsigned char c) { return std::isspace(c) != 0; }),
               line.end());
    if (line == "objectformat=sha256") return 32;
  }
  return 20;
}

// The gitlinks of the index file `name` in the directory open at `git_dir`;
// nullopt when there is no such file.
// The entries of the index file `name` in the directory open at `git_dir`,
// each to `visit`; false when there is no such file.
absl::StatusOr<bool> ParseIndexFile(int git_dir, const std::string& name, std::size_t hash_size,
                                    std::string* shared, const Visit& visit) {
  auto fd = internal::OpenBeneath(git_dir, name, O_RDONLY);
  if (absl::IsNotFound(fd.status())) return false;
  if (!fd.ok()) return fd.status();
  struct stat info {};
  if (::fstat(fd->get(), &info) != 0) return absl::InternalError(std::strerror(errno));
  if (!S_ISREG(info.st_mode)) {
    return absl::FailedPreconditionError(
        fmt::format("its {} is {}, not a regular file", name, internal::KindOfFile(info.st_mode)));
  }
  const auto size = static_cast<std::uint64_t>(info.st_size);
  if (size > kMaxIndexBytes) {
    return absl::FailedPreconditionError(fmt::format(
        "its {} is {} bytes, over the {} that are read of it", name, size, kMaxIndexBytes));
  }
  if (size < hash_size) return Malformed("no header");
  const int from = fd->get();
  Stream in(
      [from](char* into, std::size_t most) -> std::size_t {
        while (true) {
          ssize_t got = ::read(from, into, most);
          if (got < 0 && errno == EINTR) continue;
          return got < 0 ? 0 : static_cast<std::size_t>(got);
        }
      },
      size - hash_size);
  if (absl::Status parsed = Parse(in, hash_size, shared, visit); !parsed.ok()) return parsed;
  return true;
}

// Reads the index of the git directory open at `dir` (and its shared
// part), each entry to `visit`.
absl::Status VisitIndex(int dir, const Visit& visit) {
  const std::size_t hash_size = HashSize(dir);
  std::string shared;
  auto found = ParseIndexFile(dir, "index", hash_size, &shared, visit);
  if (!found.ok()) return found.status();
  if (!*found || shared.empty() || shared.find_first_not_of('0') == std::string::npos) {
    return absl::OkStatus();
  }
  // A split index: the shared part holds the rest of the entries. Both
  // lists together may name more than the index means; for finding what to
  // move aside, more is safe.
  std::string unused;
  auto more = ParseIndexFile(dir, "sharedindex." + shared, hash_size, &unused, visit);
  if (!more.ok()) return more.status();
  if (!*more) return Malformed(fmt::format("the shared index sharedindex.{} is missing", shared));
  return absl::OkStatus();
}

// A path git's verify_path would refuse where it matters here: one that
// leaves the work tree or names a git directory in it.
bool BadIndexPath(std::string_view path) {
  // A split index's entries that replace shared ones have no name.
  if (path.empty()) return false;
  if (path.front() == '/') return true;
  for (absl::string_view piece : absl::StrSplit(absl::string_view(path.data(), path.size()), '/')) {
    if (piece.empty() || piece == "." || piece == "..") return true;
    if (IsGitDirName(std::string_view(piece.data(), piece.size()))) return true;
  }
  return false;
}

}  // namespace

bool IsGitDirName(std::string_view component) {
  // NTFS and HFS+ spell .git more ways; git refuses those too.
  std::string part = absl::AsciiStrToLower(absl::string_view(component.data(), component.size()));
  while (!part.empty() && (part.back() == '.' || part.back() == ' ')) part.pop_back();
  return part == ".git" || part == "git~1";
}

absl::StatusOr<std::vector<std::string>> ParseIndexGitlinks(const std::string& bytes,
                                                            std::size_t hash_size,
                                                            std::string* shared) {
  if (bytes.size() < hash_size) {
    shared->clear();
    return Malformed("no header");
  }
  std::size_t offset = 0;
  Stream in(
      [&bytes, &offset](char* into, std::size_t most) {
        const std::size_t take = std::min(most, bytes.size() - offset);
        std::memcpy(into, bytes.data() + offset, take);
        offset += take;
        return take;
      },
      bytes.size() - hash_size);
  std::vector<std::string> gitlinks;
  if (absl::Status parsed = Parse(in, hash_size, shared, CollectGitlinks(gitlinks)); !parsed.ok()) {
    return parsed;
  }
  return gitlinks;
}

absl::StatusOr<std::vector<std::string>> IndexGitlinks(const std::string& git_dir) {
  auto dir = internal::OpenDirectory(git_dir);
  if (!dir.ok()) return dir.status();
  return IndexGitlinksAt(dir->get());
}

absl::StatusOr<std::vector<std::string>> IndexGitlinksAt(int git_dir) {
  std::vector<std::string> gitlinks;
  if (absl::Status read = VisitIndex(git_dir, CollectGitlinks(gitlinks)); !read.ok()) return read;
  return gitlinks;
}

absl::StatusOr<std::optional<std::string>> IndexPathProblem(int git_dir) {
  std::optional<std::string> bad;
  absl::Status read = VisitIndex(git_dir, [&bad](const std::string& path, std::uint32_t) {
    if (!bad && BadIndexPath(path)) bad = path;
  });
  if (!read.ok()) return read;
  return bad;
}

}  // namespace mojoup::sandbox

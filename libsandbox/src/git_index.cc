#include "git_index.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <sstream>

#include "file_util.h"
#include "fmt/format.h"

namespace mojoup::sandbox {
namespace {

constexpr std::uint32_t kGitlinkType = 0160000;
constexpr std::uint32_t kTypeMask = 0170000;
constexpr std::uint16_t kExtendedFlag = 0x4000;
constexpr std::size_t kNameLengthMask = 0x0fff;
// ctime, mtime (seconds and nanoseconds each), dev, ino, mode, uid, gid, size.
constexpr std::size_t kStatBytes = 40;

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  bool Has(std::size_t n) const { return at_ <= bytes_.size() && bytes_.size() - at_ >= n; }
  std::uint32_t U32(std::size_t offset) const {
    std::uint32_t value = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      value = (value << 8) | static_cast<unsigned char>(bytes_[offset + i]);
    }
    return value;
  }
  std::uint16_t U16(std::size_t offset) const {
    return static_cast<std::uint16_t>((static_cast<unsigned char>(bytes_[offset]) << 8) |
                                      static_cast<unsigned char>(bytes_[offset + 1]));
  }
  std::size_t at_ = 0;
  const std::string& bytes_;
};

absl::Status Malformed(std::string_view what) {
  return absl::DataLossError(fmt::format("the git index is malformed: {}", what));
}

// Version 4's prefix length: git's varint (varint.c), each continuation byte
// adding one before the shift.
bool ReadVarint(Reader& r, std::uint64_t* value) {
  if (!r.Has(1)) return false;
  unsigned char c = static_cast<unsigned char>(r.bytes_[r.at_++]);
  std::uint64_t v = c & 127;
  while ((c & 128) != 0) {
    if (!r.Has(1) || v > (UINT64_MAX >> 8)) return false;
    c = static_cast<unsigned char>(r.bytes_[r.at_++]);
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

// 32 for a repository whose config says extensions.objectFormat = sha256.
std::size_t HashSize(const std::string& git_dir) {
  std::string config = ReadWholeFile(git_dir + "/config").value_or("");
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

}  // namespace

absl::StatusOr<std::vector<std::string>> ParseIndexGitlinks(const std::string& bytes,
                                                            std::size_t hash_size,
                                                            std::string* shared) {
  shared->clear();
  Reader r(bytes);
  if (!r.Has(12 + hash_size) || bytes.compare(0, 4, "DIRC") != 0) return Malformed("no header");
  const std::uint32_t version = r.U32(4);
  if (version < 2 || version > 4) return Malformed(fmt::format("version {}", version));
  const std::uint32_t count = r.U32(8);
  r.at_ = 12;
  const std::size_t end = bytes.size() - hash_size;  // the trailing checksum
  std::vector<std::string> gitlinks;
  std::string previous;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::size_t start = r.at_;
    const std::size_t fixed = kStatBytes + hash_size + 2;
    if (!r.Has(fixed) || start + fixed > end) return Malformed("an entry runs past the end");
    const std::uint32_t mode = r.U32(start + 24);
    const std::uint16_t flags = r.U16(start + kStatBytes + hash_size);
    r.at_ = start + fixed;
    if ((flags & kExtendedFlag) != 0) {
      if (version < 3 || !r.Has(2)) return Malformed("extended flags");
      r.at_ += 2;
    }
    std::string path;
    if (version == 4) {
      std::uint64_t strip = 0;
      if (!ReadVarint(r, &strip)) return Malformed("a path prefix");
      if (strip > previous.size()) strip = previous.size();
      const std::size_t nul = bytes.find('\0', r.at_);
      if (nul == std::string::npos || nul >= end) return Malformed("an unterminated path");
      path = previous.substr(0, previous.size() - strip) + bytes.substr(r.at_, nul - r.at_);
      r.at_ = nul + 1;
    } else {
      const std::size_t nul = bytes.find('\0', r.at_);
      if (nul == std::string::npos || nul >= end) return Malformed("an unterminated path");
      path = bytes.substr(r.at_, nul - r.at_);
      if ((flags & kNameLengthMask) != kNameLengthMask &&
          path.size() != (flags & kNameLengthMask)) {
        return Malformed("a path's length");
      }
      // Entries are padded with 1 to 8 NULs to a multiple of eight bytes.
      const std::size_t used = nul + 1 - start;
      r.at_ = start + ((used + 7) & ~std::size_t{7});
      if (r.at_ > end) return Malformed("padding runs past the end");
    }
    if ((mode & kTypeMask) == kGitlinkType) gitlinks.push_back(path);
    previous = std::move(path);
  }
  // Extensions: a split index names its shared part in "link".
  while (r.Has(8) && r.at_ + 8 <= end) {
    const std::string signature = bytes.substr(r.at_, 4);
    const std::uint32_t size = r.U32(r.at_ + 4);
    r.at_ += 8;
    if (size > end - r.at_) return Malformed("an extension runs past the end");
    if (signature == "link") {
      if (size < hash_size) return Malformed("the link extension");
      *shared = Hex(std::string_view(bytes).substr(r.at_, hash_size));
    }
    r.at_ += size;
  }
  return gitlinks;
}

absl::StatusOr<std::vector<std::string>> IndexGitlinks(const std::string& git_dir) {
  const std::size_t hash_size = HashSize(git_dir);
  const std::optional<std::string> index = ReadWholeFile(git_dir + "/index");
  if (!index) return std::vector<std::string>{};
  std::string shared;
  auto gitlinks = ParseIndexGitlinks(*index, hash_size, &shared);
  if (!gitlinks.ok() || shared.empty() || shared.find_first_not_of('0') == std::string::npos) {
    return gitlinks;
  }
  // A split index: the shared part holds the rest of the entries. Both
  // lists together may name more than the index means; for finding what to
  // move aside, more is safe.
  const std::optional<std::string> shared_bytes = ReadWholeFile(git_dir + "/sharedindex." + shared);
  if (!shared_bytes) {
    return Malformed(fmt::format("the shared index sharedindex.{} is missing", shared));
  }
  std::string unused;
  auto more = ParseIndexGitlinks(*shared_bytes, hash_size, &unused);
  if (!more.ok()) return more.status();
  gitlinks->insert(gitlinks->end(), more->begin(), more->end());
  return gitlinks;
}

}  // namespace mojoup::sandbox

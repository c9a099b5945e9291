#include "fileinfo/file_info.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <sstream>

#include "fmt/format.h"

namespace mojoup::sandbox {

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
  return ChangeTimeOf(info);
}

std::int64_t ChangeTimeOf(const struct stat& info) {
  return static_cast<std::int64_t>(info.st_ctim.tv_sec) * 1000000000 + info.st_ctim.tv_nsec;
}

std::optional<struct stat> LstatAt(int dir, const std::string& name) {
  struct stat info {};
  if (::fstatat(dir, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) return std::nullopt;
  return info;
}

}  // namespace mojoup::sandbox

#include "mojoup/internal/file_checks.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace mojoup::internal {

namespace fs = std::filesystem;

std::string ReadableFileProblem(std::string_view what, const std::string& path,
                                std::string_view expected) {
  const std::string named = std::string(what) + " " + path;
  std::error_code ec;
  if (!fs::exists(path, ec)) return named + ": no such file; expected " + std::string(expected);
  if (!fs::is_regular_file(path, ec)) {
    return named + ": not a file; expected " + std::string(expected);
  }
  if (::access(path.c_str(), R_OK) != 0) {
    return named + ": cannot be read (" + std::strerror(errno) + "); expected " +
           std::string(expected);
  }
  return {};
}

std::string NewFileProblem(std::string_view what, const std::string& path) {
  const std::string named = std::string(what) + " " + path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return named + ": is a directory; expected a file name";
  const fs::path parent = fs::absolute(path, ec).parent_path();
  if (!fs::is_directory(parent, ec)) {
    return named + ": its directory " + parent.string() +
           " does not exist; expected a file in an existing directory";
  }
  return {};
}

}  // namespace mojoup::internal

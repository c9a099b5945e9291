#include "mojoup/sandbox/testing/programs.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#ifndef MOJOUP_TESTING_LIBEXEC_DIR
#error "the build sets MOJOUP_TESTING_LIBEXEC_DIR to the installed libexec/mojoup"
#endif

namespace mojoup::sandbox::testing {

std::string FindTestingProgram(std::string_view name, std::string_view programs_dir) {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  if (const char* dir = std::getenv("MOJOUP_TESTING_PROGRAMS"); dir != nullptr && *dir != '\0') {
    candidates.push_back(fs::path(dir) / name);
  }
  if (!programs_dir.empty()) candidates.push_back(fs::path(programs_dir) / name);
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(self.parent_path() / name);
    candidates.push_back(self.parent_path().parent_path() / "libexec/mojoup" / name);
  }
  candidates.push_back(fs::path(MOJOUP_TESTING_LIBEXEC_DIR) / name);
  for (const fs::path& candidate : candidates) {
    if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate.lexically_normal().string();
    }
  }
  return "";
}

}  // namespace mojoup::sandbox::testing

#include "mojoup/internal/user_dirs.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

namespace mojoup::internal {

std::string UserHome() {
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') return home;
  if (const passwd* entry = getpwuid(geteuid()); entry != nullptr && entry->pw_dir != nullptr) {
    return entry->pw_dir;
  }
  return "/";
}

std::string DefaultStateDir() {
  if (const char* dir = std::getenv("MOJOUP_STATE_DIR"); dir != nullptr && *dir == '/') return dir;
  if (geteuid() == 0) return "/var/lib/mojoup";
  if (const char* state = std::getenv("XDG_STATE_HOME"); state != nullptr && *state == '/') {
    return std::string(state) + "/mojoup";
  }
  return UserHome() + "/.local/state/mojoup";
}

}  // namespace mojoup::internal

// Where things are by default: the user's home, the node's state
// directory, the supervisor beside the program.
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "mojoup/internal/user_dirs.h"
#include "mojoup/sandbox/session.h"
#include "session/record.h"

namespace mojoup::sandbox {
namespace fs = std::filesystem;

std::string UserHome() { return internal::UserHome(); }

std::string DefaultStateDir() { return internal::DefaultStateDir(); }

std::string AuditPath(const std::string& state_dir, const std::string& id) {
  return state_dir + "/audit/" + id + ".jsonl";
}

std::string ControlSocketIn(const std::string& session_dir) {
  return session_dir + "/control.sock";
}

std::string ControlSocketPath(const std::string& state_dir, const std::string& id) {
  return ControlSocketIn(state_dir + "/sessions/" + id);
}

std::string FindSupervisor(const std::string& program) {
  std::error_code ec;
  fs::path self = fs::canonical(program, ec);
  if (ec) {
    // A program replaced while it runs (an upgrade, a reinstall) reads as
    // "PATH (deleted)": its directory is still where its supervisor is.
    constexpr std::string_view kDeleted = " (deleted)";
    const std::string link = fs::read_symlink(program, ec).string();
    if (ec || link.size() <= kDeleted.size() ||
        link.compare(link.size() - kDeleted.size(), kDeleted.size(), kDeleted) != 0) {
      return {};
    }
    self = link.substr(0, link.size() - kDeleted.size());
  }
  for (const fs::path& candidate :
       {self.parent_path() / "mojoup-sandbox-init",
        self.parent_path().parent_path() / "libexec" / "mojoup" / "mojoup-sandbox-init"}) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return {};
}

}  // namespace mojoup::sandbox

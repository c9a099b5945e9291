// toml++ is used header-only and without exceptions, in this file alone (a
// heavy header: the file compiles on its own, beside the unity batches).
#define TOML_EXCEPTIONS 0
#include "runtime/openshell/codex_config.h"

#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "fmt/format.h"

namespace mojoup::sandbox {
namespace {

// The file's text: a comment line (toml++ writes no comments, so it goes
// before the table), then the table. Strings are written double-quoted, as
// TOML's basic strings with escapes, not as literal strings.
std::string CodexConfigText(const std::string& proxy) {
  const toml::table config{{"openai_base_url", proxy + "/api.openai.com/v1"}};
  constexpr toml::format_flags kFlags =
      toml::toml_formatter::default_flags & ~toml::format_flags::allow_literal_strings;
  std::ostringstream text;
  text << "# Written by mojoup-node: API calls go through the session's credential proxy.\n"
       << toml::toml_formatter(config, kFlags) << "\n";
  return text.str();
}

}  // namespace

// The staging home is the sandbox's home.
absl::Status WriteCodexConfig(const SandboxSpec& spec, const std::string& proxy) {
  for (const BindMount& mount : spec.mounts) {
    if (mount.target != spec.home) continue;
    const std::string dir = mount.source + "/.codex";
    const std::string file = dir + "/config.toml";
    if (::access(file.c_str(), F_OK) == 0) return absl::OkStatus();
    ::mkdir(dir.c_str(), 0700);
    std::ofstream out(file, std::ios::trunc);
    out << CodexConfigText(proxy);
    if (!out) return absl::PermissionDeniedError(fmt::format("cannot write {}", file));
    return absl::OkStatus();
  }
  return absl::OkStatus();
}

}  // namespace mojoup::sandbox

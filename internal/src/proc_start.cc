#include "mojoup/internal/proc_start.h"

#include <fstream>
#include <sstream>
#include <string>

#include "fmt/format.h"

namespace mojoup::internal {

std::optional<std::uint64_t> ProcStartTime(int pid) {
  std::ifstream file(fmt::format("/proc/{}/stat", pid));
  std::string stat;
  if (!std::getline(file, stat)) return std::nullopt;
  // The command name (field 2) may hold spaces and parentheses: skip to its end.
  std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  for (int index = 3; index <= 22 && fields >> field; ++index) {
    if (index == 3 && (field == "Z" || field == "X" || field == "x")) return std::nullopt;
    if (index == 22) {
      try {
        return std::stoull(field);
      } catch (...) {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

}  // namespace mojoup::internal

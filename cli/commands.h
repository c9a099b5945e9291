// The CLI's commands. Each takes the arguments after its name and returns the
// process exit code: 0 success, 1 the asked-for thing is not possible, 2 bad
// usage or bad input (CONTRACT.md).
#pragma once

#include <string>
#include <vector>

namespace mojoup::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitNotPossible = 1;
inline constexpr int kExitUsage = 2;

// Colour only on a terminal and never when NO_COLOR is set.
bool UseColor(int fd);

int Doctor(const std::string& program, std::vector<std::string> args);

}  // namespace mojoup::cli

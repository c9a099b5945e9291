// The CLI's commands. Each takes the arguments after its name and returns the
// process exit code: 0 success, 1 the asked-for thing is not possible, 2 bad
// usage or bad input.
#pragma once

// One value per occurrence of a repeatable flag and per positional argument:
// documented values hold commas (`alice,bob`, `NAME=HOST,HOST`), and cxxopts
// would otherwise split them. No argument can hold a NUL.
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <cxxopts.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "mojoup/sandbox/node.h"

namespace mojoup::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitNotPossible = 1;
inline constexpr int kExitUsage = 2;
inline constexpr std::string_view kProgram = "mojoup-node";

// Parses `args` for `command`. Returns the exit code to stop with (after
// printing help or a usage error), or nullopt to go on with `parsed`.
// `positional` names the positional arguments, if the command takes any.
std::optional<int> Parse(cxxopts::Options& options, const std::string& usage,
                         std::vector<std::string> args, cxxopts::ParseResult& parsed,
                         const std::vector<std::string>& positional = {});

// Prints "mojoup-node <command>: <message>" on stderr and returns `code`.
int PrintError(std::string_view command, std::string_view message, int code = kExitUsage);
// The same for a library error: bad input (InvalidArgument) exits 2, else 1.
int PrintError(std::string_view command, const absl::Status& status);

// --config FILE, else MOJOUP_NODE_CONFIG, else the default path.
std::string ConfigPath(const cxxopts::ParseResult& parsed);

// The node, opened from ConfigPath(). A --config FILE that does not exist is
// an error (a mistyped path would read as an empty config). The node's
// notices go to stderr. On error prints it and returns nullopt with
// `exit_code` set.
std::optional<Node> OpenNode(std::string_view command, const cxxopts::ParseResult& parsed,
                             int& exit_code);

// The value of a string flag, or "" when it is not given.
std::string FlagValue(const cxxopts::ParseResult& parsed, const std::string& flag);
std::vector<std::string> FlagValues(const cxxopts::ParseResult& parsed, const std::string& flag);

// The directory named by `flag`, canonical; on error prints one sentence
// naming the path and returns nullopt.
std::optional<std::string> DirectoryFlag(std::string_view command, std::string_view flag,
                                         const std::string& path);

int Doctor(std::vector<std::string> args);
int Config(std::vector<std::string> args);
int Setup(std::vector<std::string> args);
int Policy(std::vector<std::string> args);
int Proxy(std::vector<std::string> args);
int Run(std::vector<std::string> args);
int Status(std::vector<std::string> args);
int Stop(std::vector<std::string> args);

}  // namespace mojoup::cli

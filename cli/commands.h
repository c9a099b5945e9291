// The CLI's commands: each parses the arguments after its name, calls
// mojoup::Node, prints, and returns the exit code: 0 success, 1 the asked-for
// thing is not possible, 2 bad usage or bad input.
#pragma once

// Values hold commas (`alice,bob`, `NAME=HOST,HOST`): one value per flag.
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <cxxopts.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "mojoup/sandbox/node.h"
#include "mojoup/service/client.h"
#include "mojoup/service/server.h"

namespace mojoup::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitNotPossible = 1;
inline constexpr int kExitUsage = 2;
inline constexpr std::string_view kProgram = "mojoup-node";

// Parses `args`, adding --config FILE and --help. The exit code to stop with (after printing help
// or a usage error), or nullopt to go on. `positional` names the positional arguments.
std::optional<int> Parse(cxxopts::Options& options, const std::string& usage,
                         std::vector<std::string> args, cxxopts::ParseResult& parsed,
                         const std::vector<std::string>& positional = {});

// Prints "mojoup-node <command>: <message>" on stderr and returns `code`; for
// a library error without a code, 2 for bad input (InvalidArgument), else 1.
int PrintError(std::string_view command, std::string_view message, int code = kExitUsage);
int PrintError(std::string_view command, const absl::Status& status, int code = -1);

// --config FILE, else MOJOUP_NODE_CONFIG, else the default path.
std::string ConfigPath(const cxxopts::ParseResult& parsed);

// The node of ConfigPath(), its notices going to stderr; on error prints it
// and returns nullopt with `exit_code` set.
std::optional<Node> OpenNode(std::string_view command, const cxxopts::ParseResult& parsed,
                             int& exit_code);

// A flag's value(s); empty when not given.
std::string FlagValue(const cxxopts::ParseResult& parsed, const std::string& flag);
std::vector<std::string> FlagValues(const cxxopts::ParseResult& parsed, const std::string& flag);

int Doctor(std::vector<std::string> args);
int Config(std::vector<std::string> args);
int Setup(std::vector<std::string> args);
int Policy(std::vector<std::string> args);
int Proxy(std::vector<std::string> args);
int Run(std::vector<std::string> args);
int Status(std::vector<std::string> args);
int Stop(std::vector<std::string> args);
int Approvals(std::vector<std::string> args);
int Approve(std::vector<std::string> args);
int Deny(std::vector<std::string> args);
int Audit(std::vector<std::string> args);
int Image(std::vector<std::string> args);
int Serve(std::vector<std::string> args);
int Attach(std::vector<std::string> args);
int Service(std::vector<std::string> args);
// Hidden: what the service starts (a session's worker, a user's clean-up).
int SessionWorker(std::vector<std::string> args);
int SessionReap(std::vector<std::string> args);

// `run` through the sandbox service; nullopt when the command should run
// in the foreground instead (nothing asks for a sandbox, or this host
// cannot give one: the foreground decides as without a service).
std::optional<int> RunThroughService(ServiceClient& client, RunRequest request, bool detach);

}  // namespace mojoup::cli

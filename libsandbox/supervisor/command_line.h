// mojoup-sandbox-init's command line, and the places inside a native sandbox
// it works with: the native runtime writes the one (its container's Cmd) and
// mounts the others, the supervisor reads them. Private: neither side is an
// API, but both must say the same.
//
//   std::vector<std::string> cmd = supervisor::CommandLine(
//       {.proxy_socket = std::string(supervisor::kProxySocketPath),
//        .write_dirs = {"/src/app", "/home/ada", "/tmp"},
//        .command = {"claude"}});
//   // --proxy-socket /.mojoup/proxy.sock --write /src/app ... -- claude
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mojoup::supervisor {

// Where the native runtime mounts the supervisor (the container's
// entrypoint) and the session proxy's socket, read-only.
inline constexpr std::string_view kSupervisorPath = "/.mojoup/sandbox-init";
inline constexpr std::string_view kProxySocketPath = "/.mojoup/proxy.sock";

// Where the supervisor bridges TCP to the proxy's socket unless --listen
// says otherwise: the address the command's proxy variables name.
inline constexpr std::string_view kProxyAddress = "127.0.0.1:3128";

// The options; each takes a value, as "--name VALUE" or "--name=VALUE".
inline constexpr std::string_view kProxySocketOption = "--proxy-socket";
inline constexpr std::string_view kListenOption = "--listen";
inline constexpr std::string_view kWriteOption = "--write";
inline constexpr std::string_view kWriteFileOption = "--write-file";
// Ends the options: the command and its arguments follow.
inline constexpr std::string_view kEndOfOptions = "--";

// What the supervisor is asked to do before it becomes the command.
struct Invocation {
  std::string proxy_socket;             // relayed to from kProxyAddress; empty: no relay
  std::vector<std::string> write_dirs;  // the only places the command may write
  std::vector<std::string> command;
};

// The arguments after the program's name.
inline std::vector<std::string> CommandLine(const Invocation& invocation) {
  std::vector<std::string> args;
  if (!invocation.proxy_socket.empty()) {
    args.emplace_back(kProxySocketOption);
    args.push_back(invocation.proxy_socket);
  }
  for (const std::string& dir : invocation.write_dirs) {
    args.emplace_back(kWriteOption);
    args.push_back(dir);
  }
  args.emplace_back(kEndOfOptions);
  args.insert(args.end(), invocation.command.begin(), invocation.command.end());
  return args;
}

}  // namespace mojoup::supervisor

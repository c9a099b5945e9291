// mojoup-sandbox-init: the entrypoint of a sandbox container. Docker's init
// starts it as an unprivileged user; it bridges the proxy, confines writes
// with Landlock, denies the dangerous system calls with seccomp and then
// becomes the command. Any failure before that refuses to run the command at
// all, with exit code 126.
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "bridge.h"
#include "command_line.h"
#include "landlock.h"
#include "seccomp_filter.h"

namespace {

using mojoup::supervisor::ApplyLandlock;
using mojoup::supervisor::ApplySeccompDenyList;
using mojoup::supervisor::StartBridge;
namespace supervisor = mojoup::supervisor;

constexpr int kSetupFailed = 126;

std::string Usage() {
  std::string usage =
      "Usage: mojoup-sandbox-init [OPTION]... -- COMMAND [ARG]...\n"
      "Run COMMAND confined: writes only where allowed (Landlock), no mounts, new user\n"
      "namespaces, tracing, BPF, io_uring or set-user/group-ID files (seccomp), no new\n"
      "privileges.\n"
      "\n"
      "  --write DIR          allow writes beneath DIR (repeatable; DIR must exist)\n"
      "  --write-file FILE    allow writes to FILE (repeatable; FILE must exist)\n"
      "  --proxy-socket PATH  relay TCP connections on the --listen address to the\n"
      "                       unix socket PATH\n"
      "  --listen ADDR:PORT   where the relay listens (default ";
  usage += supervisor::kProxyAddress;
  usage +=
      ")\n"
      "  --help               show this help\n"
      "\n"
      "Exit status: COMMAND's, or 126 if the sandbox could not be set up (COMMAND did\n"
      "not run) or COMMAND is not executable, 127 if COMMAND was not found.\n";
  return usage;
}

struct Options {
  std::string proxy_socket;
  std::string listen = std::string(supervisor::kProxyAddress);
  bool listen_given = false;
  std::vector<std::string> write_dirs;
  std::vector<std::string> write_files;
  std::vector<char*> command;  // null-terminated, for execvp
  bool help = false;
};

// Accepts "--name VALUE" and "--name=VALUE"; an empty string when parsed.
std::string Parse(int argc, char** argv, Options* options) {
  int i = 1;
  for (; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == supervisor::kEndOfOptions) {
      ++i;
      break;
    }
    if (arg.empty() || arg.front() != '-') break;
    if (arg == "--help" || arg == "-h") {
      options->help = true;
      return {};
    }
    std::string_view name = arg.substr(0, arg.find('='));
    std::string* single = nullptr;
    std::vector<std::string>* repeated = nullptr;
    if (name == supervisor::kProxySocketOption) {
      single = &options->proxy_socket;
    } else if (name == supervisor::kListenOption) {
      single = &options->listen;
      options->listen_given = true;
    } else if (name == supervisor::kWriteOption) {
      repeated = &options->write_dirs;
    } else if (name == supervisor::kWriteFileOption) {
      repeated = &options->write_files;
    } else {
      return "unknown option " + std::string(arg) + " (see --help)";
    }
    std::string value;
    if (name.size() < arg.size()) {
      value = arg.substr(name.size() + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return "option " + std::string(name) + " needs a value (see --help)";
    }
    if (value.empty()) return "option " + std::string(name) + " needs a non-empty value";
    if (single != nullptr) *single = value;
    if (repeated != nullptr) repeated->push_back(value);
  }
  if (i >= argc) return "no command given (usage: mojoup-sandbox-init [OPTION]... -- COMMAND)";
  options->command.assign(argv + i, argv + argc);
  options->command.push_back(nullptr);
  if (options->listen_given && options->proxy_socket.empty()) {
    return "--listen needs --proxy-socket";
  }
  return {};
}

void Say(const std::string& sentence) {
  std::fprintf(stderr, "mojoup-sandbox-init: %s\n", sentence.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (std::string error = Parse(argc, argv, &options); !error.empty()) {
    Say(error);
    return kSetupFailed;
  }
  if (options.help) {
    std::fputs(Usage().c_str(), stdout);
    return 0;
  }

  pid_t bridge = -1;
  auto refuse = [&bridge](const std::string& error) {
    Say(error);
    if (bridge > 0) kill(bridge, SIGKILL);
    std::exit(kSetupFailed);
  };

  if (!options.proxy_socket.empty()) {
    std::string error = StartBridge(options.listen, options.proxy_socket, &bridge);
    if (!error.empty()) refuse(error);
  }
  // Listed last among the steps, but landlock_restrict_self refuses to work
  // without no_new_privs (for an unprivileged caller), so it comes first.
  // Docker's no-new-privileges has usually set it already; again is harmless.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    refuse("cannot set no_new_privs: " + std::string(std::strerror(errno)));
  }
  if (std::string error = ApplyLandlock(options.write_dirs, options.write_files); !error.empty()) {
    refuse(error);
  }
  if (std::string error = ApplySeccompDenyList(); !error.empty()) refuse(error);

  execvp(options.command[0], options.command.data());
  int error = errno;
  Say("cannot run " + std::string(options.command[0]) + ": " + std::strerror(error));
  if (bridge > 0) kill(bridge, SIGKILL);
  // As a shell does: found but not runnable is 126, not found is 127. _exit:
  // this process was to become the command, so it runs no exit handlers of
  // its own (LeakSanitizer's, in the asan build, would need ptrace, which the
  // filter now denies).
  _exit(error == EACCES || error == ENOEXEC ? 126 : 127);
}

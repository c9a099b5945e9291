// mojoup-node: the node's sandbox command line. Thin: parsing, printing and
// exit codes; everything else lives in libmojoup_sandbox.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"

namespace mojoup::cli {

bool UseColor(int fd) {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') return false;
  return isatty(fd) == 1;
}

namespace {

void Usage(std::ostream& out, const std::string& program) {
  out << "usage: " << program << " COMMAND [ARGS]\n"
      << "\n"
      << "Runs AI coding-agent sessions in per-session sandboxes on this node.\n"
      << "\n"
      << "commands:\n"
      << "  doctor [--json]   say whether this machine can sandbox agents, and why not\n"
      << "\n"
      << "options:\n"
      << "  -h, --help        show this help (also: " << program << " COMMAND --help)\n"
      << "  --version         print the version\n"
      << "\n"
      << "exit codes: 0 success, 1 not possible here, 2 bad usage or bad input\n";
}

}  // namespace
}  // namespace mojoup::cli

int main(int argc, char** argv) {
  using namespace mojoup::cli;
  const std::string program = "mojoup-node";
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    Usage(std::cerr, program);
    return kExitUsage;
  }
  const std::string command = args.front();
  args.erase(args.begin());
  if (command == "-h" || command == "--help" || command == "help") {
    Usage(std::cout, program);
    return kExitOk;
  }
  if (command == "--version" || command == "-V") {
    std::cout << program << " " << MOJOUP_VERSION << "\n";
    return kExitOk;
  }
  if (command == "doctor") return Doctor(program, std::move(args));
  std::cerr << program << ": unknown command \"" << command << "\"; run `" << program
            << " --help` for the list\n";
  return kExitUsage;
}

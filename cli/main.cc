// mojoup-node: the node's sandbox command line. Thin: parsing, printing and
// exit codes; everything else lives in libmojoup_sandbox.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "mojoup/policy/node_config.h"
#include "mojoup/policy/tool_profiles.h"

namespace mojoup::cli {

bool UseColor(int fd) {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') return false;
  return isatty(fd) == 1;
}

std::optional<int> Parse(cxxopts::Options& options, const std::string& usage,
                         std::vector<std::string> args, cxxopts::ParseResult& parsed,
                         const std::vector<std::string>& positional) {
  options.add_options()("h,help", "show this help");
  if (!positional.empty()) {
    options.add_options()("positional", "", cxxopts::value<std::vector<std::string>>());
    options.parse_positional({"positional"});
  }
  std::vector<char*> argv{const_cast<char*>(kProgram.data())};
  for (std::string& arg : args) argv.push_back(arg.data());
  try {
    parsed = options.parse(static_cast<int>(argv.size()), argv.data());
    if (!parsed.unmatched().empty()) {
      throw std::invalid_argument("unexpected argument \"" + parsed.unmatched().front() + "\"");
    }
  } catch (const std::exception& e) {
    std::cerr << kProgram << ": " << e.what() << "\nusage: " << usage << "\n";
    return kExitUsage;
  }
  if (parsed.count("help")) {
    std::cout << "usage: " << usage << "\n" << options.help();
    return kExitOk;
  }
  return std::nullopt;
}

int Fail(std::string_view command, std::string_view message, int code) {
  std::cerr << kProgram << " " << command << ": " << message << "\n";
  return code;
}

int Fail(std::string_view command, const absl::Status& status, int code) {
  return Fail(command, std::string(status.message()), code);
}

std::string ConfigPath(const cxxopts::ParseResult& parsed) {
  return parsed.count("config") ? parsed["config"].as<std::string>() : policy::DefaultConfigPath();
}

std::optional<std::string> ToolFlag(std::string_view command, const cxxopts::ParseResult& parsed) {
  if (!parsed.count("tool")) return std::string();
  std::string tool = parsed["tool"].as<std::string>();
  if (policy::FindToolProfile(tool) == nullptr) {
    Fail(command,
         "unknown --tool \"" + tool + "\"; expected one of " + std::string(policy::ToolNames()));
    return std::nullopt;
  }
  return tool;
}

namespace {

void Usage(std::ostream& out) {
  out << "usage: " << kProgram << " COMMAND [ARGS]\n"
      << "\n"
      << "Runs AI coding-agent sessions in per-session sandboxes on this node.\n"
      << "\n"
      << "commands:\n"
      << "  doctor [--json]                  can this machine sandbox agents, and why not\n"
      << "  status [--json]                  the verdict and the sessions in sandboxes\n"
      << "  config set|get|unset|list ...    the node's sandbox settings\n"
      << "  setup [flags]                    the setup wizard for the sandbox role\n"
      << "  policy explain [--repo DIR]      the effective policy and this node's decision\n"
      << "  proxy [flags]                    one session's egress proxy and credential swap\n"
      << "  run [flags] -- COMMAND [ARG...]  run COMMAND in a sandbox for this repository\n"
      << "  stop ID | --all                  stop sessions, remove their sandboxes\n"
      << "\n"
      << "options:\n"
      << "  -h, --help        show this help (also: " << kProgram << " COMMAND --help)\n"
      << "  --version         print the version\n"
      << "\n"
      << "exit codes: 0 success, 1 not possible here, 2 bad usage or bad input\n";
}

}  // namespace
}  // namespace mojoup::cli

int main(int argc, char** argv) {
  using namespace mojoup::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    Usage(std::cerr);
    return kExitUsage;
  }
  const std::string command = args.front();
  args.erase(args.begin());
  if (command == "-h" || command == "--help" || command == "help") {
    Usage(std::cout);
    return kExitOk;
  }
  if (command == "--version" || command == "-V") {
    std::cout << kProgram << " " << MOJOUP_VERSION << "\n";
    return kExitOk;
  }
  if (command == "doctor") return Doctor(std::move(args));
  if (command == "config") return Config(std::move(args));
  if (command == "setup") return Setup(std::move(args));
  if (command == "policy") return Policy(std::move(args));
  if (command == "proxy") return Proxy(std::move(args));
  if (command == "run") return Run(std::move(args));
  if (command == "status") return Status(std::move(args));
  if (command == "stop") return Stop(std::move(args));
  std::cerr << kProgram << ": unknown command \"" << command << "\"; run `" << kProgram
            << " --help` for the list\n";
  return kExitUsage;
}

// mojoup-node: the node's sandbox command line. Thin: parsing, printing and
// exit codes; everything else is mojoup::Node in libmojoup_sandbox.
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"

namespace mojoup::cli {

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
    // Ours is the one usage block; cxxopts' own would be a second, and it
    // appends its usage words to the description even without one.
    options.custom_help("");
    options.positional_help("");
    std::cout << "usage: " << usage << "\n" << options.help({}, false);
    return kExitOk;
  }
  return std::nullopt;
}

int PrintError(std::string_view command, std::string_view message, int code) {
  std::cerr << kProgram << " " << command << ": " << message << "\n";
  return code;
}

int PrintError(std::string_view command, const absl::Status& status) {
  return PrintError(command, std::string(status.message()),
                    absl::IsInvalidArgument(status) ? kExitUsage : kExitNotPossible);
}

std::string ConfigPath(const cxxopts::ParseResult& parsed) {
  return parsed.count("config") ? parsed["config"].as<std::string>() : policy::DefaultConfigPath();
}

std::optional<Node> OpenNode(std::string_view command, const cxxopts::ParseResult& parsed,
                             int& exit_code) {
  NodeOptions options;
  options.config_path = ConfigPath(parsed);
  std::error_code ec;
  if (parsed.count("config") && !std::filesystem::exists(options.config_path, ec)) {
    exit_code = PrintError(command, "--config " + options.config_path +
                                        ": no such file; expected the node config file (leave "
                                        "--config out to use " +
                                        policy::DefaultConfigPath() + ")");
    return std::nullopt;
  }
  options.notice = [](std::string_view sentence) {
    std::cerr << kProgram << ": " << sentence << "\n";
  };
  auto node = Node::Open(std::move(options));
  if (!node.ok()) {
    exit_code = PrintError(command, node.status());
    return std::nullopt;
  }
  return *std::move(node);
}

std::string FlagValue(const cxxopts::ParseResult& parsed, const std::string& flag) {
  return parsed.count(flag) ? parsed[flag].as<std::string>() : std::string();
}

std::vector<std::string> FlagValues(const cxxopts::ParseResult& parsed, const std::string& flag) {
  return parsed.count(flag) ? parsed[flag].as<std::vector<std::string>>()
                            : std::vector<std::string>();
}

std::optional<std::string> DirectoryFlag(std::string_view command, std::string_view flag,
                                         const std::string& path) {
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::canonical(path, ec);
  if (ec || !std::filesystem::is_directory(canonical, ec)) {
    PrintError(command,
               std::string(flag) + " " + path +
                   (ec == std::errc::no_such_file_or_directory || !std::filesystem::exists(path)
                        ? ": no such directory; expected a repository's directory"
                        : ": not a directory; expected a repository's directory"));
    return std::nullopt;
  }
  return canonical.string();
}

}  // namespace mojoup::cli

namespace {

constexpr std::string_view kUsage =
    "usage: mojoup-node COMMAND [ARGS]\n"
    "\n"
    "Runs AI coding-agent sessions in per-session sandboxes on this node.\n"
    "\n"
    "commands:\n"
    "  doctor [--json]                  can this machine sandbox agents, and why not\n"
    "  status [--json]                  the verdict and the sessions in sandboxes\n"
    "  config set|get|unset|list ...    the node's sandbox settings\n"
    "  setup [flags]                    the setup wizard for the sandbox role\n"
    "  policy explain [--repo DIR]      the effective policy and this node's decision\n"
    "  proxy [flags]                    one session's egress proxy and credential swap\n"
    "  run [flags] -- COMMAND [ARG...]  run COMMAND in a sandbox for this repository\n"
    "  stop ID | --all                  stop sessions, remove their sandboxes\n"
    "\n"
    "options:\n"
    "  -h, --help        show this help (also: mojoup-node COMMAND --help)\n"
    "  --version         print the version\n"
    "\n"
    "exit codes: 0 success, 1 not possible here, 2 bad usage or bad input\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace mojoup::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string command = args.front();
  args.erase(args.begin());
  if (command == "-h" || command == "--help" || command == "help") {
    std::cout << kUsage;
    return kExitOk;
  }
  if (command == "--version" || command == "-V") {
    std::cout << kProgram << " " << MOJOUP_VERSION << "\n";
    return kExitOk;
  }
  using Command = int (*)(std::vector<std::string>);
  const std::pair<std::string_view, Command> commands[] = {
      {"doctor", Doctor}, {"config", Config}, {"setup", Setup},   {"policy", Policy},
      {"proxy", Proxy},   {"run", Run},       {"status", Status}, {"stop", Stop}};
  for (const auto& [name, run] : commands) {
    if (command == name) return run(std::move(args));
  }
  std::cerr << kProgram << ": unknown command \"" << command << "\"; run `" << kProgram
            << " --help` for the list\n";
  return kExitUsage;
}

// mojoup-node: the node's sandbox command line. Thin: parsing, printing and
// exit codes; everything else lives in libmojoup_sandbox.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
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
    // Ours is the one usage block; cxxopts' own would be a second, and it
    // appends its usage words to the description even without one.
    options.custom_help("");
    options.positional_help("");
    std::cout << "usage: " << usage << "\n" << options.help({}, false);
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

std::optional<policy::NodeConfig> LoadConfig(std::string_view command,
                                             const cxxopts::ParseResult& parsed, int& exit_code) {
  const std::string path = ConfigPath(parsed);
  std::error_code ec;
  if (parsed.count("config") && !std::filesystem::exists(path, ec)) {
    exit_code = Fail(command, "--config " + path +
                                  ": no such file; expected the node config file (leave --config "
                                  "out to use " +
                                  policy::DefaultConfigPath() + ")");
    return std::nullopt;
  }
  auto config = policy::NodeConfig::Load(path);
  if (!config.ok()) {
    exit_code = Fail(command, config.status());
    return std::nullopt;
  }
  return *std::move(config);
}

std::optional<std::string> DirectoryFlag(std::string_view command, std::string_view flag,
                                         const std::string& path) {
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::canonical(path, ec);
  if (ec || !std::filesystem::is_directory(canonical, ec)) {
    Fail(command, std::string(flag) + " " + path +
                      (ec == std::errc::no_such_file_or_directory || !std::filesystem::exists(path)
                           ? ": no such directory; expected a repository's directory"
                           : ": not a directory; expected a repository's directory"));
    return std::nullopt;
  }
  return canonical.string();
}

std::string ReadableFileProblem(std::string_view flag, const std::string& path,
                                std::string_view expected) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return std::string(flag) + " " + path + ": no such file; expected " + std::string(expected);
  }
  if (!std::filesystem::is_regular_file(path, ec)) {
    return std::string(flag) + " " + path + ": not a file; expected " + std::string(expected);
  }
  if (::access(path.c_str(), R_OK) != 0) {
    return std::string(flag) + " " + path + ": cannot be read (" + std::strerror(errno) +
           "); expected " + std::string(expected);
  }
  return {};
}

std::string UpstreamCaProblem(const std::string& path) {
  constexpr std::string_view kExpected = "a PEM file of CA certificates";
  if (std::string problem = ReadableFileProblem("--upstream-ca", path, kExpected);
      !problem.empty()) {
    return problem;
  }
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  if (text.str().find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
    return "--upstream-ca " + path + ": holds no PEM certificate; expected " +
           std::string(kExpected);
  }
  return {};
}

std::string NewFileProblem(std::string_view flag, const std::string& path) {
  std::error_code ec;
  const std::string named = std::string(flag) + " " + path;
  if (std::filesystem::is_directory(path, ec)) {
    return named + ": is a directory; expected a file name";
  }
  const std::filesystem::path parent = std::filesystem::absolute(path, ec).parent_path();
  if (!std::filesystem::is_directory(parent, ec)) {
    return named + ": its directory " + parent.string() +
           " does not exist; expected a file in an existing directory";
  }
  return {};
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

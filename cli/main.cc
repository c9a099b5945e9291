// mojoup-node: the node's sandbox command line. Thin: parsing, printing and
// exit codes; everything else is mojoup::Node in libmojoup_sandbox.
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "mojoup/version.h"

namespace mojoup::cli {

std::optional<int> Parse(cxxopts::Options& options, const std::string& usage,
                         std::vector<std::string> args, cxxopts::ParseResult& parsed,
                         const std::vector<std::string>& positional) {
  options.add_options()("config", "node config file", cxxopts::value<std::string>())(
      "h,help", "show this help");
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

int PrintError(std::string_view command, const absl::Status& status, int code) {
  if (code < 0) code = absl::IsInvalidArgument(status) ? kExitUsage : kExitNotPossible;
  return PrintError(command, std::string(status.message()), code);
}

std::string ConfigPath(const cxxopts::ParseResult& parsed) {
  return parsed.count("config") ? parsed["config"].as<std::string>() : policy::DefaultConfigPath();
}

std::optional<Node> OpenNode(std::string_view command, const cxxopts::ParseResult& parsed,
                             int& exit_code) {
  NodeOptions options;
  options.config_path = ConfigPath(parsed);
  options.config_named = parsed.count("config") > 0;
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

}  // namespace mojoup::cli

int main(int argc, char** argv) {
  using namespace mojoup::cli;
  struct Command {
    std::string_view name, synopsis, summary;
    int (*run)(std::vector<std::string>);
  };
  const Command commands[] = {
      {"doctor", "doctor [--json]", "can this machine sandbox agents, and why not", Doctor},
      {"status", "status [--json]", "the verdict and the sessions in sandboxes", Status},
      {"config", "config set|get|unset|list ...", "the node's sandbox settings", Config},
      {"setup", "setup [flags]", "the setup wizard for the sandbox role", Setup},
      {"policy", "policy explain [--repo DIR]", "the effective policy and this node's decision",
       Policy},
      {"proxy", "proxy [flags]", "one session's egress proxy and credential swap", Proxy},
      {"run", "run [flags] -- COMMAND [ARG...]", "run COMMAND in a sandbox for this repository",
       Run},
      {"stop", "stop ID | --all", "stop sessions, remove their sandboxes", Stop},
      {"approvals", "approvals [SESSION] [--json]", "requests sessions hold for your answer",
       Approvals},
      {"approve", "approve SESSION ID [--scope S]", "let a held request through", Approve},
      {"deny", "deny SESSION ID [--reason TEXT]", "refuse a held request", Deny},
      {"audit", "audit ID [--follow] [--ocsf]", "a session's audit: what it did, line by line",
       Audit},
      {"image", "image build [flags]", "build the agent image sessions run in", Image},
      {"serve", "serve [--socket PATH]", "the node's sandbox service", Serve},
      {"attach", "attach ID", "attach to a session the service runs", Attach},
      {"service", "service drain|node|sessions", "ask the sandbox service", Service}};
  auto usage = [&commands](std::ostream& out) {
    out << "usage: mojoup-node COMMAND [ARGS]\n\n"
        << "Runs AI coding-agent sessions in per-session sandboxes on this node.\n\ncommands:\n";
    for (const Command& command : commands) {
      out << "  " << command.synopsis << std::string(33 - command.synopsis.size(), ' ')
          << command.summary << "\n";
    }
    out << "\noptions:\n"
        << "  -h, --help        show this help (also: mojoup-node COMMAND --help)\n"
        << "  --version         print the version\n\n"
        << "exit codes: 0 success, 1 not possible here, 2 bad usage or bad input\n";
  };
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    usage(std::cerr);
    return kExitUsage;
  }
  const std::string name = args.front();
  args.erase(args.begin());
  if (name == "-h" || name == "--help" || name == "help") {
    usage(std::cout);
    return kExitOk;
  }
  if (name == "--version" || name == "-V") {
    std::cout << kProgram << " " << mojoup::kVersion << "\n";
    return kExitOk;
  }
  for (const Command& command : commands) {
    if (name == command.name) return command.run(std::move(args));
  }
  if (name == "__session-worker") return SessionWorker(std::move(args));
  if (name == "__session-reap") return SessionReap(std::move(args));
  std::cerr << kProgram << ": unknown command \"" << name << "\"; run `" << kProgram
            << " --help` for the list\n";
  return kExitUsage;
}

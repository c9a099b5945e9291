// mojoup-node config set|get|unset|list
#include <iostream>

#include "commands.h"
#include "mojoup/policy/node_config.h"

namespace mojoup::cli {
namespace {

constexpr std::string_view kUsage =
    "mojoup-node config set KEY VALUE | get KEY | unset KEY | list [--json]  [--config FILE]";

std::string KeyTable() {
  std::string table = "keys:\n";
  for (const policy::ConfigKey& key : policy::ConfigKeys()) {
    table += "  " + std::string(key.name) + "  (" + std::string(key.accepted) + ")\n      " +
             std::string(key.meaning) + "\n";
  }
  return table;
}

}  // namespace

int Config(std::vector<std::string> args) {
  cxxopts::Options options("mojoup-node config", "Read and change the node's sandbox settings.");
  options.add_options()("json", "list: print one JSON object (schema mojoup.config/v1)")(
      "config", "node config file", cxxopts::value<std::string>());
  options.custom_help("set KEY VALUE | get KEY | unset KEY | list [--json]");
  cxxopts::ParseResult parsed;
  if (auto stop = Parse(options, std::string(kUsage) + "\n" + KeyTable(), std::move(args), parsed,
                        {"ACTION", "KEY", "VALUE"})) {
    return *stop;
  }
  std::vector<std::string> words = FlagValues(parsed, "positional");
  const std::string path = ConfigPath(parsed);
  auto usage = [&](std::string_view why) {
    return PrintError("config", std::string(why) + "\nusage: " + std::string(kUsage));
  };
  if (words.empty()) return usage("say what to do: set, get, unset or list");
  const std::string& action = words[0];
  const std::size_t wanted = action == "set" ? 3 : action == "list" ? 1 : 2;
  if (action != "set" && action != "get" && action != "unset" && action != "list") {
    return usage("unknown action \"" + action + "\"; expected set, get, unset or list");
  }
  if (words.size() != wanted) {
    return usage(action + " takes " +
                 (wanted == 3   ? "KEY VALUE"
                  : wanted == 2 ? "KEY"
                                : "no arguments"));
  }
  if (action == "set" || action == "unset") {
    std::optional<std::string> value;
    if (action == "set") value = words[2];
    if (value) {
      if (std::string problem = policy::PathValueProblem(words[1], *value); !problem.empty()) {
        return PrintError("config", problem);
      }
    }
    absl::Status done = policy::UpdateNodeConfig(path, {{words[1], value}});
    return done.ok() ? kExitOk : PrintError("config", std::string(done.message()));
  }
  int failed = kExitUsage;
  auto node = OpenNode("config", parsed, failed);
  if (!node) return failed;
  const policy::NodeConfig* config = &node->config();
  if (action == "get") {
    if (auto known = policy::ValidateConfigKey(words[1]); !known.ok())
      return PrintError("config", std::string(known.message()));
    auto value = config->Get(words[1]);
    if (value) {
      std::cout << *value << "\n";
      return kExitOk;
    }
    if (auto fallback = policy::ConfigDefault(*config, words[1])) {
      std::cout << *fallback << "\n";
      std::cerr << kProgram << " config: " << words[1] << " is not set in " << path
                << "; that is its default\n";
      return kExitOk;
    }
    return PrintError("config", words[1] + " is not set in " + path + ", and it has no default",
                      kExitNotPossible);
  }
  if (parsed.count("json")) {
    std::cout << policy::NodeConfigListJson(*config);
  } else if (config->values().empty()) {
    std::cout << "Nothing is set in " << path
              << ": every key has its default (`mojoup-node config --help` lists them).\n";
  } else {
    for (const auto& [key, value] : config->values()) std::cout << key << " = " << value << "\n";
  }
  return kExitOk;
}

}  // namespace mojoup::cli

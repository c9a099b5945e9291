// mojoup-node config set|get|unset|list
#include <iostream>

#include "commands.h"
#include "mojoup/policy/node_config.h"

namespace mojoup::cli {
namespace {

constexpr std::string_view kUsage =
    "mojoup-node config set KEY VALUE | get KEY | unset KEY | list [--json]  [--config FILE]";

}  // namespace

int Config(std::vector<std::string> args) {
  cxxopts::Options options("mojoup-node config", "Read and change the node's sandbox settings.");
  options.add_options()("json", "list: print one JSON object (schema mojoup.config/v1)");
  options.custom_help("set KEY VALUE | get KEY | unset KEY | list [--json]");
  cxxopts::ParseResult parsed;
  if (auto stop = Parse(options, std::string(kUsage) + "\n" + policy::ConfigKeysText(),
                        std::move(args), parsed, {"ACTION", "KEY", "VALUE"})) {
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
    return done.ok() ? kExitOk : PrintError("config", done, kExitUsage);
  }
  int failed = kExitUsage;
  auto node = OpenNode("config", parsed, failed);
  if (!node) return failed;
  const policy::NodeConfig* config = &node->config();
  if (action == "get") {
    if (auto known = policy::ValidateConfigKey(words[1]); !known.ok())
      return PrintError("config", known, kExitUsage);
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
  std::cout << (parsed.count("json") ? policy::NodeConfigListJson(*config)
                                     : policy::NodeConfigListText(*config));
  return kExitOk;
}

}  // namespace mojoup::cli

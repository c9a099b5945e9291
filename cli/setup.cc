// mojoup-node setup: the setup wizard for the sandbox role.
#include <unistd.h>

#include <iostream>

#include "commands.h"
#include "mojoup/service/setup.h"

namespace mojoup::cli {
namespace {

constexpr std::string_view kUsage =
    "mojoup-node setup [--role on|off] [--runtime openshell|native] [--engine docker]\n"
    "                  [--allowed-users NAMES|*] [--build-image] [--service user|system|no]\n"
    "                  [--config FILE]";

// Setup's steps print as they go; a step that fails is said, with 1 for what
// is not possible here and 2 for a bad --service.
int Done(const absl::Status& status, int code = kExitNotPossible) {
  return status.ok() ? kExitOk : PrintError("setup", status, code);
}

}  // namespace

int Setup(std::vector<std::string> args) {
  cxxopts::Options options("mojoup-node setup",
                           "Set the node up to run agents in per-session sandboxes.");
  options.add_options()("role", "the sandbox role: on or off", cxxopts::value<std::string>())(
      "runtime", "who builds the sandbox: openshell or native", cxxopts::value<std::string>())(
      "engine", "the container engine: docker", cxxopts::value<std::string>())(
      "allowed-users", "who may run agents in its sandboxes: names, comma-separated, or *",
      cxxopts::value<std::string>())(
      "build-image",
      "build the agent image sessions use when it is missing (mojoup-node image "
      "build)")("service", "enable the sandbox service's systemd unit: user, system or no",
                cxxopts::value<std::string>());
  cxxopts::ParseResult parsed;
  if (auto stop = Parse(options, std::string(kUsage), std::move(args), parsed)) return *stop;
  const std::string path = ConfigPath(parsed);

  SetupChanges changes;
  if (parsed.count("role")) {
    const std::string role = parsed["role"].as<std::string>();
    auto on = policy::ParseSwitch(role);
    if (!on) {
      return PrintError("setup",
                        "--role " + role + ": expected " + std::string(policy::kSwitchWords));
    }
    changes["node.sandbox.role"] = *on ? "true" : "false";
  }
  const std::pair<const char*, const char*> flags[] = {
      {"runtime", "node.sandbox.runtime"},
      {"engine", "node.sandbox.engine"},
      {"allowed-users", "node.sandbox.allowed_users"}};
  for (const auto& [flag, key] : flags) {
    if (parsed.count(flag)) changes[key] = parsed[flag].as<std::string>();
  }
  const bool build_image = parsed.count("build-image") > 0;
  const std::string service = FlagValue(parsed, "service");
  const bool interactive = changes.empty() && !build_image && service.empty();
  if (interactive) {
    if (isatty(STDIN_FILENO) != 1) {
      return PrintError("setup",
                        "there is no terminal to ask on; give the answers as flags: --role on|off "
                        "--runtime openshell|native --engine docker --allowed-users NAMES|*");
    }
    NodeOptions node_options;
    node_options.config_path = path;
    auto node = Node::Open(std::move(node_options));
    if (!node.ok()) return PrintError("setup", node.status());
    auto answers = AskSetupQuestions(*node, std::cin, std::cout);
    if (!answers) return PrintError("setup", "no answer; nothing was written");
    changes = *std::move(answers);
  }
  if (!changes.empty()) {
    if (absl::Status done = policy::UpdateNodeConfig(path, changes); !done.ok()) {
      return PrintError("setup", done, kExitUsage);
    }
    std::cout << "Wrote " << path << ":\n";
    for (const auto& [key, value] : changes) std::cout << "  " << key << " = " << *value << "\n";
  }
  if (!interactive && !build_image) {
    return service.empty() ? kExitOk : Done(EnableServiceShown(service, std::cout), -1);
  }
  // The node as it is now set up.
  NodeOptions node_options;
  node_options.config_path = path;
  auto node = Node::Open(std::move(node_options));
  if (!node.ok()) return PrintError("setup", node.status());
  const int built = Done(build_image ? BuildImageIfMissing(*node, std::cout)
                                     : OfferImage(*node, std::cin, std::cout));
  if (built != kExitOk) return built;
  if (!service.empty()) return Done(EnableServiceShown(service, std::cout), -1);
  return interactive ? Done(OfferService(*node, std::cin, std::cout)) : kExitOk;
}

}  // namespace mojoup::cli

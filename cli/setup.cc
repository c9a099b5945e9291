// mojoup-node setup: the setup wizard for the sandbox role.
#include <unistd.h>

#include <iostream>
#include <map>

#include "commands.h"

namespace mojoup::cli {
namespace {

constexpr std::string_view kUsage =
    "mojoup-node setup [--role on|off] [--runtime openshell|native] [--engine docker]\n"
    "                  [--allowed-users NAMES|*] [--build-image] [--service user|system|no]\n"
    "                  [--config FILE]";

using Changes = std::map<std::string, std::optional<std::string>>;

// The wizard on a terminal: the verdict first, then one question per setting,
// each asked until the answer is valid. nullopt when stdin ends.
std::optional<Changes> Interview(const Node& node) {
  probe::Report report = node.Doctor();
  std::cout << report.verdict.Line() << "\n";
  if (!report.verdict.can_sandbox) {
    std::cout << "(You can still set the node up; `mojoup-node doctor` shows every check.)\n";
  }
  std::cout << "\n";
  Changes changes;
  for (const policy::SetupQuestion& question : policy::SetupQuestions(node.config())) {
    absl::StatusOr<std::string> answer;
    for (;;) {
      std::cout << question.text << " [" << question.fallback << "]: " << std::flush;
      std::string line;
      if (!std::getline(std::cin, line)) return std::nullopt;
      answer = policy::SetupAnswer(question.key, line.empty() ? question.fallback : line);
      if (answer.ok()) break;
      std::cout << "  " << answer.status().message() << "\n";
    }
    changes[question.key] = *answer;
    if (question.key == "node.sandbox.role" && *answer == "false") break;
  }
  return changes;
}

// Builds the default agent image, each step on a line of its own.
int BuildImage(const Node& node) {
  auto built = node.BuildImage([](const sandbox::ImageStep& step) {
    std::cout << ImageStepLine(step) << "\n" << std::flush;
  });
  if (!built.ok()) return PrintError("setup", built.status(), kExitNotPossible);
  std::cout << "Built the agent image " << built->reference << ".\n";
  return kExitOk;
}

// --build-image: the image sessions use, built unless it is there or is not
// the agent image this program builds.
int BuildImageAsked(const Node& node) {
  const std::string image = SandboxImage(node.config());
  if (image != sandbox::DefaultAgentImage()) {
    std::cout << "node.sandbox.image is " << image
              << ", not the agent image mojoup-node builds; nothing to build.\n";
    return kExitOk;
  }
  if (node.Image().ok()) {
    std::cout << "The agent image " << image << " is already on this node's Docker.\n";
    return kExitOk;
  }
  return BuildImage(node);
}

// The wizard's last question, when the role is on and the default image is
// missing: build it now. Yes unless the answer is no.
int OfferImage(const Node& node) {
  if (node.config().Get("node.sandbox.role") != "true") return kExitOk;
  std::optional<std::string> image = node.ImageToBuild();
  if (!image) return kExitOk;
  for (;;) {
    std::cout << "Build the agent image " << *image << " now? [Y/n] " << std::flush;
    std::string line;
    if (!std::getline(std::cin, line)) line = "n";
    if (line.empty() || line == "y" || line == "Y" || line == "yes") return BuildImage(node);
    if (line == "n" || line == "N" || line == "no") {
      std::cout << "Not built; sessions need it: build it with `mojoup-node image build`.\n";
      return kExitOk;
    }
    std::cout << "  answer y or n\n";
  }
}

// Enables and starts the sandbox service's systemd unit (`user`, `system`),
// or nothing (`no`).
int EnableService(const std::string& kind) {
  if (kind == "no") return kExitOk;
  if (absl::Status enabled = EnableServiceUnit(kind); !enabled.ok()) {
    return PrintError("setup", enabled);
  }
  std::cout << "Enabled and started the " << kind << " sandbox service (mojoup-node.service).\n";
  return kExitOk;
}

// The wizard's offer of the sandbox service, when the role is on.
int OfferService(const Node& node) {
  if (node.config().Get("node.sandbox.role") != "true") return kExitOk;
  for (;;) {
    std::cout << "Run the sandbox service under systemd: user (for you alone), system (for every "
                 "allowed user), or no? [no] "
              << std::flush;
    std::string line;
    if (!std::getline(std::cin, line)) line = "no";
    if (line.empty() || line == "n" || line == "N") line = "no";
    if (line == "no" || line == "user" || line == "system") return EnableService(line);
    std::cout << "  answer user, system or no\n";
  }
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

  Changes changes;
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
    auto answers = Interview(*node);
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
  if (!interactive && !build_image) return service.empty() ? kExitOk : EnableService(service);
  // The node as it is now set up.
  NodeOptions node_options;
  node_options.config_path = path;
  auto node = Node::Open(std::move(node_options));
  if (!node.ok()) return PrintError("setup", node.status());
  const int built = build_image ? BuildImageAsked(*node) : OfferImage(*node);
  if (built != kExitOk) return built;
  if (!service.empty()) return EnableService(service);
  return interactive ? OfferService(*node) : kExitOk;
}

}  // namespace mojoup::cli

// mojoup-node setup: the setup wizard for the sandbox role.
#include <unistd.h>

#include <iostream>
#include <map>

#include "commands.h"

namespace mojoup::cli {
namespace {

constexpr std::string_view kUsage =
    "mojoup-node setup [--role on|off] [--runtime openshell|native] [--engine docker]\n"
    "                  [--allowed-users NAMES|*] [--config FILE]";

using Changes = std::map<std::string, std::optional<std::string>>;

// Asks until the answer is valid for `key` (an empty answer takes `fallback`).
// nullopt when stdin ends.
std::optional<std::string> Ask(const std::string& question, const std::string& key,
                               const std::string& fallback) {
  for (;;) {
    std::cout << question << " [" << fallback << "]: " << std::flush;
    std::string answer;
    if (!std::getline(std::cin, answer)) return std::nullopt;
    if (answer.empty()) answer = fallback;
    if (key == "node.sandbox.role") {
      if (answer == "y" || answer == "Y") answer = "yes";
      if (answer == "n" || answer == "N") answer = "no";
      if (auto on = policy::ParseSwitch(answer)) answer = *on ? "true" : "false";
    }
    absl::Status valid = policy::ValidateConfigValue(key, answer);
    if (valid.ok()) return answer;
    std::cout << "  " << valid.message() << "\n";
  }
}

// The wizard on a terminal: the verdict first, then one question per setting.
std::optional<Changes> Interview(const Node& node) {
  const policy::NodeConfig& config = node.config();
  probe::Report report = node.Doctor();
  std::cout << report.verdict.Line() << "\n";
  if (!report.verdict.can_sandbox) {
    std::cout << "(You can still set the node up; `mojoup-node doctor` shows every check.)\n";
  }
  std::cout << "\n";
  Changes changes;
  auto role = Ask("Run agents in per-session containers (the sandbox role)? yes/no",
                  "node.sandbox.role", config.Get("node.sandbox.role") == "false" ? "no" : "yes");
  if (!role) return std::nullopt;
  changes["node.sandbox.role"] = *role;
  if (*role == "false") return changes;
  struct Question {
    const char* text;
    const char* key;
    std::string fallback;
  };
  const Question questions[] = {
      {"Runtime: openshell (NVIDIA OpenShell) or native (Docker alone)", "node.sandbox.runtime",
       config.Get("node.sandbox.runtime").value_or("openshell")},
      {"Container engine", "node.sandbox.engine",
       config.Get("node.sandbox.engine").value_or("docker")},
      {"Who may run agents in this node's sandboxes? user names, comma-separated, or *",
       "node.sandbox.allowed_users",
       config.Get("node.sandbox.allowed_users").value_or(policy::CurrentUserName())},
  };
  for (const Question& q : questions) {
    auto answer = Ask(q.text, q.key, q.fallback);
    if (!answer) return std::nullopt;
    changes[q.key] = *answer;
  }
  return changes;
}

}  // namespace

int Setup(std::vector<std::string> args) {
  cxxopts::Options options("mojoup-node setup",
                           "Set the node up to run agents in per-session sandboxes.");
  options.add_options()("role", "the sandbox role: on or off", cxxopts::value<std::string>())(
      "runtime", "who builds the sandbox: openshell or native", cxxopts::value<std::string>())(
      "engine", "the container engine: docker", cxxopts::value<std::string>())(
      "allowed-users", "who may run agents in its sandboxes: names, comma-separated, or *",
      cxxopts::value<std::string>())("config", "node config file", cxxopts::value<std::string>());
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
  if (changes.empty()) {
    if (isatty(STDIN_FILENO) != 1) {
      return PrintError("setup",
                        "there is no terminal to ask on; give the answers as flags: --role on|off "
                        "--runtime openshell|native --engine docker --allowed-users NAMES|*");
    }
    NodeOptions node_options;
    node_options.config_path = path;
    auto node = Node::Open(std::move(node_options));
    if (!node.ok()) return PrintError("setup", std::string(node.status().message()));
    auto answers = Interview(*node);
    if (!answers) return PrintError("setup", "no answer; nothing was written");
    changes = *std::move(answers);
  }
  if (absl::Status done = policy::UpdateNodeConfig(path, changes); !done.ok()) {
    return PrintError("setup", std::string(done.message()));
  }
  std::cout << "Wrote " << path << ":\n";
  for (const auto& [key, value] : changes) std::cout << "  " << key << " = " << *value << "\n";
  return kExitOk;
}

}  // namespace mojoup::cli

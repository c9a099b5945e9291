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

}  // namespace

int Setup(std::vector<std::string> args) {
  cxxopts::Options options("mojoup-node setup",
                           "Set the node up to run agents in per-session sandboxes.");
  options.add_options()("role", "the sandbox role: on or off", cxxopts::value<std::string>())(
      "runtime", "who builds the sandbox: openshell or native", cxxopts::value<std::string>())(
      "engine", "the container engine: docker", cxxopts::value<std::string>())(
      "allowed-users", "who may run agents in its sandboxes: names, comma-separated, or *",
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
  if (changes.empty()) {
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
  if (absl::Status done = policy::UpdateNodeConfig(path, changes); !done.ok()) {
    return PrintError("setup", done, kExitUsage);
  }
  std::cout << "Wrote " << path << ":\n";
  for (const auto& [key, value] : changes) std::cout << "  " << key << " = " << *value << "\n";
  return kExitOk;
}

}  // namespace mojoup::cli

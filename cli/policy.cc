// mojoup-node policy explain
#include <iostream>

#include "commands.h"

namespace mojoup::cli {

int Policy(std::vector<std::string> args) {
  constexpr std::string_view kUsage =
      "mojoup-node policy explain [--repo DIR] [--host HOST[:PORT]] [--tool NAME] "
      "[--session ID] [--json] [--config FILE]";
  cxxopts::Options options("mojoup-node policy",
                           "Show the effective policy, where each value comes from, and the "
                           "decision this node would take now.");
  options.add_options()("repo", "the repository (default: the one holding this directory)",
                        cxxopts::value<std::string>())(
      "host", "also say whether a session may reach HOST[:PORT] (port 443 if not given)",
      cxxopts::value<std::string>())("tool",
                                     "the agent tool whose own service hosts count for --host",
                                     cxxopts::value<std::string>())(
      "session",
      "also the grants and denials the operator gave this live session of yours, with their "
      "source; they count for --host",
      cxxopts::value<std::string>())("json", "print one JSON object (schema mojoup.policy/v1)");
  cxxopts::ParseResult parsed;
  if (auto stop = Parse(options, std::string(kUsage), std::move(args), parsed, {"ACTION"})) {
    return *stop;
  }
  std::vector<std::string> words = FlagValues(parsed, "positional");
  if (words.size() != 1 || words[0] != "explain") {
    return PrintError("policy", "expected `explain`\nusage: " + std::string(kUsage));
  }
  int failed = kExitUsage;
  auto node = OpenNode("policy", parsed, failed);
  if (!node) return failed;
  ExplainRequest request;
  if (parsed.count("repo")) request.dir = parsed["repo"].as<std::string>();
  request.tool = FlagValue(parsed, "tool");
  request.host = FlagValue(parsed, "host");
  request.session = FlagValue(parsed, "session");
  if (parsed.count("session") > 0 && request.session.empty()) {
    return PrintError("policy", "--session expects a session's ID (mojoup-node status lists them)");
  }
  auto explained = node->Explain(request);
  if (!explained.ok()) return PrintError("policy", explained.status());
  std::cout << (parsed.count("json") ? explained->Json() : explained->Text());
  return kExitOk;
}

}  // namespace mojoup::cli

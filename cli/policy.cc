// mojoup-node policy explain
#include <iostream>

#include "commands.h"
#include "mojoup/policy/decision.h"
#include "mojoup/policy/explain.h"
#include "mojoup/policy/node_config.h"
#include "mojoup/probe/probe.h"

namespace mojoup::cli {

int Policy(std::vector<std::string> args) {
  constexpr std::string_view kUsage =
      "mojoup-node policy explain [--repo DIR] [--json] [--config FILE]";
  cxxopts::Options options("mojoup-node policy",
                           "Show the effective policy, where each value comes from, and the "
                           "decision this node would take now.");
  options.add_options()("repo", "the repository (default: the one holding this directory)",
                        cxxopts::value<std::string>())(
      "json", "print one JSON object (schema mojoup.policy/v1)")(
      "config", "node config file", cxxopts::value<std::string>());
  cxxopts::ParseResult parsed;
  if (auto stop = Parse(options, std::string(kUsage), std::move(args), parsed, {"ACTION"})) {
    return *stop;
  }
  std::vector<std::string> words;
  if (parsed.count("positional")) words = parsed["positional"].as<std::vector<std::string>>();
  if (words.size() != 1 || words[0] != "explain") {
    return Fail("policy", "expected `explain`\nusage: " + std::string(kUsage));
  }
  auto config = policy::NodeConfig::Load(ConfigPath(parsed));
  if (!config.ok()) return Fail("policy", config.status());

  policy::PolicyPaths paths;
  paths.repo_root =
      policy::FindRepoRoot(parsed.count("repo") ? parsed["repo"].as<std::string>() : ".");
  paths.repo = paths.repo_root + "/.mojoup/policy.json";
  paths.org = config->Get("policy.org").value_or("");
  paths.team = config->Get("policy.team").value_or("");
  auto effective = policy::LoadEffectivePolicy(paths);
  if (!effective.ok()) return Fail("policy", effective.status());

  probe::Report report = probe::ProbeSystem(policy::ProbeOptionsFor(*config));
  policy::Decision decision =
      policy::Decide(report.verdict, *config, *effective, policy::CurrentUserName());
  if (parsed.count("json")) {
    std::cout << policy::ExplainJson(*effective, decision);
  } else {
    std::cout << policy::ExplainText(*effective, decision);
  }
  return kExitOk;
}

}  // namespace mojoup::cli

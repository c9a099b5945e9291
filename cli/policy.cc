// mojoup-node policy explain
#include <iostream>

#include "commands.h"
#include "mojoup/internal/host_port.h"
#include "mojoup/policy/decision.h"
#include "mojoup/policy/explain.h"
#include "mojoup/policy/node_config.h"
#include "mojoup/probe/probe.h"

namespace mojoup::cli {
namespace {

// "api.github.com", "api.github.com:8443", "[fd00::7]:8080"
std::optional<std::pair<std::string, std::uint16_t>> ParseHostPort(const std::string& text) {
  auto parsed = internal::SplitHostPort(text, 443);
  if (!parsed || parsed->host.empty()) return std::nullopt;
  return std::make_pair(parsed->host, parsed->port);
}

}  // namespace

int Policy(std::vector<std::string> args) {
  constexpr std::string_view kUsage =
      "mojoup-node policy explain [--repo DIR] [--host HOST[:PORT]] [--tool NAME] [--json] "
      "[--config FILE]";
  cxxopts::Options options("mojoup-node policy",
                           "Show the effective policy, where each value comes from, and the "
                           "decision this node would take now.");
  options.add_options()("repo", "the repository (default: the one holding this directory)",
                        cxxopts::value<std::string>())(
      "host", "also say whether a session may reach HOST[:PORT] (port 443 if not given)",
      cxxopts::value<std::string>())(
      "tool", "the agent tool whose own service hosts count for --host",
      cxxopts::value<std::string>())("json", "print one JSON object (schema mojoup.policy/v1)")(
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
  std::optional<std::pair<std::string, std::uint16_t>> host;
  if (parsed.count("host")) {
    host = ParseHostPort(parsed["host"].as<std::string>());
    if (!host) {
      return Fail("policy", "--host expects HOST or HOST:PORT with a port from 1 to 65535");
    }
  }
  auto tool = ToolFlag("policy", parsed);
  if (!tool) return kExitUsage;
  int failed = kExitUsage;
  auto config = LoadConfig("policy", parsed, failed);
  if (!config) return failed;

  std::optional<std::string> repo = ".";
  if (parsed.count("repo")) {
    repo = DirectoryFlag("policy", "--repo", parsed["repo"].as<std::string>());
    if (!repo) return kExitUsage;
  }
  auto effective = policy::LoadEffectivePolicy(policy::PolicyPathsFor(*repo, *config));
  if (!effective.ok()) return Fail("policy", effective.status());

  probe::Report report = probe::ProbeSystem(policy::ProbeOptionsFor(*config));
  policy::Decision decision =
      policy::Decide(report.verdict, *config, *effective, policy::CurrentUserName());
  std::optional<policy::HostCheck> check;
  if (host) check = policy::CheckHost(*effective, *tool, host->first, host->second);
  if (parsed.count("json")) {
    std::cout << policy::ExplainJson(*effective, decision, check);
  } else {
    std::cout << policy::ExplainText(*effective, decision, check);
  }
  return kExitOk;
}

}  // namespace mojoup::cli

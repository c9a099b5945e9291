#include <cxxopts.hpp>
#include <iostream>

#include "commands.h"
#include "mojoup/policy/node_config.h"
#include "mojoup/probe/probe.h"

namespace mojoup::cli {

int Doctor(const std::string& program, std::vector<std::string> args) {
  cxxopts::Options options(program + " doctor",
                           "Say whether this machine can run agents in a sandbox, and why not.");
  options.add_options()("json", "print one JSON object (schema mojoup.doctor/v1)")(
      "config", "node config file", cxxopts::value<std::string>())("h,help", "show this help");
  std::vector<char*> argv{const_cast<char*>("doctor")};
  for (std::string& arg : args) argv.push_back(arg.data());
  cxxopts::ParseResult parsed;
  try {
    parsed = options.parse(static_cast<int>(argv.size()), argv.data());
    if (!parsed.unmatched().empty()) {
      throw std::invalid_argument("unexpected argument \"" + parsed.unmatched().front() + "\"");
    }
  } catch (const std::exception& e) {
    std::cerr << program << " doctor: " << e.what() << "\n"
              << "usage: " << program << " doctor [--json] [--config FILE]\n";
    return kExitUsage;
  }
  if (parsed.count("help")) {
    std::cout << options.help();
    return kExitOk;
  }
  const std::string config_path =
      parsed.count("config") ? parsed["config"].as<std::string>() : policy::DefaultConfigPath();
  auto config = policy::NodeConfig::Load(config_path);
  if (!config.ok()) {
    std::cerr << program << " doctor: " << config.status().message() << "\n";
    return kExitUsage;
  }
  probe::Report report = probe::ProbeSystem(policy::ProbeOptionsFor(*config));
  if (parsed.count("json")) {
    std::cout << probe::ReportToJson(report);
  } else {
    std::cout << probe::ReportToText(report, UseColor(1));
  }
  std::cout.flush();
  return report.verdict.can_sandbox ? kExitOk : kExitNotPossible;
}

}  // namespace mojoup::cli

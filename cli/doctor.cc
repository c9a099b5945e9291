#include <iostream>

#include "commands.h"
#include "mojoup/policy/node_config.h"
#include "mojoup/probe/probe.h"

namespace mojoup::cli {

int Doctor(std::vector<std::string> args) {
  cxxopts::Options options("mojoup-node doctor",
                           "Say whether this machine can run agents in a sandbox, and why not.");
  options.add_options()("json", "print one JSON object (schema mojoup.doctor/v1)")(
      "config", "node config file", cxxopts::value<std::string>());
  cxxopts::ParseResult parsed;
  if (auto stop =
          Parse(options, "mojoup-node doctor [--json] [--config FILE]", std::move(args), parsed)) {
    return *stop;
  }
  int failed = kExitUsage;
  auto config = LoadConfig("doctor", parsed, failed);
  if (!config) return failed;
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

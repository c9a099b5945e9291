#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "commands.h"

namespace mojoup::cli {

int Doctor(std::vector<std::string> args) {
  cxxopts::Options options("mojoup-node doctor",
                           "Say whether this machine can run agents in a sandbox, and why not.");
  options.add_options()("json", "print one JSON object (schema mojoup.doctor/v1)");
  cxxopts::ParseResult parsed;
  if (auto stop =
          Parse(options, "mojoup-node doctor [--json] [--config FILE]", std::move(args), parsed)) {
    return *stop;
  }
  int failed = kExitUsage;
  auto node = OpenNode("doctor", parsed, failed);
  if (!node) return failed;
  probe::Report report = node->Doctor();
  // Colour only on a terminal and never when NO_COLOR is set.
  const char* no_color = std::getenv("NO_COLOR");
  const bool color = (no_color == nullptr || *no_color == '\0') && isatty(1) == 1;
  std::cout << (parsed.count("json") ? probe::ReportToJson(report)
                                     : probe::ReportToText(report, color))
            << std::flush;
  return report.verdict.can_sandbox ? kExitOk : kExitNotPossible;
}

}  // namespace mojoup::cli

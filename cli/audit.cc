// mojoup-node audit: a session's audit, as its lines or as OCSF events.
#include <charconv>
#include <iostream>

#include "commands.h"
#include "mojoup/sandbox/audit_ocsf.h"

namespace mojoup::cli {
namespace {

// The line as written, or its OCSF event; false (after saying why) when
// the line has no OCSF view.
bool PrintLine(const sandbox::AuditLine& line, bool ocsf) {
  if (!ocsf) {
    std::cout << line.text << '\n';
  } else if (auto event = sandbox::AuditLineToOcsf(line); event.ok()) {
    std::cout << *event << '\n';
  } else {
    PrintError("audit", event.status());
    return false;
  }
  std::cout.flush();
  return !std::cout.fail();
}

}  // namespace

int Audit(std::vector<std::string> args) {
  constexpr std::string_view kUsage = "mojoup-node audit SESSION [--follow] [--since SEQ] [--ocsf]";
  cxxopts::Options options("mojoup-node audit",
                           "Print a session's audit: one JSON line per event (mojoup.audit/v1).");
  options.add_options()("follow", "print lines as they are written, until the session ends")(
      "since", "only the lines after line SEQ", cxxopts::value<std::string>())(
      "ocsf", "print each line as an OCSF 1.8 event");
  cxxopts::ParseResult parsed;
  if (auto stop = Parse(options, std::string(kUsage), std::move(args), parsed, {"session"})) {
    return *stop;
  }
  const std::vector<std::string> ids = FlagValues(parsed, "positional");
  if (ids.size() != 1) return PrintError("audit", "give one session ID");
  std::uint64_t since = 0;
  if (const std::string text = FlagValue(parsed, "since"); !text.empty()) {
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), since);
    if (error != std::errc() || end != text.data() + text.size()) {
      return PrintError("audit", "--since \"" + text + "\" is not a line number (0 or more)");
    }
  }
  const bool ocsf = parsed.count("ocsf") > 0;
  int failed = kExitUsage;
  auto node = OpenNode("audit", parsed, failed);
  if (!node) return failed;
  bool printed = true;
  auto print = [&](const sandbox::AuditLine& line) { return printed = PrintLine(line, ocsf); };
  absl::Status status;
  if (parsed.count("follow") > 0) {
    status = node->FollowAudit(ids[0], since, print);
  } else if (auto lines = node->Audit(ids[0], since); lines.ok()) {
    for (const sandbox::AuditLine& line : *lines) {
      if (!print(line)) break;
    }
  } else {
    status = lines.status();
  }
  if (!status.ok()) return PrintError("audit", status);
  return printed ? kExitOk : kExitNotPossible;
}

}  // namespace mojoup::cli

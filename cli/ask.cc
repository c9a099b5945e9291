// mojoup-node approvals, approve, deny: the operator's answers to requests
// a session holds for them (ask).
#include <iostream>

#include "commands.h"
#include "fmt/format.h"

namespace mojoup::cli {
namespace {

std::string Table(const std::vector<credproxy::ApprovalInfo>& approvals) {
  if (approvals.empty()) return "No approvals asked for.\n";
  std::string out = fmt::format("{:<17} {:>3}  {:<8} {:<30} {:<8} {:<21} {}\n", "SESSION", "ID",
                                "STATE", "DESTINATION", "METHOD", "ASKED", "DECIDED");
  for (const credproxy::ApprovalInfo& a : approvals) {
    std::string decided = a.by;
    if (!a.scope.empty()) decided += " (" + a.scope + ")";
    if (!a.reason.empty()) decided += ": " + a.reason;
    out += fmt::format("{:<17} {:>3}  {:<8} {:<30} {:<8} {:<21} {}\n", a.session, a.id, a.state,
                       fmt::format("{}:{}", a.host, a.port), a.method, a.requested, decided);
  }
  return out;
}

}  // namespace

int Approvals(std::vector<std::string> args) {
  cxxopts::Options options(
      "mojoup-node approvals",
      "The requests sessions hold for your answer, and how they were answered.");
  options.add_options()("json", "print one JSON object (schema mojoup.approvals/v1)")(
      "propose", "print the policy rules that would keep what was approved, to commit by hand");
  cxxopts::ParseResult parsed;
  if (auto stop = Parse(options, "mojoup-node approvals [SESSION] [--json | --propose]",
                        std::move(args), parsed, {"session"})) {
    return *stop;
  }
  std::vector<std::string> sessions = FlagValues(parsed, "positional");
  if (sessions.size() > 1) return PrintError("approvals", "give at most one SESSION");
  if (parsed.count("json") > 0 && parsed.count("propose") > 0) {
    return PrintError("approvals", "give --json or --propose, not both");
  }
  int failed = kExitUsage;
  auto node = OpenNode("approvals", parsed, failed);
  if (!node) return failed;
  auto list = node->Approvals(sessions.empty() ? "" : sessions[0]);
  if (!list.ok()) return PrintError("approvals", list.status());
  if (parsed.count("propose") > 0) {
    std::cout << credproxy::ProposedPolicy(list->approvals) << "\n";
  } else {
    std::cout << (parsed.count("json") ? credproxy::ApprovalsJson(*list) + "\n"
                                       : Table(list->approvals));
  }
  return kExitOk;
}

namespace {

// approve and deny: SESSION ID, then the decision.
int Decide(std::string_view command, bool approve, std::vector<std::string> args) {
  const std::string name(command);
  cxxopts::Options options("mojoup-node " + name,
                           approve ? "Let a held request, and its retries, through."
                                   : "Refuse a held request, and every later one to its host "
                                     "and port in this session.");
  if (approve) {
    options.add_options()("scope",
                          "once: this request only; session: every request to this host and "
                          "port until the session ends",
                          cxxopts::value<std::string>());
  } else {
    options.add_options()("reason", "why, for the agent (at most 500 bytes)",
                          cxxopts::value<std::string>());
  }
  cxxopts::ParseResult parsed;
  const std::string usage = approve ? "mojoup-node approve SESSION ID [--scope once|session]"
                                    : "mojoup-node deny SESSION ID [--reason TEXT]";
  if (auto stop = Parse(options, usage, std::move(args), parsed, {"session", "id"})) return *stop;
  std::vector<std::string> words = FlagValues(parsed, "positional");
  if (words.size() != 2) return PrintError(command, "give the SESSION and the approval's ID");
  std::optional<credproxy::ApprovalScope> scope = credproxy::ApprovalScope::kOnce;
  if (approve && parsed.count("scope") > 0) {
    scope = credproxy::ApprovalScopeNamed(FlagValue(parsed, "scope"));
  }
  if (!scope) {
    return PrintError(
        command, fmt::format("--scope {}: expected once or session", FlagValue(parsed, "scope")));
  }
  int failed = kExitUsage;
  auto node = OpenNode(command, parsed, failed);
  if (!node) return failed;
  auto decided = node->DecideApproval(words[0], words[1], approve, *scope,
                                      approve ? "" : FlagValue(parsed, "reason"));
  if (!decided.ok()) return PrintError(command, decided.status());
  std::cout << fmt::format("{} approval {} of session {}: {}:{}{}\n", decided->state, decided->id,
                           decided->session, decided->host, decided->port,
                           approve ? " (" + decided->scope + ")" : "");
  return kExitOk;
}

}  // namespace

int Approve(std::vector<std::string> args) { return Decide("approve", true, std::move(args)); }
int Deny(std::vector<std::string> args) { return Decide("deny", false, std::move(args)); }

}  // namespace mojoup::cli

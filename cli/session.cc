// mojoup-node run, status, stop: sessions in sandboxes.
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <set>

#include "commands.h"
#include "fmt/format.h"
#include "mojoup/sandbox/foreground.h"
#include "mojoup/service/anywhere.h"

namespace mojoup::cli {
namespace {

// Where the first word of `args` that is not a flag nor a flag's value is:
// where a command starts when its `--` was forgotten. args.size() when none.
std::size_t FirstCommandWord(const std::vector<std::string>& args) {
  static const std::set<std::string, std::less<>> kTakesValue = {
      "--repo", "--tool", "--credential", "--resolve", "--upstream-ca", "--audit", "--config"};
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].empty() || args[i].front() != '-') return i;
    if (kTakesValue.count(args[i]) > 0) ++i;
  }
  return args.size();
}

// A policy a sandboxed session may have written: on a terminal, the user may
// say it is theirs. Whether to use it.
bool AcceptPolicy(const Node& node, const std::string& workdir, bool accept) {
  if (accept || !isatty(0) || !isatty(2)) return accept;
  std::optional<std::string> change = node.PolicyChanged(workdir);
  if (!change) return false;
  std::cerr << kProgram << ": " << *change << ".\n"
            << "The agent may have written it. Use this policy, as yours? [y/N] " << std::flush;
  std::string answer;
  std::getline(std::cin, answer);
  return answer == "y" || answer == "Y" || answer == "yes" || answer == "YES";
}

}  // namespace

int Run(std::vector<std::string> args) {
  constexpr std::string_view kUsage =
      "mojoup-node run [--repo DIR] [--tool NAME] [--credential NAME[=HOST,...]]...\n"
      "                [--resolve HOST:PORT:ADDR]... [--upstream-ca FILE] [--audit FILE]\n"
      "                [--accept-policy] [--detach] -- COMMAND [ARG...]";
  std::vector<std::string> command;
  if (auto dash = std::find(args.begin(), args.end(), "--"); dash != args.end()) {
    command.assign(dash + 1, args.end());
    args.erase(dash, args.end());
  } else if (std::size_t first = FirstCommandWord(args); first < args.size()) {
    // `run sh -c true`: cxxopts would complain of an option -c.
    std::string words;
    for (std::size_t i = first; i < args.size(); ++i) words += (words.empty() ? "" : " ") + args[i];
    return PrintError("run", fmt::format("\"{}\" looks like the command to run; put it after --: "
                                         "mojoup-node run [flags] -- {}",
                                         args[first], words));
  }
  cxxopts::Options options("mojoup-node run",
                           "Run COMMAND in a sandbox for this repository, as policy decides.");
  options.add_options()("repo", "the repository (default: the current directory)",
                        cxxopts::value<std::string>())(
      "tool", "the agent tool: its service hosts are allowed, its sign-in files staged",
      cxxopts::value<std::string>())(
      "credential", "NAME[=HOST,...]: keep $NAME outside, hand the sandbox a stand-in",
      cxxopts::value<std::vector<std::string>>())(
      "resolve", "HOST:PORT:ADDR: the proxy connects to ADDR for HOST:PORT",
      cxxopts::value<std::vector<std::string>>())(
      "upstream-ca", "PEM file of extra CAs to trust upstream", cxxopts::value<std::string>())(
      "audit", "append the session's audit lines (mojoup.audit/v1) to FILE as well",
      cxxopts::value<std::string>())(
      "accept-policy",
      "use the repository's policy although it changed while a sandboxed session ran: the "
      "change is yours")("detach",
                         "start the session in the sandbox service and print its id; "
                         "`mojoup-node attach ID` reattaches");
  cxxopts::ParseResult parsed;
  if (auto stop = Parse(options, std::string(kUsage), std::move(args), parsed)) return *stop;
  if (command.empty()) return PrintError("run", "give the command to run after --");
  int failed = kExitUsage;
  auto node = OpenNode("run", parsed, failed);
  if (!node) return failed;

  RunRequest request;
  request.workdir = parsed.count("repo") ? parsed["repo"].as<std::string>() : ".";
  request.tool = FlagValue(parsed, "tool");
  request.command = std::move(command);
  request.credentials = FlagValues(parsed, "credential");
  request.resolve = FlagValues(parsed, "resolve");
  request.upstream_ca = FlagValue(parsed, "upstream-ca");
  request.audit_file = FlagValue(parsed, "audit");
  request.accept_policy = AcceptPolicy(*node, request.workdir, parsed.count("accept-policy") > 0);
  request.terminal = isatty(0) && isatty(1);
  request.terminal_input = isatty(0);

  sandbox::BlockForegroundSignals();
  // A reader of run's output that goes away is EPIPE on the write, never
  // the end of run: the session ends and is cleaned up (the command gets
  // SIGPIPE). A handler, not SIG_IGN, so the commands run starts get the
  // default back at exec.
  struct sigaction pipe_action {};
  pipe_action.sa_handler = [](int) {};
  sigemptyset(&pipe_action.sa_mask);
  sigaction(SIGPIPE, &pipe_action, nullptr);
  // The sandbox service runs the session when one answers; the same
  // session, exit code, signals and terminal either way.
  const bool detach = parsed.count("detach") > 0;
  if (auto client = ServiceClient::Connect(); client.ok()) {
    if (auto code = RunThroughService(*client, request, detach)) return *code;
  } else if (detach) {
    return PrintError("run",
                      "--detach needs the node's sandbox service, and none answers; start it "
                      "with `mojoup-node serve` (README, \"The sandbox service\")",
                      kExitNotPossible);
  }
  auto launch = node->Start(std::move(request));
  if (!launch.ok()) return PrintError("run", launch.status());
  if (launch->run == nullptr) return kExitNotPossible;  // refused; the node said why
  absl::StatusOr<int> code = sandbox::RunInForeground(*launch->run);
  // What clean-up could not do was said as it happened; a command that
  // succeeded does not make run succeed when it left work undone.
  const sandbox::CloseReport closed = launch->run->Close();
  if (!code.ok()) return PrintError("run", code.status());
  const bool undone = !closed.errors.empty() || !closed.sign_in.errors.empty();
  return *code == kExitOk && undone ? kExitNotPossible : *code;
}

int Status(std::vector<std::string> args) {
  cxxopts::Options options("mojoup-node status",
                           "Whether this node can sandbox agents, and the sessions in sandboxes.");
  options.add_options()("json", "print one JSON object (schema mojoup.status/v1)");
  cxxopts::ParseResult parsed;
  if (auto stop =
          Parse(options, "mojoup-node status [--json] [--config FILE]", std::move(args), parsed)) {
    return *stop;
  }
  int failed = kExitUsage;
  auto node = OpenNode("status", parsed, failed);
  if (!node) return failed;
  probe::Report report = node->Doctor();
  std::vector<sandbox::SessionRecord> sessions;
  if (auto reaped = node->Reap(); !reaped.ok()) {
    std::cerr << kProgram << ": cannot look for leftovers: " << reaped.status().message() << "\n";
  } else {
    auto listed = node->Sessions();
    if (!listed.ok()) return PrintError("status", listed.status(), kExitNotPossible);
    sessions = *std::move(listed);
  }
  auto image = node->Image(&report);
  std::cout << (parsed.count("json") ? StatusJson(report.verdict, sessions, image)
                                     : StatusText(report.verdict, sessions, image));
  // The sessions the service runs are on record like any other; say it runs.
  if (!parsed.count("json")) {
    if (auto line = ServiceStatusLine()) std::cout << *line << "\n";
    if (auto gateway = node->config().Get("node.sandbox.openshell_gateway");
        gateway && node->config().Get("node.sandbox.openshell_remote").value_or("auto") != "no") {
      std::cout << "On the OpenShell gateway " << *gateway
                << ", if remote, this node cannot verify its log ring, its database rows or "
                   "operator-provided volumes: a session's traces there outlive it.\n";
    }
  }
  return kExitOk;
}

int Stop(std::vector<std::string> args) {
  cxxopts::Options options("mojoup-node stop",
                           "Stop sessions and remove their sandboxes and staging.");
  options.add_options()("all", "stop every session on this node");
  cxxopts::ParseResult parsed;
  if (auto stop = Parse(options, "mojoup-node stop ID | --all", std::move(args), parsed, {"id"})) {
    return *stop;
  }
  std::vector<std::string> ids = FlagValues(parsed, "positional");
  const bool all = parsed.count("all") > 0;
  if (!all && ids.size() != 1) return PrintError("stop", "give one session ID, or --all");
  if (all && !ids.empty()) return PrintError("stop", "give a session ID or --all, not both");
  int failed = kExitUsage;
  auto node = OpenNode("stop", parsed, failed);
  if (!node) return failed;
  auto reaped = node->Reap();
  if (!reaped.ok()) return PrintError("stop", reaped.status(), kExitNotPossible);
  if (!reaped->unreachable.empty()) std::cerr << kProgram << ": " << reaped->unreachable << "\n";
  if (all) {
    auto listed = node->Sessions();
    if (!listed.ok()) return PrintError("stop", listed.status(), kExitNotPossible);
    for (const sandbox::SessionRecord& record : *listed) ids.push_back(record.id);
  }
  int exit_code = kExitOk;
  auto service = ServiceClient::Connect();
  for (const std::string& id : ids) {
    auto left = StopSessionAnywhere(*node, service.ok() ? &*service : nullptr, id);
    if (!left.ok()) {
      exit_code = PrintError("stop", left.status(), kExitNotPossible);
      continue;
    }
    // Not stopped as asked: say what is left and why, and do not claim it.
    for (const std::string& message : *left) {
      exit_code = PrintError("stop", id + ": " + message, kExitNotPossible);
    }
    if (left->empty()) std::cout << "stopped " << id << "\n";
  }
  return exit_code;
}

}  // namespace mojoup::cli

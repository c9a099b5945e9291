// fake-openshell: a stand-in for NVIDIA OpenShell's `openshell` CLI whose
// sandboxes are real containers on the local dockerd (Engine API /v1.40).
//
// It reads its options from fake-openshell.json beside the name it was
// started by (see mojoup/sandbox/testing/fake_openshell_sandbox.h), appends
// its argv to openshell-calls.jsonl there, and then answers as the configured
// release of the real CLI and gateway would. A flag that release lacks is a
// clap error (exit 2); a real command or flag this double does not model is
// refused with exit 2 and says so, rather than pretending.
//
// Every call takes the global -g/--gateway NAME (or OPENSHELL_GATEWAY, or
// the active gateway file) and talks to that gateway (gateway_select.cc).
//
// Grammar, by release (from the CLI's clap definitions, v0.0.37 to v0.0.111;
// 0.1.x from release notes, see libsandbox/testing/FAKE_OPENSHELL.md):
//   --version | -V
//   status [-o json] (0.0.92+)             gateway info [-o json]
//   sandbox create [--name N] [--from IMAGE|NAME] [--policy FILE] [--label K=V]...
//                  [--provider P]...
//                  [--driver-config-json JSON]  0.0.58+ (Docker mounts: 0.0.61+)
//                  [--env K=V]...               0.0.59+
//                  [-o table|json]              0.0.92+, not with a command
//                  [--detach]                   0.0.111+
//                  [--tty|--no-tty] [-- CMD...]
//   sandbox list [--selector k=v,...] [-o json] (0.0.44+) [--limit N]
//                [--offset N] [--ids|--names]
//   sandbox get NAME [-o json] (0.0.92+)
//   sandbox exec -n NAME [--workdir D] [--timeout SECS] [--tty|--no-tty]
//                [--env K=V]... (0.0.59+) [--no-login-shell] (0.1.0+) [--] CMD...
//   sandbox delete NAME... | --all
//   sandbox upload NAME LOCAL [DEST] [--no-git-ignore]
//   sandbox download NAME SANDBOX_PATH [DEST]
//   sandbox stop [NAME]     sandbox start [NAME]      (driver kubernetes)
//   fake-openshell-restart-gateway   the fake's own hook (driver kubernetes)
//   provider create --name N --type T (--credential K[=V]... | --from-existing)
//                   [--config K=V]...
//   provider list [-o json] [--names] [--limit N] [--offset N]
//   provider get NAME            provider delete NAME...
//   policy update NAME --add-endpoint HOST:PORT... [--binary B]... [--rule-name R]
//                 [--wait] [--timeout SECS]  0.0.92+
//   logs NAME [-n N] [--source S]...         0.0.92+
//
// A sandbox is a container labelled openshell.ai/managed-by=openshell,
// openshell.ai/sandbox-name, openshell.ai/sandbox-id and
// openshell.ai/sandbox-namespace (one namespace per install directory, so
// fakes installed side by side are separate gateways). Its phase comes from
// the container's state (running: Ready, exited: Error, or Completed from
// 0.1.0 when the main process exited 0) unless the label
// fake-openshell.phase=Error pins it. Errors are miette reports of tonic
// Status text (errors.cc). Every behaviour names its source in a comment.

#include <signal.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {

constexpr std::string_view kHelp =
    "OpenShell CLI (fake-openshell, a test double backed by Docker)\n\n"
    "Usage: openshell <COMMAND>\n\n"
    "Commands:\n"
    "  sandbox  create | list | get | exec | delete | upload | download | stop | start\n"
    "  status   Gateway status\n"
    "  gateway  info\n"
    "  fake-openshell-restart-gateway  (the fake's test hook) recreate every pod\n\n"
    "Options:\n"
    "  -V, --version  Print version\n"
    "  -h, --help     Print help\n";

int SandboxCommand(const Context& ctx, const std::vector<std::string>& argv) {
  if (argv.size() < 3) {
    std::fputs("Usage: openshell sandbox <COMMAND>\n", stderr);
    return 2;
  }
  const std::string& sub = argv[2];
  if (sub == "create") return SandboxCreate(ctx, argv);
  if (sub == "list") return SandboxList(ctx, argv);
  if (sub == "get") return SandboxGet(ctx, argv);
  if (sub == "exec") return SandboxExec(ctx, argv);
  if (sub == "delete") return SandboxDelete(ctx, argv);
  if (sub == "upload") return SandboxUpload(ctx, argv);
  if (sub == "download") return SandboxDownload(ctx, argv);
  if (sub == "stop") return SandboxStop(ctx, argv);
  if (sub == "start") return SandboxStart(ctx, argv);
  for (std::string_view real : {"connect", "ssh-config", "provider"}) {
    // `sandbox provider attach|detach` on a live sandbox is not modelled.
    if (sub == real) return NotModelled(fmt::format("`sandbox {}`", sub));
  }
  return ClapError(fmt::format("unrecognized subcommand '{}'", sub), "openshell sandbox <COMMAND>");
}

int Run(const Context& ctx, const std::vector<std::string>& argv) {
  if (argv.size() < 2) {
    std::fputs(kHelp.data(), stderr);
    return 2;
  }
  const std::string& command = argv[1];
  if (command == "-V" || command == "--version") {
    Print(fmt::format("openshell {}\n", ctx.options.version));
    return 0;
  }
  if (command == "-h" || command == "--help") {
    Print(kHelp);
    return 0;
  }
  if (command == "status") return Status(ctx, argv);
  // The fake's own test hook, not an OpenShell command.
  if (command == "fake-openshell-restart-gateway") return RestartGateway(ctx, argv);
  if (command == "sandbox") return SandboxCommand(ctx, argv);
  if (command == "provider") return ProviderCommand(ctx, argv);
  if (command == "gateway") {
    if (argv.size() >= 3 && argv[2] == "info") return GatewayInfo(ctx, argv);
    return NotModelled("`gateway` other than `gateway info`");
  }
  // `logs` and `policy update`, as the openshell runtime uses them, from
  // the first release whose sources they were checked against.
  if (command == "logs" && ctx.version >= Release(92)) return Logs(ctx, argv);
  if (command == "policy" && ctx.version >= Release(92) && argv.size() >= 3 &&
      argv[2] == "update") {
    return PolicyUpdate(ctx, argv);
  }
  for (std::string_view real :
       {"forward", "service", "logs", "policy", "settings", "rule", "workspace", "whoami",
        "inference", "doctor", "term", "completions", "ssh-proxy"}) {
    if (command == real) return NotModelled(fmt::format("`{}`", command));
  }
  return ClapError(fmt::format("unrecognized subcommand '{}'", command),
                   "openshell [OPTIONS] <COMMAND>");
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  if (args.empty()) args.emplace_back("openshell");
  const std::string dir = ProgramDir(args[0]);
  LogCall(dir, args);
  // A reader that goes away must not kill us mid-copy.
  ::signal(SIGPIPE, SIG_IGN);

  Context ctx;
  std::string error;
  if (!dir.empty() && !LoadOptions(dir, ctx.options, error)) {
    fmt::print(stderr, "fake-openshell: {}\n", error);
    return 2;
  }
  ctx.version = ParseVersion(ctx.options.version);
  ctx.gateway_version =
      ctx.options.gateway_version.empty() ? ctx.version : ParseVersion(ctx.options.gateway_version);
  SetReleaseForErrors(ctx.version);
  ctx.namespace_name = NamespaceFor(dir);
  ctx.dir = dir;
  std::string flag_error;
  const std::optional<std::string> flag = TakeGatewayFlag(args, flag_error);
  if (!flag_error.empty()) return ClapError(flag_error, "openshell [OPTIONS] <COMMAND>");
  // The commands this double plays resolve the gateway (main.rs
  // resolve_gateway); `status` reports one that does not as not configured.
  const std::string command = args.size() >= 2 ? args[1] : "";
  for (std::string_view resolving :
       {"status", "sandbox", "provider", "gateway", "logs", "policy"}) {
    if (command != resolving) continue;
    if (std::optional<std::string> unknown = SelectGateway(ctx, flag)) {
      if (command != "status") return PrintError(*unknown);
      ctx.gateway_name.clear();
    } else if (ctx.gateway_name != ctx.options.gateway_name) {
      return NotModelled(fmt::format("the gateway '{}' (this double plays '{}')", ctx.gateway_name,
                                     ctx.options.gateway_name));
    }
  }
  return Run(ctx, args);
}

}  // namespace mojoup::fake_openshell

int main(int argc, char** argv) { return mojoup::fake_openshell::Main(argc, argv); }

// `sandbox delete NAME... | --all`.

#include <cerrno>
#include <limits>
#include <string>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {

int SandboxDelete(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{.usage = "openshell sandbox delete <NAME>...",
                        .flags = {{.name = "all"}},
                        .max_positionals = std::numeric_limits<std::size_t>::max()};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  if (args.Has("all") && !args.positionals.empty()) {
    return ClapError("the argument '--all' cannot be used with '<NAME>...'", grammar.usage);
  }
  if (!args.Has("all") && args.positionals.empty()) {
    return ClapError("the following required arguments were not provided:\n  <NAME>...",
                     grammar.usage);
  }
  if (auto code = GatewayRefuses(ctx)) return *code;
  std::string error;
  auto docker = ConnectDocker(error);
  if (!docker) return NoDocker(error);
  std::vector<std::string> names = args.positionals;
  if (args.Has("all")) {
    auto sandboxes = ListSandboxes(*docker, ctx, {}, error);
    if (!sandboxes) return PrintError(GrpcError("Internal", error));
    if (sandboxes->empty()) {
      Print("No sandboxes to delete.\n");
      return 0;
    }
    for (const Sandbox& sandbox : *sandboxes) names.push_back(sandbox.name);
  }
  // In order; the first that is missing ends the command, as in the CLI.
  for (const std::string& name : names) {
    auto sandbox = FindSandbox(*docker, ctx, name, error);
    if (!error.empty()) return PrintError(GrpcError("Internal", error));
    if (!sandbox) return NotFound();
    DockerReply reply =
        docker->Call("DELETE", "/containers/" + sandbox->container + "?force=1&v=1");
    if (!Answered(reply, {204, 404, 409})) return DockerFailed("remove Docker container", reply);
    // The Kubernetes driver's delete takes the workspace PVC with the
    // sandbox (v0.0.111 driver.rs delete_sandbox; the claim belongs to the
    // Sandbox resource); operators' claims stay.
    if (!RemoveSandboxVolumes(*docker, ctx, *sandbox, error)) {
      return PrintError(GrpcError("Internal", error));
    }
    Print(fmt::format("✓ Deleted sandbox {}\n", name));
  }
  return 0;
}

}  // namespace mojoup::fake_openshell

// Probe: can this machine run agents in a sandbox, and if not, why?
//
// Probe() runs every host check (report.h lists their ids) and returns a
// Report with a verdict. Checks that leave the process run concurrently, and
// each has a deadline, so the whole probe finishes in about `timeout` even
// when Docker or the OpenShell gateway hangs. Checks that change task state
// (the seccomp listener test) run only in a forked child.
//
//   mojoup::probe::ProbeOptions options;
//   options.require_openshell = false;  // the native runtime needs no OpenShell
//   mojoup::probe::Report report = mojoup::probe::ProbeSystem(options);
//   if (!report.verdict.can_sandbox) std::cerr << report.verdict.Line() << "\n";
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "mojoup/probe/command_runner.h"
#include "mojoup/probe/docker_api.h"
#include "mojoup/probe/kernel.h"
#include "mojoup/probe/minimums.h"
#include "mojoup/probe/openshell_cli.h"
#include "mojoup/probe/report.h"

namespace mojoup::probe {

struct ProbeOptions {
  // The `openshell` binary (node.sandbox.openshell_path); else PATH is searched.
  std::optional<std::string> openshell_path;
  // The openshell runtime needs the CLI and its gateway; the native one does not.
  bool require_openshell = true;
  // The gateway every `openshell` call names (node.sandbox.openshell_gateway,
  // `-g NAME`); empty: the CLI's own choice.
  std::string openshell_gateway;
  // Whether that gateway shares no filesystem with this node
  // (node.sandbox.openshell_remote yes/no); nullopt: what its metadata's
  // is_remote says. A remote gateway is checked by what a user can see (its
  // status, metadata and credentials), not by the local gateway.toml.
  std::optional<bool> openshell_remote;
  // Deadline for each check that waits on the outside world.
  std::chrono::milliseconds timeout{2000};
};

// The seams the probe talks through. All three must outlive the call.
struct Host {
  Kernel& kernel;
  DockerApi& docker;
  CommandRunner& commands;
};

Report Probe(const ProbeOptions& options, Host host);

// Probe() against the running kernel, the real Docker endpoint and real programs.
Report ProbeSystem(const ProbeOptions& options);

// What the probe learnt about WSL: version 0 means not WSL.
struct WslInfo {
  int version = 0;
  // "nat", "mirrored", "consomme", ... from `wslinfo --networking-mode`, when it answers.
  std::optional<std::string> networking_mode;
};
WslInfo DetectWsl(Kernel& kernel, CommandRunner& commands, std::chrono::milliseconds timeout);

// The individual checks, in verdict order; Probe() runs them all. Each returns
// one Check with its id set; Probe() fills in the durations.
Check CheckOsLinux(Kernel& kernel);
Check CheckLandlock(Kernel& kernel);
Check CheckSeccomp(Kernel& kernel);
// `seccomp` is CheckSeccomp's result: without seccomp the slot is not tested.
Check CheckSeccompListener(Kernel& kernel, const Check& seccomp, const WslInfo& wsl,
                           std::chrono::milliseconds timeout);
Check CheckWsl(const WslInfo& wsl);
Check CheckDocker(Kernel& kernel, DockerApi& docker, std::chrono::milliseconds timeout);
// Both OpenShell checks: the CLI, then its gateway (skipped without a usable CLI).
std::pair<Check, Check> CheckOpenShell(Kernel& kernel, CommandRunner& commands,
                                       const ProbeOptions& options);

}  // namespace mojoup::probe

// A fake `openshell` whose sandbox commands are real Docker containers, for
// testing the OpenShell runtime end to end without an OpenShell gateway.
//
// The program is `fake-openshell` (built into bin/). It speaks the real CLI's
// grammar for `--version`, `status`, `gateway info` and `sandbox create |
// list | get | exec | delete` as of the configured version (a flag that
// version lacks is a clap-style error, exit 2), and backs each sandbox with a
// container on the local dockerd labelled the way OpenShell's Docker driver
// labels them. InstallFakeOpenShellSandbox() puts it in a directory as
// `openshell` with its options beside it; anything that runs `openshell` from
// there (PATH or a full path) meets it.
//
//   FakeOpenShellSandboxOptions options;
//   options.version = "0.0.110";
//   std::string log = InstallFakeOpenShellSandbox(dir, bin_dir + "/fake-openshell", options);
//   // or, with the installed package: InstallFakeOpenShellSandbox(dir, options)
//   // run the code under test with PATH=dir:$PATH, then read `log`:
//   // one JSON array per invocation, the full argv (argv[0] as it was given).
//
// Each install directory is its own gateway: sandboxes created through one
// directory are invisible to the fake installed in another (they carry the
// label openshell.ai/sandbox-namespace derived from the directory), so tests
// running side by side do not see or delete each other's sandboxes.
#pragma once

#include <stdexcept>
#include <string>

#include "mojoup/sandbox/testing/programs.h"

namespace mojoup::sandbox::testing {

struct FakeOpenShellSandboxOptions {
  // What `openshell --version` prints ("openshell 0.0.111"); also selects the
  // grammar and the create semantics of that release.
  std::string version = "0.0.111";
  // `status -o json`: connected | connected_http | error | disconnected |
  // not_configured | unreachable | unauthenticated. Only connected and
  // connected_http let sandbox commands through; the others fail them with
  // that state's error (exit 1).
  std::string gateway = "connected";
  // The gateway config's [openshell.drivers.docker] enable_bind_mounts.
  bool enable_bind_mounts = true;
  // Non-empty: `sandbox create` fails with this message, exit 1.
  std::string fail_create;
  // Create succeeds but the sandbox is in phase Error.
  bool phase_error = false;
  // The Docker network sandboxes join (a bridge, created if missing);
  // host.openshell.internal is its gateway address.
  std::string network = "openshell";
};

// Writes DIR/openshell (a symlink to `fake_binary`) and DIR/fake-openshell.json
// (the options), creates the invocation log DIR/openshell-calls.jsonl (mode
// 0666, for code under test that runs as another user) and returns its path.
// Throws std::runtime_error when it cannot.
std::string InstallFakeOpenShellSandbox(const std::string& dir, const std::string& fake_binary,
                                        const FakeOpenShellSandboxOptions& options);

// The same with the fake-openshell that FindTestingProgram() finds (in the
// package's libexec/mojoup/, or beside this program in a build tree).
inline std::string InstallFakeOpenShellSandbox(const std::string& dir,
                                               const FakeOpenShellSandboxOptions& options) {
  std::string fake = FindTestingProgram("fake-openshell");
  if (fake.empty()) {
    throw std::runtime_error(
        "no fake-openshell program found (set MOJOUP_TESTING_PROGRAMS to its directory)");
  }
  return InstallFakeOpenShellSandbox(dir, fake, options);
}

}  // namespace mojoup::sandbox::testing

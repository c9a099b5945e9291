// The openshell runtime on a remote gateway, which shares no filesystem
// with the node: nothing is mounted. The repository goes in as a copy, with
// its git directory, at its own path (`sandbox upload`), and the staged home
// with it; one exec checks it arrived whole and writable. At the end, what
// the session did comes back only as a bundle of its refs and a patch of its
// work tree, checked on the host before anything is applied
// (remote/repo_return.h).
//
//   auto copy = SendRepository(cli, name, spec, "prod");
//   ...
//   auto said = BringBackRepository(cli, name, *copy, "prod");
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "mojoup/sandbox/backend.h"
#include "runtime/openshell/openshell_cli.h"

namespace mojoup::sandbox {

// What a remote sandbox holds of the host, and where its work comes back.
struct RemoteCopy {
  std::string session;
  std::string repo;          // the host repository's top, the same path inside
  std::string baseline;      // the host's work tree (WorkTreeId) when it was sent
  std::string workspace;     // the sandbox's working directory, where files come back from
  std::string download_dir;  // host: private, in the session's directory
  std::string keep_dir;      // host: where what is not applied is kept
};

// Sends the repository and the staged home, and checks, in one exec, that
// the repository is there, writable and as it was sent. Fails in one
// sentence naming the gateway when it is not; the caller removes the
// sandbox.
absl::StatusOr<RemoteCopy> SendRepository(OpenShellCli& cli, const std::string& name,
                                          const SandboxSpec& spec, const std::string& gateway);

// Runs the return command in the sandbox, downloads its bundle and patch
// and hands them to ImportReturn: one sentence saying what came back.
absl::StatusOr<std::string> BringBackRepository(OpenShellCli& cli, const std::string& name,
                                                const RemoteCopy& copy, const std::string& gateway);

// "the OpenShell gateway NAME" or "the OpenShell gateway" when none is named.
std::string GatewayWords(const std::string& gateway);

}  // namespace mojoup::sandbox

// The native runtime: one Docker container per session, through the Docker
// Engine API (never the docker CLI).
//
// The container has no network (NetworkMode none), drops every capability,
// runs with no-new-privileges, pids and memory limits, a private /tmp, as
// the caller's uid:gid, with docker-init as PID 1 (signals reach the
// command, zombies are reaped). Its entrypoint is our static supervisor,
// mounted read-only: it bridges 127.0.0.1:3128 to the session proxy's
// socket, applies Landlock (writes only where SandboxSpec::writable says)
// and a seccomp deny-list, then execs the command.
//
//   auto endpoint = probe::ResolveDockerEndpoint(*kernel);
//   std::unique_ptr<Backend> docker = MakeNativeBackend(*endpoint);
#pragma once

#include <chrono>
#include <memory>

#include "mojoup/probe/docker_api.h"
#include "mojoup/sandbox/backend.h"

namespace mojoup::sandbox {

struct NativeBackendOptions {
  // Deadline for each Engine API call (create, start, remove, ...).
  std::chrono::milliseconds api_timeout{30000};
  // After the command's output ends, how long it may take to exit before it
  // is killed.
  std::chrono::milliseconds exit_timeout{10000};
};

std::unique_ptr<Backend> MakeNativeBackend(probe::DockerEndpoint endpoint,
                                           std::unique_ptr<probe::DockerApi> api = nullptr,
                                           NativeBackendOptions options = {});

}  // namespace mojoup::sandbox

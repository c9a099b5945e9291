// The proxy bridge: inside a container without a network (`--network none`),
// programs reach the credential proxy at an ordinary TCP address
// (HTTPS_PROXY=http://127.0.0.1:3128) while the proxy itself listens on a unix
// socket bind-mounted into the container. The bridge relays bytes between the
// two, one fresh unix connection per TCP connection.
//
//   pid_t bridge = 0;
//   if (std::string error = StartBridge("127.0.0.1:3128", "/run/mojoup/proxy.sock", &bridge);
//       !error.empty())
//     Refuse(error);
//   execvp(...);  // the bridge lives until this process (whatever it execs) ends
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace mojoup::supervisor {

// Listens on `listen` ("ADDRESS:PORT", "[IPV6]:PORT"; port 0 picks a free one)
// in this process, so a taken port is reported here, then forks a child that
// accepts and relays to `socket_path` until the parent process ends (it gets
// SIGKILL then). The parent keeps no descriptor of the bridge's. On success
// returns an empty string and sets `*child` to the bridge's pid and, when
// `bound_port` is given, `*bound_port` to the port it listens on; else returns
// one sentence saying what failed, and no child was started.
//
// The bridge is this process's child, and so, after exec, the command's: a
// command that waits for all its children until none is left waits for the
// bridge too, which ends only with the command.
std::string StartBridge(const std::string& listen, const std::string& socket_path, pid_t* child,
                        std::uint16_t* bound_port = nullptr);

}  // namespace mojoup::supervisor

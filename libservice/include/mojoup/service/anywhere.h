// A node's sessions wherever they run: in the sandbox service, or started
// by a program in the foreground (Node::Start). What `mojoup-node stop` and
// `status` do, for any program that holds a Node.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "mojoup/sandbox/node.h"
#include "mojoup/service/client.h"

namespace mojoup {

// Stops session `id`: through `service` when it runs the session (its worker
// writes the sign-ins back as the session ends), else on `node`. What the
// stop could not clean up, one sentence each (empty: all gone); an error
// status when it could not stop the session at all.
absl::StatusOr<std::vector<std::string>> StopSessionAnywhere(Node& node, ServiceClient* service,
                                                             const std::string& id);

// "The sandbox service on SOCKET answers and runs N of your sessions.": a
// line for `status` when a service answers; nullopt when none does.
std::optional<std::string> ServiceStatusLine();

}  // namespace mojoup

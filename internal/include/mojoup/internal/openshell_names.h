// Names the `openshell` CLI takes, checked where the node config is read
// (libpolicy) and where the CLI's records are read (libprobe).
#pragma once

#include <string_view>

namespace mojoup::internal {

// A gateway name `openshell -g NAME` accepts and resolves: one path
// component (v0.0.111 crates/openshell-bootstrap/src/paths.rs
// validated_gateway_name: not empty, no '/', not "." or ".."), which clap
// takes as -g's value (no leading '-'), and which the active gateway file
// keeps as it is (metadata.rs read_nonempty_trimmed trims it: no leading or
// trailing space, no control character); at most 255 bytes, a directory
// name.
bool IsOpenShellGatewayName(std::string_view name);

}  // namespace mojoup::internal

// The refusals an OpenShell gateway gives, as cause and fix, shared by the
// doctor's openshell.gateway check and ExplainGatewayRefusal (openshell_cli.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mojoup::probe::internal {

struct GatewayRefusal {
  std::string cause;  // capitalised, no final period
  std::string fix;    // lowercase imperative, no final period
};

// `text` with the CLI's box-drawing characters dropped and whitespace runs
// collapsed to one space, so a message wrapped over lines reads as one.
std::string FlattenCliError(std::string_view text);

std::optional<GatewayRefusal> MatchGatewayRefusal(std::string_view text);

}  // namespace mojoup::probe::internal

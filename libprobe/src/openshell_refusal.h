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

// Each refusal this library has a sentence for, so a check that foresees one
// (the doctor reading gateway.toml) says the same words as the runtime that
// meets it.
enum class GatewayRefusalKind {
  kDriverConfigOff,    // allow_driver_config off (0.1.x)
  kBindMountsOff,      // enable_bind_mounts off (0.0.x and 0.1.x)
  kResourceAdmission,  // resource admission on: host binds refused (0.1.x)
  kMissingLabels,      // a volume without the admission labels (0.1.x)
  kStaleSandbox,       // created before the current admission settings (0.1.x)
  kLegacySchema,       // gateway.toml not `version = 2` (0.1.x will not start)
  kNewerSchema,        // gateway.toml `version` above 1 (0.0.x will not start)
  kNameNotDns,         // a sandbox name that is not a DNS-1123 label
  kNameTooLong,        // a sandbox name over 19 characters
  kUnimplemented,      // a call one side does not implement: a 0.0.x/0.1.x mix
};

// The refusal's cause and fix. With `config_path`, the words "gateway.toml"
// become that path, so the sentence names the file to edit.
GatewayRefusal GatewayRefusalOf(GatewayRefusalKind kind, std::string_view config_path = {});

// `text` with the CLI's box-drawing characters dropped and whitespace runs
// collapsed to one space, so a message wrapped over lines reads as one.
std::string FlattenCliError(std::string_view text);

std::optional<GatewayRefusal> MatchGatewayRefusal(std::string_view text);
std::optional<GatewayRefusalKind> MatchGatewayRefusalKind(std::string_view text);

}  // namespace mojoup::probe::internal

// What each OpenShell gateway refusal means, and the setting that lifts it.
// The texts are the gateway's own words; where each was read is noted by its
// rule. Facts and sources: libsandbox/testing/FAKE_OPENSHELL.md.
#include "openshell_refusal.h"

#include <array>
#include <regex>

#include "mojoup/probe/openshell_cli.h"

namespace mojoup::probe {
namespace internal {
namespace {

struct Rule {
  GatewayRefusalKind kind;
  // Any of these, in the flattened text, is this refusal.
  std::array<std::string_view, 3> texts;
  std::string_view cause;
  std::string_view fix;
};

// In the order the 0.1.2 gateway checks a create: driver config, then bind
// mounts, then admission. Each `texts` entry is matched as a substring.
const Rule kRules[] = {
    // 0.1.0+, openshell-core admission, check_driver_config (FAILED_PRECONDITION):
    // "caller driver config is disabled; a gateway administrator must enable
    // allow_driver_config". Driver-side variants start the same way.
    {GatewayRefusalKind::kDriverConfigOff,
     {"caller driver config is disabled"},
     "The OpenShell gateway refuses the sandbox's mounts because caller driver config is off "
     "(`allow_driver_config`, off by default since OpenShell 0.1.0)",
     "set `allow_driver_config = true` under `[openshell.drivers.docker]` in the gateway's "
     "gateway.toml and restart the gateway"},
    // 0.0.x and 0.1.x, openshell-driver-docker (v0.0.111 lib.rs:2076 and 610):
    // "docker bind mounts require enable_bind_mounts = true in [openshell.drivers.docker]",
    // "docker volume '<v>' is backed by a host bind mount and requires enable_bind_mounts = true
    // ...".
    {GatewayRefusalKind::kBindMountsOff,
     {"bind mounts require enable_bind_mounts", "requires enable_bind_mounts"},
     "The OpenShell gateway refuses host bind mounts because its Docker driver has "
     "`enable_bind_mounts` off",
     "set `enable_bind_mounts = true` under `[openshell.drivers.docker]` in the gateway's "
     "gateway.toml and restart the gateway"},
    // 0.1.0+, admission reject_unlabelable: "host bind or image mount cannot be attached
    // while resource admission is enabled: no trusted label resolver".
    {GatewayRefusalKind::kResourceAdmission,
     {"while resource admission is enabled", "no trusted label resolver"},
     "The OpenShell gateway refuses host bind mounts while resource admission is on, because it "
     "has no trusted label resolver for host paths",
     "set `enabled = false` under `[openshell.drivers.docker.resource_admission]` in the "
     "gateway's gateway.toml and restart the gateway"},
    // 0.1.0+, admission admit_labels: "external resource not admitted by required labels".
    {GatewayRefusalKind::kMissingLabels,
     {"not admitted by required labels"},
     "The OpenShell gateway's resource admission refuses a volume that lacks its approval labels",
     "label the volume `openshell.ai/sandbox-attachable=true` and "
     "`openshell.ai/sandbox-attachable-workspace=<workspace>`, or set `enabled = false` under "
     "`[openshell.drivers.docker.resource_admission]` and restart the gateway"},
    // 0.1.0+, admission check_config_provenance: "sandbox uses forbidden driver config or
    // lacks admission provenance; recreate it".
    {GatewayRefusalKind::kStaleSandbox,
     {"lacks admission provenance"},
     "The OpenShell gateway will not run this sandbox again: it was created before the gateway's "
     "current admission settings, or before OpenShell 0.1",
     "delete it with `openshell sandbox delete <name>` and create it again"},
    // 0.1.0+, `openshell-gateway config preflight` on a v1 file: "category=legacy_schema_v1"
    // (crates/openshell-server/src/cli.rs tests); docs/reference/gateway-config.mdx.
    {GatewayRefusalKind::kLegacySchema,
     {"category=legacy_schema_v1", "legacy schema-v1"},
     "The OpenShell gateway's gateway.toml is not schema `version = 2`, which OpenShell 0.1 "
     "gateways refuse to start with",
     "add `version = 2` under `[openshell]`, move driver settings under "
     "`[openshell.drivers.<name>]` (Docker's `sandbox_namespace` is now `sandbox_label`), and "
     "check the file with `openshell-gateway config preflight`"},
    // 0.0.x gateways refuse to start with a file whose `[openshell] version` is above 1:
    // "unsupported gateway config version {version}; this build only supports version 1"
    // (v0.0.92 and v0.0.111 crates/openshell-server/src/config_file.rs, load and
    // SCHEMA_VERSION = 1). A 0.1 file (`version = 2`) on a 0.0.x gateway, say.
    {GatewayRefusalKind::kNewerSchema,
     {"this build only supports version 1"},
     "The OpenShell gateway's gateway.toml declares a schema `version` above 1, which OpenShell "
     "0.0.x gateways refuse to start with",
     "remove `version` from `[openshell]` or set it to 1, or install OpenShell 0.1 for the CLI "
     "and the gateway"},
    // v0.0.111 grpc/validation.rs validate_dns1123_label (INVALID_ARGUMENT).
    {GatewayRefusalKind::kNameNotDns,
     {"name must contain only lowercase alphanumeric characters or hyphens",
      "name must not start or end with a hyphen", "name must not contain consecutive hyphens"},
     "OpenShell refuses sandbox names that are not DNS-1123 labels",
     "use only lowercase letters, digits and single hyphens, neither first nor last, at most 19 "
     "characters"},
    // Not read in OpenShell's words: a call one side does not implement is tonic's
    // UNIMPLEMENTED, which the CLI prints as "code: 'Operation is not implemented or not
    // supported'". 0.1.0 renamed RPC fields and methods (PR #3113 #3272 #3352), so a
    // 0.0.x/0.1.x mix is the likely cause; the exact text of a mix was not found.
    {GatewayRefusalKind::kUnimplemented,
     {"Operation is not implemented or not supported", "status: Unimplemented"},
     "The OpenShell gateway does not implement a call the CLI made, the sign of a 0.0.x CLI "
     "with a 0.1.x gateway or the reverse, which cannot be mixed",
     "install the CLI and the gateway from the same release (compare `openshell --version` with "
     "the `version` in `openshell status -o json`)"},
};

// v0.0.111 grpc/validation.rs:158: "name exceeds maximum length (<n> > 19)", INVALID_ARGUMENT.
// Matched by kLongName below, not by substring: other fields have length limits too.
const Rule kNameTooLong{GatewayRefusalKind::kNameTooLong,
                        {},
                        "OpenShell refuses sandbox names longer than 19 characters",
                        "use a name of at most 19 lowercase letters, digits and hyphens"};

const Rule& RuleOf(GatewayRefusalKind kind) {
  for (const Rule& rule : kRules) {
    if (rule.kind == kind) return rule;
  }
  return kNameTooLong;
}

// `text` with each "gateway.toml" replaced by `path`.
std::string NamingFile(std::string_view text, std::string_view path) {
  constexpr std::string_view kFile = "gateway.toml";
  std::string out(text);
  if (path.empty()) return out;
  for (std::size_t at = out.find(kFile); at != std::string::npos;
       at = out.find(kFile, at + path.size())) {
    out.replace(at, kFile.size(), path);
  }
  return out;
}

}  // namespace

std::string FlattenCliError(std::string_view text) {
  static constexpr std::string_view kBoxes[] = {"│", "├", "╰", "╭", "─", "▶", "×", "┬", "╮", "╯"};
  std::string out;
  out.reserve(text.size());
  bool space = true;  // drops leading whitespace
  std::size_t i = 0;
  while (i < text.size()) {
    bool box = false;
    for (std::string_view mark : kBoxes) {
      if (text.substr(i).starts_with(mark)) {
        i += mark.size();
        box = true;
        break;
      }
    }
    char c = box ? ' ' : text[i++];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (!space) out += ' ';
      space = true;
    } else {
      out += c;
      space = false;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::optional<GatewayRefusalKind> MatchGatewayRefusalKind(std::string_view text) {
  const std::string flat = FlattenCliError(text);
  for (const Rule& rule : kRules) {
    for (std::string_view needle : rule.texts) {
      if (needle.empty() || flat.find(needle) == std::string::npos) continue;
      return rule.kind;
    }
  }
  static const std::regex kLongName(R"((^|[^a-z_])name exceeds maximum length \(\d+ > 19\))");
  if (std::regex_search(flat, kLongName)) return GatewayRefusalKind::kNameTooLong;
  return std::nullopt;
}

std::optional<GatewayRefusal> MatchGatewayRefusal(std::string_view text) {
  std::optional<GatewayRefusalKind> kind = MatchGatewayRefusalKind(text);
  if (!kind) return std::nullopt;
  return GatewayRefusalOf(*kind);
}

GatewayRefusal GatewayRefusalOf(GatewayRefusalKind kind, std::string_view config_path) {
  const Rule& rule = RuleOf(kind);
  return GatewayRefusal{NamingFile(rule.cause, config_path), NamingFile(rule.fix, config_path)};
}

}  // namespace internal

std::optional<std::string> ExplainGatewayRefusal(std::string_view stderr_text) {
  std::optional<internal::GatewayRefusal> refusal = internal::MatchGatewayRefusal(stderr_text);
  if (!refusal) return std::nullopt;
  return refusal->cause + "; " + refusal->fix + ".";
}

}  // namespace mojoup::probe

// The gateway: `status`, `gateway info`, and whether it accepts gRPC calls
// from this CLI.
//
// Sources (NVIDIA/OpenShell): v0.0.111 crates/openshell-cli/src/commands/
// gateway.rs gateway_status, status_to_json, http_health_check; v0.0.90 and
// v0.0.91 crates/openshell-cli/src/run.rs gateway_status (the same human
// text, without and with the Authentication line);
// crates/openshell-cli/src/main.rs Commands::Status (no -o before v0.0.92).

#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {

namespace {

// What the health RPC fails with when only HTTP answers: a front that
// serves /healthz but not the gRPC path answers 404 without grpc-status,
// which tonic maps to Unimplemented (tonic v0.14.5 src/status.rs
// infer_grpc_status). The real text depends on what sits in front of the
// gateway; this is one faithful instance.
std::string HttpOnlyGrpcError() {
  return GrpcError("Unimplemented", "grpc-status header missing, mapped from HTTP status code 404");
}

struct GatewayState {
  std::string status;  // status_to_json's "status"
  std::optional<std::string> version;
  std::optional<std::string> error;
  std::optional<std::string> http_status;
  // authentication_state_to_json: {"status": ..., one more key}
  std::string auth_status;
  std::string auth_key;
  std::string auth_value;
};

// apply_auth_with_status's sentence for a gateway's missing OIDC token.
std::string OidcMissing(const Context& ctx) {
  return fmt::format("OIDC credentials are missing; run `openshell gateway login {}`",
                     ctx.gateway_name);
}

// `status` for a gateway that did not resolve (main.rs Commands::Status), or
// the state that plays one.
bool NotConfigured(const Context& ctx) {
  return ctx.options.gateway == "not_configured" || ctx.gateway_name.empty();
}

// gateway_status's decision table for each modelled state.
GatewayState StateOf(const Context& ctx) {
  const std::string& state = ctx.options.gateway;
  const std::string gateway_version =
      ctx.options.gateway_version.empty() ? ctx.options.version : ctx.options.gateway_version;
  if (state == "connected") {
    return {"connected", gateway_version, {}, {}, "authenticated", "provider", "mTLS transport"};
  }
  if (state == "unauthenticated") {
    return {"connected", gateway_version, {}, {}, "failed", "error", OidcMissing(ctx)};
  }
  if (state == "connected_http") {
    return {"connected_http", {},       HttpOnlyGrpcError(),       "200 OK",
            "unverified",     "reason", "gRPC health check failed"};
  }
  if (state == "error") {
    return {"error",
            {},
            GrpcError("Unavailable", "compute driver not ready"),
            "503 Service Unavailable",
            "unverified",
            "reason",
            "gRPC health check failed"};
  }
  // disconnected: the channel did not connect (tonic's transport error) and
  // /healthz answered with a failure.
  return {"disconnected", {},       "transport error",    "502 Bad Gateway",
          "unverified",   "reason", "gateway unreachable"};
}

std::string StatusJson(const Context& ctx) {
  if (NotConfigured(ctx)) return "{\n  \"status\": \"not_configured\"\n}\n";
  const GatewayState s = StateOf(ctx);
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.SetIndent(' ', 2);
  // serde_json without preserve_order: keys sorted.
  w.StartObject();
  w.Key("authentication");
  w.StartObject();
  w.Key(s.auth_key.c_str());
  w.String(s.auth_value);
  w.Key("status");
  w.String(s.auth_status);
  w.EndObject();
  if (s.error) {
    w.Key("error");
    w.String(*s.error);
  }
  w.Key("gateway");
  w.String(ctx.gateway_name);
  if (s.http_status) {
    w.Key("http_status");
    w.String(*s.http_status);
  }
  w.Key("server");
  w.String(ctx.gateway_endpoint);
  w.Key("status");
  w.String(s.status);
  if (s.version) {
    w.Key("version");
    w.String(*s.version);
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

// The human text. The CLI colours it with owo-colors unconditionally; this
// double prints it plain.
std::string StatusText(const Context& ctx) {
  if (NotConfigured(ctx)) {
    return "Gateway Status\n\n  Status: No gateway configured.\n\nRegister a gateway with: "
           "openshell gateway add <endpoint>\n";
  }
  const GatewayState s = StateOf(ctx);
  std::string text = fmt::format("Server Status\n\n  Gateway: {}\n  Server: {}\n", ctx.gateway_name,
                                 ctx.gateway_endpoint);
  std::string auth;
  if (s.auth_status == "authenticated") auth = "Authenticated (" + s.auth_value + ")";
  if (s.auth_status == "failed") auth = "Failed (" + s.auth_value + ")";
  if (s.auth_status == "unverified") auth = "Unverified (" + s.auth_value + ")";
  // Releases before 0.0.91 print no Authentication line (v0.0.90 run.rs
  // gateway_status; v0.0.91 adds print_gateway_authentication_state).
  const bool with_auth = ctx.version >= Release(91);
  if (s.status == "connected") {
    text += "  Status: Connected\n";
    if (with_auth) text += "  Authentication: " + auth + "\n";
    text += "  Version: " + *s.version + "\n";
  } else if (s.status == "connected_http") {
    text += "  Status: Connected (HTTP)\n  HTTP:  " + *s.http_status +
            "\n  gRPC error: " + *s.error + "\n";
    if (with_auth) text += "  Authentication: " + auth + "\n";
  } else if (s.status == "error") {
    text += "  Status: Error\n  HTTP: " + *s.http_status + "\n  gRPC error: " + *s.error + "\n";
    if (with_auth) text += "  Authentication: " + auth + "\n";
  } else {
    text += "  Status: Disconnected\n  HTTP: " + *s.http_status + "\n  Error: " + *s.error + "\n";
    if (with_auth) text += "  Authentication: " + auth + "\n";
  }
  return text;
}

// A refused TCP connection as hyper-util and tonic report it: the error and
// its sources, which miette prints as a cause chain.
std::vector<std::string> ConnectRefusedChain() {
  return {"client error (Connect)", "tcp connect error", "Connection refused (os error 111)"};
}

}  // namespace

// Any gRPC call from this CLI: refused unless the gateway is connected,
// authenticates us and speaks the same protocol generation.
std::optional<int> GatewayRefuses(const Context& ctx, bool creating) {
  const std::string& state = ctx.options.gateway;
  if (state == "unreachable") {
    // tonic's Endpoint::connect fails with a transport error whose sources
    // are hyper-util's connect error and the OS error. `sandbox create` wraps
    // it in a sentence (v0.0.37..v0.0.111 run.rs sandbox_create); the other
    // commands print the chain as it is.
    const std::vector<std::string> sources = {"tcp connect error",
                                              "Connection refused (os error 111)"};
    if (!creating) return PrintError("transport error", sources);
    std::vector<std::string> chain = {"transport error"};
    chain.insert(chain.end(), sources.begin(), sources.end());
    return PrintError(fmt::format("failed to connect to gateway '{}' at {}. Start the gateway "
                                  "service with the installed package manager, or register a "
                                  "different endpoint with `openshell gateway add <endpoint>`.",
                                  ctx.gateway_name, ctx.gateway_endpoint),
                      chain);
  }
  if (state == "unauthenticated") {
    return PrintError(GrpcError("Unauthenticated", OidcMissing(ctx)));
  }
  if (state == "connected_http") return PrintError(HttpOnlyGrpcError());
  if (state == "error") return PrintError(GrpcError("Unavailable", "compute driver not ready"));
  if (state == "disconnected") {
    return PrintError("transport error",
                      {"tcp connect error", "Connection reset by peer (os error 104)"});
  }
  if (state == "not_configured") {
    return PrintError("No active gateway. Set one with: openshell gateway select <name>");
  }
  if (state != "connected") {
    return PrintError(fmt::format("fake-openshell: unknown gateway state '{}'", state));
  }
  // 0.0.x and 0.1.x peers cannot be mixed (release note 0.1.0, 2026-09-25,
  // docs/upgrade/0-1-0: renamed request fields, Timestamp types). What the
  // wire then does is undocumented; this double refuses plainly.
  if (IsZeroOne(ctx.version) != IsZeroOne(ctx.gateway_version)) {
    return PrintError(fmt::format(
        "fake-openshell: a {} CLI cannot talk to a {} gateway (0.0.x and 0.1.x peers are not "
        "compatible; the real failure text is not documented)",
        ctx.options.version,
        ctx.options.gateway_version.empty() ? ctx.options.version : ctx.options.gateway_version));
  }
  return std::nullopt;
}

int Status(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{
      .usage = "openshell status [OPTIONS]",
      .flags = {{.name = "output", .short_name = 'o', .takes_value = true, .since = Release(92)}}};
  Args args;
  if (auto code = Parse(argv, 2, grammar, ctx.version, args)) return *code;
  std::string format;
  if (auto code = OutputFormat(args, grammar.usage, format)) return *code;
  if (ctx.options.gateway == "unreachable" && !ctx.gateway_name.empty()) {
    // Before 0.0.92 the header is printed before the gateway is dialled
    // (v0.0.91 run.rs gateway_status).
    if (ctx.version < Release(92)) {
      Print(fmt::format("Server Status\n\n  Gateway: {}\n  Server: {}\n", ctx.gateway_name,
                        ctx.gateway_endpoint));
    }
    // http_health_check's request fails and `?` ends the command.
    std::vector<std::string> chain = ConnectRefusedChain();
    std::string message = chain.front();
    chain.erase(chain.begin());
    return PrintError(message, chain);
  }
  Print(format == "json" ? StatusJson(ctx) : StatusText(ctx));
  return 0;
}

int GatewayInfo(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{.usage = "openshell gateway info [OPTIONS]",
                        .flags = {{.name = "output", .short_name = 'o', .takes_value = true}}};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  std::string format;
  if (auto code = OutputFormat(args, grammar.usage, format)) return *code;
  // The channel connects, then GetGatewayInfo fails: the CLI words
  // Unimplemented itself and prefixes other Statuses (v0.0.111
  // commands/gateway.rs gateway_info).
  if (ctx.options.gateway == "connected_http") {
    return PrintError("gateway info is not supported by this gateway version");
  }
  if (ctx.options.gateway == "unauthenticated") {
    return PrintError("get_gateway_info failed: " + GrpcError("Unauthenticated", OidcMissing(ctx)));
  }
  if (ctx.options.gateway != "error") {
    if (auto code = GatewayRefuses(ctx)) return *code;
  }
  const std::string version =
      ctx.options.gateway_version.empty() ? ctx.options.version : ctx.options.gateway_version;
  const char* health = ctx.options.gateway == "error" ? "unhealthy" : "healthy";
  if (format == "json") {
    Print(
        fmt::format("{{\"status\": \"{}\", \"version\": \"{}\", \"compute_drivers\": "
                    "[\"docker\"]}}\n",
                    health, version));
  } else {
    Print(fmt::format("Gateway: {}\n  Status: {}\n  Version: {}\n  Compute drivers: docker\n",
                      ctx.gateway_name, health, version));
  }
  return 0;
}

}  // namespace mojoup::fake_openshell

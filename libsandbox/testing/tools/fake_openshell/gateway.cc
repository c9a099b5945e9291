// The gateway: `status`, `gateway info`, and whether it accepts sandbox
// commands.

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {

std::string StatusJson(const Context& ctx) {
  const std::string& state = ctx.options.gateway;
  auto body = [&](std::string_view status, std::string_view extra) {
    return fmt::format(
        "{{\n  \"gateway\": \"local\",\n  \"server\": \"{}\",\n  \"status\": \"{}\"{}\n}}\n",
        kGatewayServer, status, extra);
  };
  if (state == "connected") {
    return body("connected",
                fmt::format(",\n  \"version\": \"{}\",\n  \"authentication\": {{\"status\": "
                            "\"authenticated\", \"provider\": \"mTLS transport\"}}",
                            ctx.options.version));
  }
  if (state == "connected_http") {
    return body("connected_http",
                ",\n  \"http_status\": \"200 OK\",\n  \"authentication\": {\"status\": "
                "\"not_required\", \"mode\": \"gateway\"}");
  }
  if (state == "unauthenticated") {
    return body("connected",
                fmt::format(",\n  \"version\": \"{}\",\n  \"authentication\": {{\"status\": "
                            "\"failed\", \"error\": \"OIDC credentials are missing; run `openshell "
                            "gateway login local`\"}}",
                            ctx.options.version));
  }
  if (state == "error") {
    return body("error",
                ",\n  \"http_status\": \"503 Service Unavailable\",\n  \"error\": \"status: "
                "Unavailable, message: \\\"compute driver not ready\\\"\"");
  }
  if (state == "disconnected") {
    return body("disconnected",
                ",\n  \"http_status\": \"502 Bad Gateway\",\n  \"error\": \"transport error\"");
  }
  return "{\"status\": \"not_configured\"}\n";
}

void PrintUnreachable() {
  std::fputs(
      "Error:   x client error (Connect)\n  -> tcp connect error: Connection refused (os "
      "error 111)\n",
      stderr);
}

// Sandbox commands need a gateway that answers and accepts us.
std::optional<int> GatewayRefuses(const Context& ctx) {
  const std::string& state = ctx.options.gateway;
  if (state == "connected" || state == "connected_http") return std::nullopt;
  if (state == "unreachable") {
    return PrintError(
        fmt::format("failed to connect to gateway 'local' at {}: client error (Connect): "
                    "tcp connect error: Connection refused (os error 111)",
                    kGatewayServer));
  }
  if (state == "unauthenticated") {
    return PrintError(GrpcError(
        "Unauthenticated", "OIDC credentials are missing; run `openshell gateway login local`"));
  }
  if (state == "error") return PrintError(GrpcError("Unavailable", "compute driver not ready"));
  if (state == "disconnected") {
    return PrintError(GrpcError("Unavailable", "transport error: 502 Bad Gateway"));
  }
  if (state == "not_configured") {
    return PrintError("No active gateway. Set one with: openshell gateway select <name>");
  }
  return PrintError(fmt::format("fake-openshell: unknown gateway state '{}'", state));
}

int Status(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{.usage = "openshell status [OPTIONS]",
                        .flags = {{.name = "output", .short_name = 'o', .takes_value = true}}};
  Args args;
  if (auto code = Parse(argv, 2, grammar, ctx.version, args)) return *code;
  std::string format;
  if (auto code = OutputFormat(args, grammar.usage, format)) return *code;
  if (ctx.options.gateway == "unreachable") {
    PrintUnreachable();
    return 1;
  }
  if (format == "json") {
    Print(StatusJson(ctx));
    return 0;
  }
  if (ctx.options.gateway == "not_configured") {
    Print("Gateway Status\n\n  Status: No gateway configured.\n");
    return 0;
  }
  Print(fmt::format("Gateway Status\n\n  Gateway: local\n  Server: {}\n  Status: {}\n",
                    kGatewayServer, ctx.options.gateway));
  return 0;
}

int GatewayInfo(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{.usage = "openshell gateway info [OPTIONS]",
                        .flags = {{.name = "output", .short_name = 'o', .takes_value = true}}};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  std::string format;
  if (auto code = OutputFormat(args, grammar.usage, format)) return *code;
  if (ctx.options.gateway == "unreachable") {
    PrintUnreachable();
    return 1;
  }
  if (ctx.options.gateway != "error") {
    if (auto code = GatewayRefuses(ctx)) return *code;
  }
  const char* health = ctx.options.gateway == "error" ? "unhealthy" : "healthy";
  if (format == "json") {
    Print(
        fmt::format("{{\"status\": \"{}\", \"version\": \"{}\", \"compute_drivers\": "
                    "[\"docker\"]}}\n",
                    health, ctx.options.version));
  } else {
    Print(fmt::format("Gateway: local\n  Status: {}\n  Version: {}\n  Compute drivers: docker\n",
                      health, ctx.options.version));
  }
  return 0;
}

}  // namespace mojoup::fake_openshell

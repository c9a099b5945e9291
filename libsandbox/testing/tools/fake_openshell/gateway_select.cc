// Which gateway a call talks to, chosen as the CLI chooses it.
//
// Sources (NVIDIA/OpenShell v0.0.111): crates/openshell-cli/src/main.rs
// Cli::gateway (`-g/--gateway`, `global = true`, env OPENSHELL_GATEWAY),
// resolve_gateway (flag, then OPENSHELL_GATEWAY unless blank, then the
// active gateway file; its metadata gives the name and endpoint; the two
// errors), Commands::Status (a gateway that does not resolve is
// "not_configured"); crates/openshell-bootstrap/src/paths.rs
// (validated_gateway_name, $XDG_CONFIG_HOME/openshell else
// $HOME/.config/openshell, the system layer OPENSHELL_SYSTEM_GATEWAY_DIR
// else /etc/openshell), metadata.rs (load_active_gateway: the user's file,
// trimmed and validated, then the system's; load_gateway_metadata: the
// user's metadata.json when it exists, else the system's; GatewayMetadata's
// required members).
//
// This double plays one gateway, options.gateway_name, as a package
// installs it: seeded in the system layer as the active gateway with the
// endpoint kGatewayServer and is_remote = options.remote. A user's metadata
// for that name shadows the seeded one, as in the CLI. A gateway of another
// name that the user registered is not one this double serves.

#include <rapidjson/document.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fake_openshell.h"
#include "fileinfo/file_info.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {
namespace {

struct Metadata {
  std::string name;
  std::string endpoint;
  bool remote = false;
};

std::optional<std::string> Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// paths.rs validated_gateway_name: Path::new(name).components() is exactly
// one Normal component equal to the name.
bool ValidatedGatewayName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

// xdg_config_dir()/openshell; "" when neither variable is set.
std::string UserConfigDir() {
  if (auto xdg = Env("XDG_CONFIG_HOME")) return *xdg + "/openshell";
  if (auto home = Env("HOME")) return *home + "/.config/openshell";
  return {};
}

std::string SystemConfigDir() {
  auto set = Env("OPENSHELL_SYSTEM_GATEWAY_DIR");
  if (set && !set->empty() && set->front() == '/') return *set;
  return "/etc/openshell";
}

// read_gateway_name: trimmed, non-empty, a valid name.
std::optional<std::string> ReadGatewayName(const std::string& path) {
  std::optional<std::string> text = mojoup::sandbox::ReadWholeFile(path);
  if (!text) return std::nullopt;
  std::string name = Trim(*text);
  if (name.empty() || !ValidatedGatewayName(name)) return std::nullopt;
  return name;
}

// serde_json::from_str::<GatewayMetadata>: name, gateway_endpoint,
// is_remote and gateway_port are required.
std::optional<Metadata> ParseMetadata(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.c_str(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) return std::nullopt;
  auto member = [&](const char* key) -> const rapidjson::Value* {
    auto it = doc.FindMember(key);
    return it == doc.MemberEnd() ? nullptr : &it->value;
  };
  const rapidjson::Value* name = member("name");
  const rapidjson::Value* endpoint = member("gateway_endpoint");
  const rapidjson::Value* remote = member("is_remote");
  const rapidjson::Value* port = member("gateway_port");
  if (name == nullptr || !name->IsString() || endpoint == nullptr || !endpoint->IsString() ||
      remote == nullptr || !remote->IsBool() || port == nullptr || !port->IsUint() ||
      port->GetUint() > 65535) {
    return std::nullopt;
  }
  return Metadata{name->GetString(), endpoint->GetString(), remote->GetBool()};
}

// load_gateway_metadata, with this double's seeded system entry.
std::optional<Metadata> LoadMetadata(const Context& ctx, const std::string& name) {
  if (!ValidatedGatewayName(name)) return std::nullopt;
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string user = UserConfigDir();
  const std::string user_file = user + "/gateways/" + name + "/metadata.json";
  // user_entry_shadows_system: try_exists().unwrap_or(true).
  if (!user.empty() && (fs::exists(user_file, ec) || ec)) {
    std::optional<std::string> text = mojoup::sandbox::ReadWholeFile(user_file);
    return text ? ParseMetadata(*text) : std::nullopt;
  }
  const std::string system_file = SystemConfigDir() + "/gateways/" + name + "/metadata.json";
  if (fs::exists(system_file, ec)) {
    std::optional<std::string> text = mojoup::sandbox::ReadWholeFile(system_file);
    return text ? ParseMetadata(*text) : std::nullopt;
  }
  if (name == ctx.options.gateway_name) {
    return Metadata{name, std::string(kGatewayServer), ctx.options.remote};
  }
  return std::nullopt;
}

}  // namespace

// clap takes a global flag anywhere among the options; this double takes it
// anywhere before `--` (so an exec's command must follow `--` to hold a -g
// of its own).
std::optional<std::string> TakeGatewayFlag(std::vector<std::string>& argv, std::string& error) {
  std::optional<std::string> flag;
  std::vector<std::string> kept;
  std::size_t i = 0;
  for (; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (i == 0) {
      kept.push_back(arg);
    } else if (arg == "--") {
      break;
    } else if (arg == "-g" || arg == "--gateway") {
      if (i + 1 >= argv.size() || argv[i + 1].starts_with("-")) {
        error = "a value is required for '--gateway <GATEWAY>' but none was supplied";
        return std::nullopt;
      }
      flag = argv[++i];
    } else if (arg.starts_with("--gateway=")) {
      flag = arg.substr(10);
    } else if (arg.size() > 2 && arg.starts_with("-g")) {
      flag = arg.substr(arg[2] == '=' ? 3 : 2);
    } else {
      kept.push_back(arg);
    }
  }
  kept.insert(kept.end(), argv.begin() + static_cast<std::ptrdiff_t>(i), argv.end());
  argv = std::move(kept);
  return flag;
}

std::optional<std::string> SelectGateway(Context& ctx, const std::optional<std::string>& flag) {
  std::optional<std::string> name = flag;
  if (!name) {
    auto env = Env("OPENSHELL_GATEWAY");
    if (env && !Trim(*env).empty()) name = *env;
  }
  // load_active_gateway: the user's file, then the system's, which this
  // double's install seeds with its gateway.
  if (!name && !UserConfigDir().empty())
    name = ReadGatewayName(UserConfigDir() + "/active_gateway");
  if (!name) name = ReadGatewayName(SystemConfigDir() + "/active_gateway");
  if (!name) name = ctx.options.gateway_name;
  std::optional<Metadata> metadata = LoadMetadata(ctx, *name);
  if (!metadata) {
    return fmt::format(
        "Unknown gateway '{0}'.\nRegister it first: openshell gateway add <endpoint> --name "
        "{0}\nOr list available gateways: openshell gateway select",
        *name);
  }
  ctx.gateway_name = metadata->name;
  ctx.gateway_endpoint = metadata->endpoint;
  ctx.remote = metadata->remote;
  return std::nullopt;
}

}  // namespace mojoup::fake_openshell

// `provider create | list | get | delete`, and what a sandbox created with
// `--provider` sees: each credential key in its environment as a placeholder
// the sandbox's proxy resolves, never the value.
//
// Sources (NVIDIA/OpenShell v0.0.111 unless said): crates/openshell-cli/src/
// main.rs ProviderCommands; crates/openshell-cli/src/run.rs
// provider_create_with_options, provider_get, provider_to_json,
// provider_list, provider_delete; crates/openshell-cli/src/commands/common.rs
// parse_credential_pairs; crates/openshell-providers/src/lib.rs
// normalize_provider_type; providers/*.yaml (the built-in profiles);
// crates/openshell-server/src/grpc/provider.rs create (AlreadyExists) and
// delete_provider_record_with_credentials; crates/openshell-core/src/
// secrets.rs placeholder_for_env_key_for_revision (v0.0.37..v0.0.6x:
// crates/openshell-sandbox/src/secrets.rs, same format).
//
// Providers live in DIR/fake-openshell-providers.json, DIR being the install
// directory, which plays one gateway.

#include <fcntl.h>
#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "fake_openshell.h"
#include "fmt/format.h"

namespace mojoup::fake_openshell {

namespace {

std::string StorePath(const Context& ctx) { return ctx.dir + "/fake-openshell-providers.json"; }

// Serialises concurrent invocations on one install: writers take it
// exclusively, readers shared, so a reader never sees a store half
// rewritten (the gateway's database never shows one).
class StoreLock {
 public:
  explicit StoreLock(const Context& ctx, int operation = LOCK_EX) {
    fd_ = ::open((StorePath(ctx) + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ >= 0) ::flock(fd_, operation);
  }
  ~StoreLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

 private:
  int fd_ = -1;
};

StringMap ReadMap(const rapidjson::Value& value) {
  StringMap out;
  if (!value.IsObject()) return out;
  for (const auto& member : value.GetObject()) {
    if (member.value.IsString()) out[member.name.GetString()] = member.value.GetString();
  }
  return out;
}

std::map<std::string, Provider> Load(const Context& ctx) {
  std::map<std::string, Provider> out;
  std::ifstream in(StorePath(ctx));
  if (!in) return out;
  std::stringstream text;
  text << in.rdbuf();
  rapidjson::Document doc;
  doc.Parse(text.str().c_str());
  if (doc.HasParseError() || !doc.IsObject()) return out;
  for (const auto& member : doc.GetObject()) {
    const rapidjson::Value& v = member.value;
    if (!v.IsObject()) continue;
    Provider p;
    p.name = member.name.GetString();
    if (v.HasMember("id") && v["id"].IsString()) p.id = v["id"].GetString();
    if (v.HasMember("type") && v["type"].IsString()) p.type = v["type"].GetString();
    if (v.HasMember("credentials")) p.credentials = ReadMap(v["credentials"]);
    if (v.HasMember("config")) p.config = ReadMap(v["config"]);
    if (v.HasMember("created_ms") && v["created_ms"].IsInt64()) {
      p.created_ms = v["created_ms"].GetInt64();
    }
    out[p.name] = p;
  }
  return out;
}

bool Save(const Context& ctx, const std::map<std::string, Provider>& providers) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  auto map = [&](const StringMap& m) {
    w.StartObject();
    for (const auto& [key, value] : m) {
      w.Key(key.c_str());
      w.String(value);
    }
    w.EndObject();
  };
  w.StartObject();
  for (const auto& [name, p] : providers) {
    w.Key(name.c_str());
    w.StartObject();
    w.Key("id");
    w.String(p.id);
    w.Key("type");
    w.String(p.type);
    w.Key("credentials");
    map(p.credentials);
    w.Key("config");
    map(p.config);
    w.Key("created_ms");
    w.Int64(p.created_ms);
    w.EndObject();
  }
  w.EndObject();
  // Rewritten in place under the store's lock: the install directory may not
  // be writable by the user the code under test runs as; the files are
  // (InstallFakeOpenShellSandbox makes them).
  std::ofstream out(StorePath(ctx), std::ios::trunc);
  if (!out) return false;
  out << buffer.GetString() << "\n";
  return static_cast<bool>(out);
}

// The CLI's normalize_provider_type (aliases of the legacy discovery
// plugins and the inference providers), else a built-in profile id from
// providers/*.yaml; "" when the gateway would not know the type.
std::string NormalizeType(std::string_view input) {
  std::string t;
  for (char c : input) {
    if (c != ' ' && c != '\t') t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  static const std::map<std::string, std::string> kAliases = {{"claude", "claude-code"},
                                                              {"claude-code", "claude-code"},
                                                              {"claude_code", "claude-code"},
                                                              {"codex", "codex"},
                                                              {"copilot", "copilot"},
                                                              {"opencode", "opencode"},
                                                              {"gcp", "google-cloud"},
                                                              {"google-cloud", "google-cloud"},
                                                              {"generic", "generic"},
                                                              {"gitlab", "gitlab"},
                                                              {"glab", "gitlab"},
                                                              {"github", "github"},
                                                              {"gh", "github"},
                                                              {"outlook", "outlook"},
                                                              {"openai", "openai"},
                                                              {"anthropic", "anthropic"},
                                                              {"nvidia", "nvidia"}};
  if (auto it = kAliases.find(t); it != kAliases.end()) return it->second;
  static const std::vector<std::string> kProfiles = {
      "aws-bedrock", "aws-s3", "aws", "cursor", "deepinfra", "google-vertex-ai", "pypi"};
  if (std::find(kProfiles.begin(), kProfiles.end(), t) != kProfiles.end()) return t;
  return {};
}

// What --from-existing discovers for a type: the local environment variables
// its profile or discovery plugin names (providers/*.yaml env_vars).
std::optional<std::vector<std::string>> DiscoveryEnv(const std::string& type) {
  static const std::map<std::string, std::vector<std::string>> kEnv = {
      {"claude-code", {"ANTHROPIC_API_KEY", "CLAUDE_API_KEY"}},
      {"anthropic", {"ANTHROPIC_API_KEY"}},
      {"openai", {"OPENAI_API_KEY"}},
      {"nvidia", {"NVIDIA_API_KEY"}},
      {"github", {"GITHUB_TOKEN", "GH_TOKEN"}},
      {"copilot", {"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"}},
      {"opencode", {"OPENCODE_API_KEY", "OPENROUTER_API_KEY", "OPENAI_API_KEY"}},
      {"gitlab", {"GITLAB_TOKEN"}}};
  auto it = kEnv.find(type);
  if (it == kEnv.end()) return std::nullopt;
  return it->second;
}

// The built-in profiles a session's credentials meet (v0.0.111
// providers/{claude-code,codex,copilot,github}.yaml): their credentials'
// env_vars and their endpoints. Endpoint rules and binaries are left out.
struct ProfileCredential {
  std::string_view name;
  std::vector<std::string_view> env_vars;
  bool required = true;
  std::string_view auth_style;
  std::string_view header_name;
};
struct ProfileEndpoint {
  std::string_view host;
  std::string_view path;
  std::string_view protocol;
  std::string_view access;
};
struct Profile {
  std::string_view id;
  std::string_view display_name;
  std::string_view category;
  std::vector<ProfileCredential> credentials;
  std::vector<ProfileEndpoint> endpoints;
};

const std::vector<Profile>& BuiltInProfiles() {
  static const std::vector<Profile> kProfiles = {
      {"claude-code",
       "Claude Code",
       "agent",
       {{"api_key", {"ANTHROPIC_API_KEY", "CLAUDE_API_KEY"}, true, "header", "x-api-key"}},
       {{"api.anthropic.com", "", "rest", "read-write"},
        {"statsig.anthropic.com", "", "rest", "read-write"},
        {"sentry.io", "", "rest", "read-write"}}},
      {"codex",
       "Codex",
       "agent",
       {{"access_token", {"CODEX_AUTH_ACCESS_TOKEN"}, true, "", ""},
        {"refresh_token", {"CODEX_AUTH_REFRESH_TOKEN"}, true, "", ""},
        {"account_id", {"CODEX_AUTH_ACCOUNT_ID"}, true, "", ""},
        {"id_token", {"CODEX_AUTH_ID_TOKEN"}, false, "", ""}},
       {{"api.openai.com", "", "rest", "read-write"},
        {"auth.openai.com", "", "rest", "read-write"},
        {"chatgpt.com", "", "rest", "read-write"},
        {"ab.chatgpt.com", "", "rest", "read-write"}}},
      {"copilot",
       "GitHub Copilot",
       "agent",
       {{"api_token",
         {"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"},
         true,
         "bearer",
         "authorization"}},
       {{"api.githubcopilot.com", "", "rest", "read-write"},
        {"api.individual.githubcopilot.com", "", "rest", "read-write"},
        {"api.business.githubcopilot.com", "", "rest", "read-write"},
        {"api.enterprise.githubcopilot.com", "", "rest", "read-write"},
        {"copilot-proxy.githubusercontent.com", "", "rest", "read-write"},
        {"telemetry.enterprise.githubcopilot.com", "", "", ""},
        {"default.exp-tas.com", "", "", ""}}},
      {"github",
       "GitHub",
       "source_control",
       {{"api_token", {"GITHUB_TOKEN", "GH_TOKEN"}, true, "bearer", "authorization"}},
       {{"api.github.com", "", "rest", "read-only"},
        {"api.github.com", "/graphql", "graphql", "read-only"},
        {"github.com", "", "rest", ""}}},
  };
  return kProfiles;
}

// The gateway's catalogue: 0.0.x builds its profiles in; 0.1.0 ships none
// and serves what the administrator imported (release note v0.1.0,
// docs/upgrade/0-1-0: "A gateway with nothing imported serves an empty
// catalog").
std::vector<const Profile*> Catalogue(const Context& ctx) {
  std::vector<const Profile*> profiles;
  for (const Profile& profile : BuiltInProfiles()) {
    const auto& imported = ctx.options.imported_profiles;
    if (ctx.version < Version{0, 1, 0} ||
        std::find(imported.begin(), imported.end(), profile.id) != imported.end()) {
      profiles.push_back(&profile);
    }
  }
  return profiles;
}

// `provider list-profiles -o json`: serde_json's pretty print of the
// ProviderTypeProfile list (v0.0.111 crates/openshell-providers/src/
// profiles.rs profiles_to_json; struct order, empty optional fields left
// out), sorted by category then id (run.rs provider_list_profiles).
int ListProfiles(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{.usage = "openshell provider list-profiles [OPTIONS]",
                        .flags = {{.name = "output", .short_name = 'o', .takes_value = true},
                                  {.name = "global", .modelled = false}}};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  std::string format;
  if (auto code = OutputFormat(args, grammar.usage, format)) return *code;
  if (auto code = GatewayRefuses(ctx)) return *code;
  std::vector<const Profile*> profiles = Catalogue(ctx);
  std::sort(profiles.begin(), profiles.end(), [](const Profile* a, const Profile* b) {
    return std::tie(a->category, a->id) < std::tie(b->category, b->id);
  });
  if (format != "json") {
    if (profiles.empty()) {
      Print("No provider profiles found.\n");
      return 0;
    }
    std::string text = "Available Provider Profiles:\n";
    for (const Profile* profile : profiles) {
      text += fmt::format("  {:<14} {}\n", profile->id, profile->display_name);
    }
    Print(text);
    return 0;
  }
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.SetIndent(' ', 2);
  auto string = [&w](const char* key, std::string_view value) {
    w.Key(key);
    w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
  };
  w.StartArray();
  for (const Profile* profile : profiles) {
    w.StartObject();
    string("id", profile->id);
    string("display_name", profile->display_name);
    string("description", "");
    string("category", profile->category);
    w.Key("credentials");
    w.StartArray();
    for (const ProfileCredential& credential : profile->credentials) {
      w.StartObject();
      string("name", credential.name);
      string("description", "");
      w.Key("env_vars");
      w.StartArray();
      for (std::string_view variable : credential.env_vars) {
        w.String(variable.data(), static_cast<rapidjson::SizeType>(variable.size()));
      }
      w.EndArray();
      w.Key("required");
      w.Bool(credential.required);
      string("auth_style", credential.auth_style);
      string("header_name", credential.header_name);
      string("query_param", "");
      w.EndObject();
    }
    w.EndArray();
    w.Key("endpoints");
    w.StartArray();
    for (const ProfileEndpoint& endpoint : profile->endpoints) {
      w.StartObject();
      string("host", endpoint.host);
      w.Key("port");
      w.Uint(443);
      if (!endpoint.path.empty()) string("path", endpoint.path);
      if (!endpoint.protocol.empty()) string("protocol", endpoint.protocol);
      if (!endpoint.access.empty()) string("access", endpoint.access);
      string("enforcement", "enforce");
      w.EndObject();
    }
    w.EndArray();
    w.Key("binaries");
    w.StartArray();
    w.EndArray();
    w.Key("inference_capable");
    w.Bool(profile->category == "agent");
    w.EndObject();
  }
  w.EndArray();
  Print(std::string(buffer.GetString(), buffer.GetSize()) + "\n");
  return 0;
}

std::string FormatEpochMs(std::int64_t ms) { return FormatCreated(ms / 1000); }

void WriteProvider(JsonWriter& w, const Provider& p) {
  // serde_json's Map is sorted.
  w.StartObject();
  if (!p.config.empty()) {
    w.Key("config_keys");
    w.StartArray();
    for (const auto& [key, value] : p.config) w.String(key);
    w.EndArray();
  }
  if (p.created_ms != 0) {
    w.Key("created_at");
    w.String(FormatEpochMs(p.created_ms));
  }
  w.Key("credential_keys");
  w.StartArray();
  for (const auto& [key, value] : p.credentials) w.String(key);
  w.EndArray();
  w.Key("id");
  w.String(p.id);
  w.Key("name");
  w.String(p.name);
  w.Key("type");
  w.String(p.type);
  w.Key("workspace");
  w.String("default");
  w.EndObject();
}

// parse_credential_pairs: KEY=VALUE, or KEY alone read from our
// environment. The exit code when one is wrong.
std::optional<int> ReadCredentials(const Args& args, StringMap& credentials) {
  for (const std::string& item : args.All("credential")) {
    if (auto eq = item.find('='); eq != std::string::npos) {
      std::string key = Trim(std::string_view(item).substr(0, eq));
      if (key.empty()) return PrintError("--credential key cannot be empty");
      credentials[key] = item.substr(eq + 1);
      continue;
    }
    std::string key = Trim(item);
    if (key.empty()) return PrintError("--credential key cannot be empty");
    const char* value = std::getenv(key.c_str());
    if (value == nullptr || Trim(value).empty()) {
      return PrintError(fmt::format(
          "--credential {0} requires local env var '{0}' to be set to a non-empty value", key));
    }
    credentials[key] = value;
  }
  return std::nullopt;
}

int Create(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{
      .usage =
          "openshell provider create --name <NAME> --type <PROVIDER_TYPE> <--from-existing|"
          "--credential <KEY[=VALUE]>|--from-gcloud-adc|--runtime-credentials>",
      .flags = {{.name = "name", .takes_value = true},
                {.name = "type", .takes_value = true},
                {.name = "from-existing"},
                {.name = "credential", .takes_value = true},
                {.name = "config", .takes_value = true},
                {.name = "from-gcloud-adc", .modelled = false},
                {.name = "runtime-credentials", .modelled = false},
                {.name = "global-profile", .modelled = false}}};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  std::vector<std::string> missing;
  if (!args.Has("name")) missing.push_back("--name <NAME>");
  if (!args.Has("type")) missing.push_back("--type <PROVIDER_TYPE>");
  if (!args.Has("from-existing") && !args.Has("credential")) {
    missing.push_back(
        "<--from-existing|--credential <KEY[=VALUE]>|--from-gcloud-adc|--runtime-credentials>");
  }
  if (!missing.empty()) {
    std::string text = "the following required arguments were not provided:";
    for (const std::string& m : missing) text += "\n  " + m;
    return ClapError(text, grammar.usage);
  }
  if (args.Has("from-existing") && args.Has("credential")) {
    return ClapError(
        "the argument '--from-existing' cannot be used with '--credential <KEY[=VALUE]>'",
        grammar.usage);
  }
  if (auto code = GatewayRefuses(ctx)) return *code;
  std::string type = NormalizeType(args.Last("type"));
  // A 0.1.x gateway knows only the profiles imported into it.
  if (ctx.version >= Version{0, 1, 0}) {
    const auto catalogue = Catalogue(ctx);
    if (std::none_of(catalogue.begin(), catalogue.end(),
                     [&type](const Profile* profile) { return profile->id == type; })) {
      type.clear();
    }
  }
  if (type.empty()) {
    if (Trim(args.Last("type")).empty()) return PrintError("provider type is required");
    return PrintError(fmt::format("unsupported provider type or profile: {}", args.Last("type")));
  }
  StringMap credentials;
  if (auto code = ReadCredentials(args, credentials)) return *code;
  StringMap config;
  for (const std::string& item : args.All("config")) {
    auto eq = item.find('=');
    if (eq == std::string::npos || Trim(std::string_view(item).substr(0, eq)).empty()) {
      return PrintError(fmt::format("--config expects KEY=VALUE; got '{}'", item));
    }
    config[Trim(std::string_view(item).substr(0, eq))] = item.substr(eq + 1);
  }
  if (args.Has("from-existing")) {
    auto names = DiscoveryEnv(type);
    if (!names) return NotModelled(fmt::format("`--from-existing` for '{}' providers", type));
    for (const std::string& env : *names) {
      const char* value = std::getenv(env.c_str());
      if (value != nullptr && !Trim(value).empty()) credentials.emplace(env, value);
    }
    if (credentials.empty()) {
      return PrintError(
          fmt::format("no existing local credentials/config found for provider type '{}'", type));
    }
  }
  const std::string name = args.Last("name");
  if (name.size() > 253) {
    return PrintError(
        GrpcError("InvalidArgument",
                  fmt::format("provider.name exceeds maximum length ({} > 253)", name.size())));
  }
  StoreLock lock(ctx);
  auto providers = Load(ctx);
  if (providers.count(name) != 0) {
    return PrintError(GrpcError("AlreadyExists", "provider already exists"));
  }
  Provider p;
  p.id = NewSandboxId();
  p.name = name;
  p.type = type;
  p.credentials = credentials;
  p.config = config;
  p.created_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  providers[name] = p;
  if (!Save(ctx, providers)) {
    return PrintError(GrpcError("Internal", "fake-openshell: cannot write the provider store"));
  }
  Print(fmt::format("✓ Created provider {}\n", name));
  return 0;
}

int List(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{.usage = "openshell provider list [OPTIONS]",
                        .flags = {{.name = "limit", .takes_value = true},
                                  {.name = "offset", .takes_value = true},
                                  {.name = "names"},
                                  {.name = "output", .short_name = 'o', .takes_value = true},
                                  {.name = "all-workspaces", .modelled = false}}};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  std::string format;
  if (auto code = OutputFormat(args, grammar.usage, format)) return *code;
  if (args.Has("names") && args.Has("output")) {
    return ClapError("the argument '--names' cannot be used with '--output <OUTPUT>'",
                     grammar.usage);
  }
  int exit_code = 0;
  auto limit = ParseCount(args, "limit", grammar.usage, 100, exit_code);
  if (!limit) return exit_code;
  auto offset = ParseCount(args, "offset", grammar.usage, 0, exit_code);
  if (!offset) return exit_code;
  if (auto code = GatewayRefuses(ctx)) return *code;
  std::vector<Provider> page;
  std::size_t index = 0;
  StoreLock lock(ctx, LOCK_SH);
  for (const auto& [name, p] : Load(ctx)) {
    if (index++ < *offset) continue;
    if (page.size() >= *limit) break;
    page.push_back(p);
  }
  if (format == "json") {
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    w.SetIndent(' ', 2);
    w.StartArray();
    for (const Provider& p : page) WriteProvider(w, p);
    w.EndArray();
    Print(std::string(buffer.GetString(), buffer.GetSize()) + "\n");
    return 0;
  }
  if (page.empty()) {
    if (!args.Has("names")) Print("No providers found.\n");
    return 0;
  }
  if (args.Has("names")) {
    for (const Provider& p : page) Print(p.name + "\n");
    return 0;
  }
  std::size_t name_width = 4;
  std::size_t type_width = 4;
  for (const Provider& p : page) {
    name_width = std::max(name_width, p.name.size());
    type_width = std::max(type_width, p.type.size());
  }
  std::string table = fmt::format("{:<{}}  {:<{}}  {:<16}  {}\n", "NAME", name_width, "TYPE",
                                  type_width, "CREDENTIAL_KEYS", "CONFIG_KEYS");
  for (const Provider& p : page) {
    table += fmt::format("{:<{}}  {:<{}}  {:<16}  {}\n", p.name, name_width, p.type, type_width,
                         p.credentials.size(), p.config.size());
  }
  Print(table);
  return 0;
}

std::string Keys(const StringMap& map) {
  if (map.empty()) return "<none>";
  std::string out;
  for (const auto& [key, value] : map) out += (out.empty() ? "" : ", ") + key;
  return out;
}

int Get(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{
      .usage = "openshell provider get <NAME>", .flags = {}, .max_positionals = 1};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  if (args.positionals.empty()) {
    return ClapError("the following required arguments were not provided:\n  <NAME>",
                     grammar.usage);
  }
  if (auto code = GatewayRefuses(ctx)) return *code;
  auto p = FindProvider(ctx, args.positionals[0]);
  if (!p) return PrintError(GrpcError("NotFound", "provider not found"));
  Print(fmt::format(
      "Provider:\n\n  Id: {}\n  Name: {}\n  Type: {}\n  Resource version: 0\n  Credential keys: "
      "{}\n  Config keys: {}\n",
      p->id, p->name, p->type, Keys(p->credentials), Keys(p->config)));
  return 0;
}

// The sandboxes of this install that have `name` attached.
std::vector<std::string> SandboxesUsing(const Context& ctx, const std::string& name,
                                        std::string& error) {
  std::vector<std::string> users;
  auto docker = ConnectDocker(error);
  if (!docker) return users;
  auto sandboxes = ListSandboxes(*docker, ctx, {}, error);
  if (!sandboxes) return users;
  for (const Sandbox& sandbox : *sandboxes) {
    if (std::find(sandbox.providers.begin(), sandbox.providers.end(), name) !=
        sandbox.providers.end()) {
      users.push_back(sandbox.name);
    }
  }
  return users;
}

int Delete(const Context& ctx, const std::vector<std::string>& argv) {
  const Grammar grammar{.usage = "openshell provider delete <NAME>...",
                        .flags = {},
                        .max_positionals = std::numeric_limits<std::size_t>::max()};
  Args args;
  if (auto code = Parse(argv, 3, grammar, ctx.version, args)) return *code;
  if (args.positionals.empty()) {
    return ClapError("the following required arguments were not provided:\n  <NAME>...",
                     grammar.usage);
  }
  if (auto code = GatewayRefuses(ctx)) return *code;
  // In order; an unknown name is not an error (the gateway answers
  // deleted=false), a provider still attached to a sandbox is.
  for (const std::string& name : args.positionals) {
    StoreLock lock(ctx);
    auto providers = Load(ctx);
    if (providers.count(name) == 0) {
      Print(fmt::format("! Provider {} not found\n", name));
      continue;
    }
    std::string error;
    std::vector<std::string> users = SandboxesUsing(ctx, name, error);
    if (!error.empty()) return PrintError(GrpcError("Internal", error));
    if (!users.empty()) {
      std::string list;
      for (const std::string& user : users) list += (list.empty() ? "" : ", ") + user;
      return PrintError(
          GrpcError("FailedPrecondition",
                    fmt::format("provider '{}' is attached to sandbox(es): {}", name, list)));
    }
    providers.erase(name);
    if (!Save(ctx, providers)) {
      return PrintError(GrpcError("Internal", "fake-openshell: cannot write the provider store"));
    }
    Print(fmt::format("✓ Deleted provider {}\n", name));
  }
  return 0;
}

// A stand-in for the gateway's provider environment revision: a SHA-256 over
// the attached records, whose first 8 bytes read as a u64 (v0.0.111
// crates/openshell-server/src/grpc/policy.rs
// compute_provider_env_revision_from_records). The digits cannot match a real
// gateway's; the shape does. FNV-1a stands in for SHA-256.
std::uint64_t Revision(const std::vector<Provider>& providers) {
  std::uint64_t hash = 14695981039346656037ull;
  auto add = [&](std::string_view text) {
    for (unsigned char c : text) {
      hash ^= c;
      hash *= 1099511628211ull;
    }
  };
  add("openshell-provider-env-revision-v4");
  for (const Provider& p : providers) {
    add(p.name);
    add(p.id);
    add(p.type);
    for (const auto& [key, value] : p.credentials) add(key);
  }
  return hash == 0 ? 1 : hash;
}

}  // namespace

std::optional<Provider> FindProvider(const Context& ctx, const std::string& name) {
  StoreLock lock(ctx, LOCK_SH);
  auto providers = Load(ctx);
  auto it = providers.find(name);
  if (it == providers.end()) return std::nullopt;
  return it->second;
}

bool IsProviderType(const std::string& name) { return !NormalizeType(name).empty(); }

// Each credential key as `openshell:resolve:env:v<revision>_KEY`
// (placeholder_for_env_key_for_revision). 0.1.4 added opt-in stable
// placeholders `...:s<handle>_KEY` through a profile field (release note
// v0.1.4); this double has no profiles, so it always issues the revision form.
StringMap ProviderPlaceholders(const std::vector<Provider>& providers) {
  StringMap env;
  const std::uint64_t revision = Revision(providers);
  for (const Provider& p : providers) {
    for (const auto& [key, value] : p.credentials) {
      env[key] = fmt::format("openshell:resolve:env:v{}_{}", revision, key);
    }
  }
  return env;
}

int ProviderCommand(const Context& ctx, const std::vector<std::string>& argv) {
  if (argv.size() < 3) {
    std::fputs("Usage: openshell provider <COMMAND>\n", stderr);
    return 2;
  }
  const std::string& sub = argv[2];
  if (sub == "create") return Create(ctx, argv);
  if (sub == "list") return List(ctx, argv);
  if (sub == "get") return Get(ctx, argv);
  if (sub == "delete") return Delete(ctx, argv);
  if (sub == "list-profiles") return ListProfiles(ctx, argv);
  for (std::string_view real : {"update", "refresh", "profile"}) {
    if (sub == real) return NotModelled(fmt::format("`provider {}`", sub));
  }
  return ClapError(fmt::format("unrecognized subcommand '{}'", sub),
                   "openshell provider <COMMAND>");
}

}  // namespace mojoup::fake_openshell

#include "mojoup/policy/node_config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <rapidjson/document.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include "fmt/format.h"
#include "json_source.h"
#include "mojoup/internal/atomic_file.h"
#include "mojoup/internal/bounded_json.h"
#include "mojoup/internal/file_checks.h"
#include "mojoup/internal/file_lock.h"
#include "mojoup/internal/json_codec.h"
#include "mojoup/internal/openshell_names.h"
#include "mojoup/policy/decision.h"
#include "mojoup/policy/policy.h"

namespace mojoup::policy {
namespace {

// A node config is a few settings; the service, running as root, reads it.
constexpr std::size_t kMaxNodeConfigBytes = 1 << 20;

bool IsAbsolutePath(std::string_view value) { return !value.empty() && value.front() == '/'; }

bool IsUserList(std::string_view value) {
  if (value == "*") return true;
  static const std::regex kUser("[a-z_][a-z0-9_-]{0,31}\\$?");
  for (const std::string& user : SplitConfigList(value)) {
    if (!std::regex_match(user, kUser)) return false;
  }
  return true;
}

bool IsCpuCount(std::string_view value) {
  static const std::regex kNumber("[0-9]{1,4}(\\.[0-9]{1,3})?");
  if (!std::regex_match(value.begin(), value.end(), kNumber)) return false;
  const double cpus = std::strtod(std::string(value).c_str(), nullptr);
  return cpus >= 0.1 && cpus <= 1024;
}

// A whole number from `low` to `high`, digits only.
bool IsCount(std::string_view value, long low, long high) {
  static const std::regex kDigits("[0-9]{1,10}");
  if (!std::regex_match(value.begin(), value.end(), kDigits)) return false;
  const long count = std::strtol(std::string(value).c_str(), nullptr, 10);
  return count >= low && count <= high;
}

// A key whose value is a whole number in a range, and its default.
struct CountKey {
  std::string_view name;
  long low;
  long high;
  long fallback;
};

constexpr CountKey kCountKeys[] = {
    {"node.proxy.ask_hold", 1, 300, 30},                    // seconds
    {"node.proxy.ask_expiry", 60, 86400, 3600},             // seconds
    {"node.proxy.ask_max_pending", 1, 64, 8},               // approvals per session
    {"node.audit.max_bytes", 65536, 1073741824, 16777216},  // 64 KiB to 1 GiB, 16 MiB
    {"node.audit.keep", 1, 100000, 200},                    // files
    {"node.audit.max_age_days", 1, 3650, 30},               // days
};

const CountKey* FindCountKey(std::string_view key) {
  for (const CountKey& counted : kCountKeys) {
    if (counted.name == key) return &counted;
  }
  return nullptr;
}

// The value of one of kCountKeys: as set (validated on load), else its default.
long CountSetting(const NodeConfig& config, std::string_view key) {
  if (auto set = config.Get(key)) return std::strtol(set->c_str(), nullptr, 10);
  return FindCountKey(key)->fallback;
}

// 127.0.0.1:PORT or [::1]:PORT: health and metrics are for this machine only.
bool IsLoopbackListen(std::string_view value) {
  const std::size_t colon = value.rfind(':');
  if (colon == std::string_view::npos) return false;
  const std::string_view host = value.substr(0, colon);
  if (host != "127.0.0.1" && host != "[::1]" && host != "localhost") return false;
  return IsCount(value.substr(colon + 1), 1, 65535);
}

bool IsIpv4Address(std::string_view value) {
  in_addr address{};
  return inet_pton(AF_INET, std::string(value).c_str(), &address) == 1;
}

bool IsImageReference(std::string_view value) {
  static const std::regex kImage("[a-z0-9][a-z0-9._/:@-]{0,254}");
  return std::regex_match(value.begin(), value.end(), kImage);
}

// 1-based line and column of a byte offset.
std::pair<int, int> LineColumn(std::string_view text, std::size_t offset) {
  int line = 1;
  int column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

}  // namespace

const std::vector<ConfigKey>& ConfigKeys() {
  static const std::vector<ConfigKey> kKeys = {
      {"node.sandbox.engine", "docker", "the container engine sandboxes run on", false},
      {"node.sandbox.role", kSwitchWords, "run agents in per-session containers", true},
      {"node.sandbox.runtime", "openshell or native", "who builds the sandbox", false},
      {"node.sandbox.image", "an image reference",
       "the sandbox image (default: the agent image `mojoup-node image build` builds)", false},
      {"node.sandbox.allowed_users", "comma-separated user names, or *",
       "who may run agents in its sandboxes", false},
      {"node.sandbox.openshell_path", "an absolute path", "the openshell binary", false},
      {"node.sandbox.openshell_host_address", "an IPv4 address, such as 172.18.0.1",
       "where OpenShell sandboxes reach host.openshell.internal, and so the credential proxy "
       "(default: the gateway of the OpenShell Docker driver's bridge)",
       false},
      {"node.sandbox.openshell_gateway",
       "an OpenShell gateway name, as `openshell gateway select` lists it (one path component, "
       "not starting with -)",
       "the OpenShell gateway sessions use, named with -g on every openshell call (default: the "
       "CLI's active gateway)",
       false},
      {"node.sandbox.openshell_remote", "auto, yes or no",
       "whether the OpenShell gateway shares no filesystem with this node, so the repository is "
       "uploaded and brought back (default: auto, what the gateway's metadata says)",
       false},
      {"node.sandbox.cpus", "a number of CPUs from 0.1 to 1024, such as 2 or 1.5",
       "the CPUs one sandbox may use (default: half of the node's, at least 2)", false},
      {"node.service.max_sessions", "a whole number from 1 to 10000",
       "the sessions the sandbox service runs at once (default: from the node's CPUs and "
       "memory)",
       false},
      {"node.service.max_sessions_per_user", "a whole number from 1 to 10000",
       "the sessions one user may run at once through the service (default: max_sessions)", false},
      {"node.service.drain_timeout", "seconds, from 0 to 86400",
       "how long a draining service lets sessions finish before stopping them (default: 300)",
       false},
      {"node.service.min_free_disk_mb", "a whole number of MiB from 0 to 10000000",
       "the free space the state directory's and Docker's filesystems must keep for a session "
       "to start (default: 1024)",
       false},
      {"node.service.metrics_listen", "a loopback address, such as 127.0.0.1:9464",
       "where the service answers /healthz, /readyz, /status.json and /metrics (default: off)",
       false},
      {"node.proxy.ask", kSwitchWords,
       "let a policy's \"ask\" hold a request to a host no rule decides for the operator's "
       "answer (default: off)",
       true},
      {"node.proxy.ask_hold", "seconds, from 1 to 300",
       "how long the credential proxy holds an asked request before it answers that approval is "
       "pending (default: 30)",
       false},
      {"node.proxy.ask_expiry", "seconds, from 60 to 86400",
       "how long a pending approval waits for the operator; then it expires, never granted "
       "(default: 3600)",
       false},
      {"node.proxy.ask_max_pending", "a whole number from 1 to 64",
       "the approvals one session may have pending at once (default: 8)", false},
      {"node.audit.max_bytes", "bytes, from 65536 to 1073741824",
       "the bound of one session's audit file (default: 16777216, 16 MiB)", false},
      {"node.audit.keep", "a whole number from 1 to 100000",
       "the session audit files the node keeps; older ones are removed (default: 200)", false},
      {"node.audit.max_age_days", "days, from 1 to 3650",
       "how long the node keeps a session's audit file (default: 30)", false},
      {"policy.org", "an absolute path", "the organisation's hub policy", false},
      {"policy.team", "an absolute path", "the team's hub policy", false},
      {"node.sandbox.credential_hosts.<NAME>", "comma-separated host names",
       "the hosts the credential in environment variable NAME is bound to", false},
  };
  return kKeys;
}

namespace {

constexpr std::string_view kCredentialHosts = "node.sandbox.credential_hosts.";

bool IsCredentialHostsKey(std::string_view key) {
  return key.substr(0, kCredentialHosts.size()) == kCredentialHosts;
}

const ConfigKey* FindConfigKey(std::string_view key) {
  for (const ConfigKey& known : ConfigKeys()) {
    if (known.name == key) return &known;
  }
  return nullptr;
}

absl::Status ValidateCredentialHosts(std::string_view key, std::string_view value) {
  static const std::regex kName("[A-Z_][A-Z0-9_]{0,127}");
  std::string name(key.substr(kCredentialHosts.size()));
  if (!std::regex_match(name, kName)) {
    return absl::InvalidArgumentError(fmt::format(
        "\"{}\" is not an environment variable name (expected capitals, digits and _) in {}", name,
        key));
  }
  auto invalid = [&] {
    return absl::InvalidArgumentError(fmt::format(
        "\"{}\" is not a valid value for {}: expected comma-separated lowercase host names such "
        "as api.example.com",
        value, key));
  };
  for (const std::string& host : SplitConfigList(value)) {
    auto normal = NormalizeHostPattern(host);
    if (!normal.ok()) {
      return absl::InvalidArgumentError(fmt::format("\"{}\" is not a valid value for {}: {}", value,
                                                    key, std::string(normal.status().message())));
    }
    if (*normal != host || host[0] == '*') return invalid();
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateConfigKey(std::string_view key) {
  if (FindConfigKey(key) != nullptr && !IsCredentialHostsKey(key)) return absl::OkStatus();
  if (IsCredentialHostsKey(key) && key.size() > kCredentialHosts.size()) return absl::OkStatus();
  std::string names;
  std::vector<std::string_view> candidates;
  for (const ConfigKey& known : ConfigKeys()) {
    names += (names.empty() ? "" : ", ") + std::string(known.name);
    candidates.push_back(known.name);
  }
  std::string_view near = internal::Closest(key, candidates);
  return absl::InvalidArgumentError(
      fmt::format("unknown config key \"{}\"{}; known keys: {}", key,
                  near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near), names));
}

absl::Status ValidateConfigValue(std::string_view key, std::string_view value) {
  if (auto known = ValidateConfigKey(key); !known.ok()) return known;
  if (IsCredentialHostsKey(key)) return ValidateCredentialHosts(key, value);
  const ConfigKey* found = FindConfigKey(key);
  bool ok = false;
  if (key == "node.sandbox.engine")
    ok = value == "docker";
  else if (found->is_bool)
    ok = ParseSwitch(value).has_value();
  else if (key == "node.sandbox.runtime")
    ok = value == "openshell" || value == "native";
  else if (key == "node.sandbox.image")
    ok = IsImageReference(value);
  else if (key == "node.sandbox.allowed_users")
    ok = IsUserList(value);
  else if (key == "node.sandbox.cpus")
    ok = IsCpuCount(value);
  else if (key == "node.sandbox.openshell_host_address")
    ok = IsIpv4Address(value);
  else if (key == "node.sandbox.openshell_gateway")
    ok = mojoup::internal::IsOpenShellGatewayName(value);
  else if (key == "node.sandbox.openshell_remote")
    ok = value == "auto" || value == "yes" || value == "no";
  else if (key == "node.service.max_sessions" || key == "node.service.max_sessions_per_user")
    ok = IsCount(value, 1, 10000);
  else if (key == "node.service.drain_timeout")
    ok = IsCount(value, 0, 86400);
  else if (key == "node.service.min_free_disk_mb")
    ok = IsCount(value, 0, 10000000);
  else if (key == "node.service.metrics_listen")
    ok = IsLoopbackListen(value);
  else if (const CountKey* counted = FindCountKey(key))
    ok = IsCount(value, counted->low, counted->high);
  else
    ok = IsAbsolutePath(value);
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      fmt::format("\"{}\" is not a valid value for {}: expected {}", value, key, found->accepted));
}

std::vector<std::string> SplitConfigList(std::string_view value) {
  std::vector<std::string> items;
  std::size_t start = 0;
  for (;;) {
    std::size_t end = value.find(',', start);
    items.emplace_back(value.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return items;
    start = end + 1;
  }
}

namespace {

namespace json = mojoup::internal::json;

// A value as the file holds it: the role as true or false, the rest strings.
struct Setting {
  std::string value;
  bool is_switch = false;
};

// The file's members in the order they stand: "schema" and the settings.
using Settings = std::vector<std::pair<std::string, Setting>>;

// A setting, read under its key (the member's name) and checked as it is
// read, so that the first problem in the file's order is the one reported:
// the schema must be this build's, a value a string or true/false that
// ValidateConfigValue takes. Error::message is the sentence after "/key: ".
struct SettingCodec {
  using value_type = Setting;

  template <typename W>
  void Write(W& w, const Setting& setting) const {
    if (setting.is_switch) {
      w.Bool(setting.value == "true");
    } else {
      w.String(setting.value.data(), static_cast<rapidjson::SizeType>(setting.value.size()));
    }
  }

  bool Read(const rapidjson::Value& v, Setting& out, const json::Path& path,
            json::Error& error) const {
    const std::string key(path.name);
    auto refuse = [&](std::string expected, std::string sentence) {
      error.Set(json::Error::Kind::kWrongType, path, expected);
      error.message = std::move(sentence);
      return false;
    };
    if (key == "schema") {
      if (v.IsString() && v.GetString() == kNodeConfigSchema) return true;
      const std::string schema = fmt::format("\"{}\"", kNodeConfigSchema);
      return refuse(
          schema, fmt::format("expected {}, the only node config schema this build reads", schema));
    }
    if (v.IsBool()) {
      out = {v.GetBool() ? "true" : "false", true};
    } else if (v.IsString()) {
      out = {v.GetString(), false};
    } else {
      return refuse("a string or true/false", "expected a string or true/false");
    }
    if (absl::Status valid = ValidateConfigValue(key, out.value); !valid.ok()) {
      return refuse("a valid value", std::string(valid.message()));
    }
    return true;
  }
};

constexpr SettingCodec kSetting;

// `values` as the file and config list write them.
Settings AsSettings(const std::map<std::string, std::string, std::less<>>& values) {
  Settings settings;
  for (const auto& [key, value] : values) {
    const ConfigKey* known = FindConfigKey(key);
    settings.emplace_back(key, Setting{value, known != nullptr && known->is_bool});
  }
  return settings;
}

// config list --json.
struct ConfigList {
  std::string file;
  Settings values;
  Settings defaults;
};

constexpr auto kConfigList = json::Message<ConfigList>(
    json::Const("schema", "mojoup.config/v1"), json::Field("file", &ConfigList::file),
    json::Field("values", &ConfigList::values, kSetting),
    json::Field("defaults", &ConfigList::defaults, kSetting));

}  // namespace

std::string DefaultConfigPath() {
  if (const char* path = std::getenv("MOJOUP_NODE_CONFIG"); path != nullptr && *path != '\0') {
    return path;
  }
  if (geteuid() == 0) return "/etc/mojoup/node.json";
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg == '/') {
    return std::string(xdg) + "/mojoup/node.json";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "") + "/.config/mojoup/node.json";
}

absl::StatusOr<NodeConfig> NodeConfig::Load(const std::string& path,
                                            SuppliedDefaults supplied_defaults) {
  NodeConfig config;
  config.path_ = path;
  config.supplied_defaults_ = std::move(supplied_defaults);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return config;
    return absl::PermissionDeniedError(
        fmt::format("{}: cannot read the node config: {}", path, std::strerror(errno)));
  }
  if (struct stat info{}; ::stat(path.c_str(), &info) == 0) config.owner_ = info.st_uid;
  // A byte over the limit is enough to refuse: the rest is not read.
  std::string text(kMaxNodeConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxNodeConfigBytes) {
    return absl::InvalidArgumentError(
        fmt::format("{}: the node config is over {} bytes; a node config is a few settings", path,
                    kMaxNodeConfigBytes));
  }
  rapidjson::Document doc;
  std::size_t offset = 0;
  if (absl::Status parsed = mojoup::internal::ParseBoundedJson(text, doc, "the node config",
                                                               {.utf8 = false}, &offset);
      !parsed.ok()) {
    auto [line, column] = LineColumn(text, offset);
    return absl::InvalidArgumentError(
        fmt::format("{}:{}:{}: {}", path, line, column, std::string(parsed.message())));
  }
  Settings settings;
  json::Error error;
  if (!json::Read(doc, settings, kSetting, &error).ok()) {
    if (error.path.empty()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: the node config must be a JSON object of \"key\": value", path));
    }
    return absl::InvalidArgumentError(fmt::format("{}: /{}: {}", path, error.path, error.message));
  }
  for (auto& [key, setting] : settings) {
    if (key != "schema") config.values_[key] = std::move(setting.value);
  }
  return config;
}

std::optional<std::string> NodeConfig::Get(std::string_view key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string NodeConfigJson(const std::map<std::string, std::string, std::less<>>& values) {
  Settings settings = AsSettings(values);
  settings.insert(settings.begin(), {"schema", Setting{std::string(kNodeConfigSchema)}});
  return json::ToPrettyJson(settings, kSetting) + "\n";
}

std::map<std::string, std::string, std::less<>> DefaultsInEffect(const NodeConfig& config) {
  std::map<std::string, std::string, std::less<>> defaults;
  for (const ConfigKey& key : ConfigKeys()) {
    if (config.Get(key.name)) continue;
    if (auto fallback = ConfigDefault(config, key.name))
      defaults[std::string(key.name)] = *fallback;
  }
  return defaults;
}

std::string NodeConfigListJson(const NodeConfig& config) {
  const ConfigList list{config.path(), AsSettings(config.values()),
                        AsSettings(DefaultsInEffect(config))};
  return json::ToPrettyJson(list, kConfigList) + "\n";
}

absl::Status UpdateNodeConfig(const std::string& path,
                              const std::map<std::string, std::optional<std::string>>& changes,
                              std::chrono::milliseconds lock_timeout) {
  for (const auto& [key, value] : changes) {
    if (value) {
      if (auto valid = ValidateConfigValue(key, *value); !valid.ok()) return valid;
    } else if (auto known = ValidateConfigKey(key); !known.ok()) {
      return known;
    }
  }
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  // 0644 like the config beside it.
  auto lock = mojoup::internal::LockFile(path + ".lock", lock_timeout, 0644);
  if (!lock.ok()) return lock.status();
  auto current = NodeConfig::Load(path);
  if (!current.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{}; fix or remove the file by hand, it was left as it is",
                    std::string(current.status().message())));
  }
  auto values = current->values_;
  for (const auto& [key, value] : changes) {
    if (value) {
      // A switch is stored as the JSON true or false, however it was said.
      const ConfigKey* known = FindConfigKey(key);
      values[key] =
          known != nullptr && known->is_bool ? (*ParseSwitch(*value) ? "true" : "false") : *value;
    } else {
      values.erase(key);
    }
  }
  // It holds no secret: readable by all, as files under /etc are.
  return mojoup::internal::ReplaceAtomically(path, NodeConfigJson(values), 0644);
}

std::optional<bool> ParseSwitch(std::string_view word) {
  std::string lower(word);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "on" || lower == "yes" || lower == "true") return true;
  if (lower == "off" || lower == "no" || lower == "false") return false;
  return std::nullopt;
}

std::optional<std::string> ConfigDefault(const NodeConfig& config, std::string_view key) {
  if (auto supplied = config.supplied_defaults().find(key);
      supplied != config.supplied_defaults().end()) {
    return supplied->second;
  }
  if (key == "node.sandbox.runtime") return std::string(kDefaultRuntime);
  if (key == "node.sandbox.role" || key == "node.proxy.ask") return "false";
  if (const CountKey* counted = FindCountKey(key)) return fmt::format("{}", counted->fallback);
  if (key == "node.sandbox.cpus") return fmt::format("{}", SandboxCpus(config));
  if (key == "node.service.max_sessions") return fmt::format("{}", ServiceMaxSessions(config));
  if (key == "node.service.max_sessions_per_user") {
    return fmt::format("{}", ServiceMaxSessionsPerUser(config));
  }
  if (key == "node.service.drain_timeout") {
    return fmt::format("{}", ServiceDrainTimeout(config).count());
  }
  if (key == "node.service.min_free_disk_mb") {
    return fmt::format("{}", ServiceMinFreeDiskMb(config));
  }
  if (key == "node.sandbox.allowed_users") {
    return NodeOwnerName(config);
  }
  return std::nullopt;
}

std::string SandboxRuntime(const NodeConfig& config) {
  return config.Get("node.sandbox.runtime").value_or(std::string(kDefaultRuntime));
}

int ServiceMaxSessions(const NodeConfig& config) {
  if (auto set = config.Get("node.service.max_sessions")) return std::atoi(set->c_str());
  const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  const long long memory_mib =
      pages > 0 && page_size > 0 ? static_cast<long long>(pages) * page_size / (1 << 20) : 0;
  const long long by_memory = std::max(1LL, memory_mib / 512);
  return static_cast<int>(std::max(2LL, std::min<long long>(4 * cpus, by_memory)));
}

int ServiceMaxSessionsPerUser(const NodeConfig& config) {
  if (auto set = config.Get("node.service.max_sessions_per_user")) return std::atoi(set->c_str());
  return ServiceMaxSessions(config);
}

std::chrono::seconds ServiceDrainTimeout(const NodeConfig& config) {
  if (auto set = config.Get("node.service.drain_timeout")) {
    return std::chrono::seconds(std::atol(set->c_str()));
  }
  return std::chrono::seconds(300);
}

long long ServiceMinFreeDiskMb(const NodeConfig& config) {
  if (auto set = config.Get("node.service.min_free_disk_mb")) return std::atoll(set->c_str());
  return 1024;
}

bool ProxyAskOn(const NodeConfig& config) {
  auto set = config.Get("node.proxy.ask");
  return set && ParseSwitch(*set).value_or(false);
}

std::chrono::seconds ProxyAskHold(const NodeConfig& config) {
  return std::chrono::seconds(CountSetting(config, "node.proxy.ask_hold"));
}

std::chrono::seconds ProxyAskExpiry(const NodeConfig& config) {
  return std::chrono::seconds(CountSetting(config, "node.proxy.ask_expiry"));
}

int ProxyAskMaxPending(const NodeConfig& config) {
  return static_cast<int>(CountSetting(config, "node.proxy.ask_max_pending"));
}

AskSettings AskSettingsOf(const NodeConfig& config) {
  return {ProxyAskHold(config), ProxyAskExpiry(config), ProxyAskMaxPending(config)};
}

std::uint64_t AuditMaxBytes(const NodeConfig& config) {
  return static_cast<std::uint64_t>(CountSetting(config, "node.audit.max_bytes"));
}

int AuditKeep(const NodeConfig& config) {
  return static_cast<int>(CountSetting(config, "node.audit.keep"));
}

std::chrono::days AuditMaxAge(const NodeConfig& config) {
  return std::chrono::days(CountSetting(config, "node.audit.max_age_days"));
}

AuditSettings AuditSettingsOf(const NodeConfig& config) {
  return {AuditMaxBytes(config), AuditKeep(config), AuditMaxAge(config)};
}

double SandboxCpus(const NodeConfig& config) {
  if (auto set = config.Get("node.sandbox.cpus")) return std::strtod(set->c_str(), nullptr);
  const long online = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  return static_cast<double>(std::min(online, std::max(2L, online / 2)));
}

std::string NodeConfigListText(const NodeConfig& config) {
  std::string text;
  if (config.values().empty()) {
    text = fmt::format(
        "Nothing is set in {}: every key has its default (`mojoup-node config --help` lists "
        "them).\n",
        config.path());
  }
  // One list in key order, the defaults in effect among the set values.
  std::map<std::string, std::string, std::less<>> lines;
  for (const auto& [key, value] : config.values()) lines[key] = value;
  for (const auto& [key, value] : DefaultsInEffect(config)) lines[key] = value + "  (default)";
  for (const auto& [key, value] : lines) text += fmt::format("{} = {}\n", key, value);
  return text;
}

std::vector<SetupQuestion> SetupQuestions(const NodeConfig& config) {
  return {
      {"Run agents in per-session containers (the sandbox role)? yes/no", "node.sandbox.role",
       config.Get("node.sandbox.role") == "false" ? "no" : "yes"},
      {"Runtime: openshell (NVIDIA OpenShell) or native (Docker alone)", "node.sandbox.runtime",
       SandboxRuntime(config)},
      {"Container engine", "node.sandbox.engine",
       config.Get("node.sandbox.engine").value_or("docker")},
      {"Who may run agents in this node's sandboxes? user names, comma-separated, or *",
       "node.sandbox.allowed_users",
       config.Get("node.sandbox.allowed_users").value_or(CurrentUserName())},
  };
}

absl::StatusOr<std::string> SetupAnswer(const std::string& key, std::string answer) {
  if (key == "node.sandbox.role") {
    if (answer == "y" || answer == "Y") answer = "yes";
    if (answer == "n" || answer == "N") answer = "no";
    if (auto on = ParseSwitch(answer)) answer = *on ? "true" : "false";
  }
  if (absl::Status valid = ValidateConfigValue(key, answer); !valid.ok()) return valid;
  return answer;
}

std::string ConfigKeysText() {
  std::string table = "keys:\n";
  for (const ConfigKey& key : ConfigKeys()) {
    table += fmt::format("  {}  ({})\n      {}\n", key.name, key.accepted, key.meaning);
  }
  return table;
}

std::string PathValueProblem(const std::string& key, const std::string& value) {
  if (value.empty() || value.front() != '/') return {};
  if (key == "policy.org" || key == "policy.team") {
    if (std::string problem = mojoup::internal::ReadableFileProblem(
            key, value, "a policy file (.mojoup/policy.json's schema)");
        !problem.empty()) {
      return problem;
    }
    auto loaded = LoadPolicyFile(value, key == "policy.org" ? Level::kOrg : Level::kTeam);
    return loaded.ok() ? "" : std::string(loaded.status().message());
  }
  if (key == "node.sandbox.openshell_path") {
    if (std::string problem =
            mojoup::internal::ReadableFileProblem(key, value, "the openshell program");
        !problem.empty()) {
      return problem;
    }
    if (::access(value.c_str(), X_OK) != 0) {
      return key + " " + value + ": not executable; expected the openshell program";
    }
  }
  return {};
}

}  // namespace mojoup::policy

// NodeConfig: the node's own settings (`mojoup-node config`), one JSON file.
//
// The file holds a flat object of dotted keys, validated on load:
//
//   {"schema": "mojoup.node/v1",
//    "node.sandbox.engine": "docker", "node.sandbox.role": true,
//    "node.sandbox.runtime": "native"}
//
// A missing file is an empty config (the node offers no sandboxes); a file
// that is not valid JSON, has an unknown key or a bad value is an error that
// names the file, where, and what was expected. Never silently reset.
//
//   auto config = mojoup::policy::NodeConfig::Load(mojoup::policy::DefaultConfigPath());
//   if (!config.ok()) { std::cerr << config.status().message() << "\n"; return 2; }
//   bool native = config->Get("node.sandbox.runtime") == "native";
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mojoup::policy {

inline constexpr std::string_view kNodeConfigSchema = "mojoup.node/v1";

struct ConfigKey {
  std::string_view name;
  std::string_view accepted;  // what `set` accepts, in words
  std::string_view meaning;
  bool is_bool = false;
};

// Every key the node config knows, in the order of the key table in
// docs/configuration.md ("`mojoup-node config` and `mojoup-node setup`"). A name ending in
// ".<NAME>" stands for a family of keys (node.sandbox.credential_hosts.<NAME>).
const std::vector<ConfigKey>& ConfigKeys();

// OK when `key` is a known key; else InvalidArgument listing the known ones,
// with a did-you-mean when one is close.
absl::Status ValidateConfigKey(std::string_view key);

// OK when `value` is acceptable for `key`; else InvalidArgument naming the key
// and what it accepts (an unknown key lists the known ones).
absl::Status ValidateConfigValue(std::string_view key, std::string_view value);

// A switch as people spell it: on/off, yes/no, true/false (any case). The
// same words everywhere a switch is set: `config set`, `setup --role`, the
// wizard.
std::optional<bool> ParseSwitch(std::string_view word);
inline constexpr std::string_view kSwitchWords = "on or off, yes or no, true or false";

// The items of a comma-separated value, empty ones kept ("a,,b," -> a, "", b, "").
std::vector<std::string> SplitConfigList(std::string_view value);

// --config, else MOJOUP_NODE_CONFIG, else /etc/mojoup/node.json for root and
// $XDG_CONFIG_HOME/mojoup/node.json (default ~/.config) for everyone else.
std::string DefaultConfigPath();

// Defaults that only a layer above this one knows, key -> value: the
// sandbox layer's agent image for node.sandbox.image (mojoup::Node::Open
// supplies it). ConfigDefault() reports them like its own.
using SuppliedDefaults = std::map<std::string, std::string, std::less<>>;

class NodeConfig {
 public:
  static absl::StatusOr<NodeConfig> Load(const std::string& path,
                                         SuppliedDefaults supplied_defaults = {});

  const std::string& path() const { return path_; }
  // Who owns the config file; nullopt when there is no file.
  std::optional<uid_t> owner() const { return owner_; }
  std::optional<std::string> Get(std::string_view key) const;
  // All set keys and their values ("true"/"false" for booleans), sorted.
  const std::map<std::string, std::string, std::less<>>& values() const { return values_; }
  const SuppliedDefaults& supplied_defaults() const { return supplied_defaults_; }

 private:
  friend absl::Status UpdateNodeConfig(const std::string&,
                                       const std::map<std::string, std::optional<std::string>>&,
                                       std::chrono::milliseconds);

  std::string path_;
  std::optional<uid_t> owner_;
  std::map<std::string, std::string, std::less<>> values_;
  SuppliedDefaults supplied_defaults_;
};

// What a key is when it is not set, in words a user can set it to, or
// nullopt when it has no default. `config` is for defaults that depend on the
// node (its owner, its CPUs).
std::optional<std::string> ConfigDefault(const NodeConfig& config, std::string_view key);

// Applies `changes` (key -> new value, or nullopt to unset) to the config at
// `path`: under an advisory lock on `path`.lock (waited for at most
// `lock_timeout`), the current file is read (a corrupt one is an error and is
// left as it is), changed, written to a temporary file, fsynced and renamed
// over the old one. Concurrent writers lose no update. Every change is
// validated first; nothing is written unless all are valid.
absl::Status UpdateNodeConfig(const std::string& path,
                              const std::map<std::string, std::optional<std::string>>& changes,
                              std::chrono::milliseconds lock_timeout = std::chrono::seconds(10));

// The config as the file holds it: {"schema": ..., "key": value, ...}.
std::string NodeConfigJson(const std::map<std::string, std::string, std::less<>>& values);

// The defaults in effect: every key that is not set but has a default
// (ConfigDefault), with that default.
std::map<std::string, std::string, std::less<>> DefaultsInEffect(const NodeConfig& config);

// `mojoup-node config list --json`:
// {"schema": "mojoup.config/v1", "file": PATH, "values": {"key": value, ...},
//  "defaults": {"key": value, ...}}: `values` as the file holds them,
// `defaults` the DefaultsInEffect().
std::string NodeConfigListJson(const NodeConfig& config);

// `mojoup-node config list`: "key = value" lines, the defaults in effect
// marked "(default)", after a sentence saying so when nothing is set.
std::string NodeConfigListText(const NodeConfig& config);

// The setup wizard's questions, in the order asked, each with the answer an
// empty reply takes (what is set now, else the default). When the role is
// answered off, the rest are not asked.
struct SetupQuestion {
  std::string text;
  std::string key;
  std::string fallback;
};
std::vector<SetupQuestion> SetupQuestions(const NodeConfig& config);

// A wizard's answer to the question on `key` as the value to store (yes, y,
// on... for the role are "true"); or an error saying what is accepted.
absl::StatusOr<std::string> SetupAnswer(const std::string& key, std::string answer);

// Every key, what it accepts and what it means, for help texts.
std::string ConfigKeysText();

// For the keys whose value names a file (policy.org and policy.team, a policy
// file; node.sandbox.openshell_path, a program): why `value` will not do, in
// one sentence, or "" (also for every other key). A bad path set now would
// make every later command fail on it.
std::string PathValueProblem(const std::string& key, const std::string& value);

// The CPUs one sandbox may use: node.sandbox.cpus, else half of this node's
// online CPUs but at least 2 (never more than the node has), so that one
// session's build cannot starve the node and its other sessions.
double SandboxCpus(const NodeConfig& config);

// The sandbox service's limits (docs/service.md, "Limits, drain and restarts"):
// node.service.max_sessions, else 4 per online CPU but no more than one per
// 512 MiB of memory, and at least 2;
int ServiceMaxSessions(const NodeConfig& config);
// node.service.max_sessions_per_user, else ServiceMaxSessions();
int ServiceMaxSessionsPerUser(const NodeConfig& config);
// node.service.drain_timeout, else 300 s;
std::chrono::seconds ServiceDrainTimeout(const NodeConfig& config);
// node.service.min_free_disk_mb, else 1024.
long long ServiceMinFreeDiskMb(const NodeConfig& config);

// The credential proxy's "ask" (docs/configuration.md): whether this node
// lets a policy hold a destination no rule decides for the operator's answer:
// node.proxy.ask, else off.
bool ProxyAskOn(const NodeConfig& config);
// node.proxy.ask_hold, else 30 s: how long the proxy holds an asked request;
std::chrono::seconds ProxyAskHold(const NodeConfig& config);
// node.proxy.ask_expiry, else 3600 s: how long a pending approval lives;
std::chrono::seconds ProxyAskExpiry(const NodeConfig& config);
// node.proxy.ask_max_pending, else 8: the pending approvals of one session.
int ProxyAskMaxPending(const NodeConfig& config);

// The node's ask settings in one value, for the proxy of one session.
struct AskSettings {
  std::chrono::seconds hold{30};
  std::chrono::seconds expiry{3600};
  int max_pending = 8;
};
AskSettings AskSettingsOf(const NodeConfig& config);

// Each session's audit: node.audit.max_bytes, else 16 MiB: one audit file's
// bound;
std::uint64_t AuditMaxBytes(const NodeConfig& config);
// node.audit.keep, else 200: the audit files kept;
int AuditKeep(const NodeConfig& config);
// node.audit.max_age_days, else 30: how old a kept audit file may grow.
std::chrono::days AuditMaxAge(const NodeConfig& config);

struct AuditSettings {
  std::uint64_t max_bytes = 16 << 20;
  int keep = 200;
  std::chrono::days max_age{30};
};
AuditSettings AuditSettingsOf(const NodeConfig& config);

// The runtime sessions run in: node.sandbox.runtime, else "openshell".
inline constexpr std::string_view kDefaultRuntime = "openshell";
std::string SandboxRuntime(const NodeConfig& config);

}  // namespace mojoup::policy

#include "mojoup/sandbox/openshell_policy.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "fmt/format.h"
#include "mojoup/internal/sandbox_devices.h"
#include "mojoup/policy/network_rules.h"

namespace mojoup::sandbox {
namespace {

using policy::NetworkRules;

// One network_policies entry of OpenShell's: its key, its name and the one
// endpoint it allows.
struct Entry {
  std::string key;
  std::string name;
  std::string host;
  std::uint16_t port = 0;
};

// Whether `text` is UTF-8 as YAML readers take it (RFC 3629: no overlong
// forms, surrogates or code points above U+10FFFF).
bool IsUtf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const std::size_t length = byte < 0x80           ? 1
                               : (byte >> 5) == 0x6  ? 2
                               : (byte >> 4) == 0xe  ? 3
                               : (byte >> 3) == 0x1e ? 4
                                                     : 0;
    if (length == 0 || i + length > text.size()) return false;
    std::uint32_t point = length == 1 ? byte : byte & (0x7f >> length);
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      point = (point << 6) | (next & 0x3f);
    }
    constexpr std::uint32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
    if (point < kLeast[length] || point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff)) {
      return false;
    }
    i += length;
  }
  return true;
}

// "a.b.example.com" is below "example.com".
bool Below(std::string_view name, std::string_view domain) {
  return name.size() > domain.size() && name.ends_with(domain) &&
         name[name.size() - domain.size() - 1] == '.';
}

// Whether some name `allow` admits is also one `deny` refuses.
bool Touches(const policy::HostRule& allow, const policy::HostRule& deny) {
  if (!allow.wildcard() && !deny.wildcard()) return allow.host == deny.host;
  if (!allow.wildcard()) return Below(allow.host, deny.host.substr(2));
  const std::string_view domain = std::string_view(allow.host).substr(2);
  if (!deny.wildcard()) return Below(deny.host, domain);
  const std::string_view denied = std::string_view(deny.host).substr(2);
  return denied == domain || Below(denied, domain) || Below(domain, denied);
}

// Our "*.example.com" admits names any number of labels below example.com.
// In OpenShell's policy (glob.match with "." as the delimiter,
// crates/openshell-supervisor-network/data/sandbox-policy.rego at v0.0.111)
// "*" is one label and "**" any number, so the rule goes over as "**.".
std::string OpenShellHostPattern(const policy::HostRule& rule) {
  return rule.wildcard() ? "*" + rule.host : rule.host;
}

// OpenShell refuses a "*." or "**." host of two labels or fewer ("TLD
// wildcard", validate_sandbox_policy in crates/openshell-policy/src/lib.rs,
// v0.0.92 to v0.0.111).
bool IsTldWildcard(std::string_view host) {
  return (host.starts_with("*.") || host.starts_with("**.")) &&
         std::count(host.begin(), host.end(), '.') < 2;
}

bool HasPort(const policy::HostRule& rule, std::uint16_t port) {
  return std::find(rule.ports.begin(), rule.ports.end(), port) != rule.ports.end();
}

// An entry per allowed host and port that no deny touches; what is left out
// or refused goes into `out`.
std::vector<Entry> AllowEntries(const NetworkRules& rules, OpenShellPolicy& out) {
  std::vector<const NetworkRules::Rule*> denies;
  for (const NetworkRules::Rule& rule : rules.rules()) {
    if (rule.deny) denies.push_back(&rule);
  }
  std::vector<Entry> entries;
  std::vector<std::string> seen;  // "host:port", so a host allowed twice is one entry
  for (const NetworkRules::Rule& rule : rules.rules()) {
    if (rule.deny) continue;
    const std::string host = OpenShellHostPattern(rule.host);
    if (IsTldWildcard(host) && out.refused.empty()) {
      out.refused = fmt::format(
          "{} admits every name under the top-level domain \"{}\", which OpenShell refuses "
          "(\"TLD wildcard '{}' is not allowed\"): name the domains under it instead.",
          rule.Describe(), rule.host.host.substr(2), host);
    }
    for (std::uint16_t port : rule.host.ports) {
      const std::string endpoint = fmt::format("{}:{}", rule.host.host, port);
      if (std::find(seen.begin(), seen.end(), endpoint) != seen.end()) continue;
      seen.push_back(endpoint);
      auto deny = std::find_if(denies.begin(), denies.end(), [&](const NetworkRules::Rule* d) {
        return HasPort(d->host, port) && Touches(rule.host, d->host);
      });
      if (deny != denies.end()) {
        out.dropped.push_back(fmt::format(
            "{} is left out of the OpenShell policy because {} overlaps it and OpenShell has "
            "no deny rules.",
            endpoint, (*deny)->Describe()));
        continue;
      }
      entries.push_back({.key = fmt::format("mojoup_allow_{}", entries.size() + 1),
                         .name = rule.Describe(),
                         .host = host,
                         .port = port});
    }
  }
  return entries;
}

// Every string goes out double-quoted: a path or a host stays a string
// whatever it holds (a bare 1617 would be a number), and the escapes keep
// any character inside its quotes.
void Quoted(YAML::Emitter& y, const std::string& text) { y << YAML::DoubleQuoted << text; }

// The binaries an entry admits: any program.
void AnyBinary(YAML::Emitter& y) {
  y << YAML::Key << "binaries" << YAML::Value << YAML::BeginSeq << YAML::Flow << YAML::BeginMap
    << YAML::Key << "path" << YAML::Value;
  Quoted(y, "/**");
  y << YAML::EndMap << YAML::EndSeq;
}

void EmitFilesystem(YAML::Emitter& y, const std::vector<std::string>& writable) {
  y << YAML::Key << "filesystem_policy" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "include_workdir" << YAML::Value << false;
  y << YAML::Key << "read_only" << YAML::Value << YAML::BeginSeq;
  Quoted(y, "/");
  y << YAML::EndSeq;
  y << YAML::Key << "read_write" << YAML::Value << YAML::BeginSeq;
  for (const std::string& path : writable) Quoted(y, path);
  y << YAML::EndSeq << YAML::EndMap;
}

void EmitAllow(YAML::Emitter& y, const Entry& entry) {
  y << YAML::Key << entry.key << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value;
  Quoted(y, entry.name);
  y << YAML::Key << "endpoints" << YAML::Value << YAML::BeginSeq << YAML::Flow << YAML::BeginMap
    << YAML::Key << "host" << YAML::Value;
  Quoted(y, entry.host);
  y << YAML::Key << "port" << YAML::Value << entry.port << YAML::EndMap << YAML::EndSeq;
  AnyBinary(y);
  y << YAML::EndMap;
}

// The entry that lets the sandbox reach our credential proxy.
void EmitProxy(YAML::Emitter& y, const OpenShellPolicyOptions& options) {
  y << YAML::Key << "mojoup_credential_proxy" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value;
  Quoted(y, "mojoup credential proxy (base URL)");
  y << YAML::Key << "endpoints" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  y << YAML::Key << "host" << YAML::Value;
  Quoted(y, std::string(kOpenShellHostAlias));
  y << YAML::Key << "port" << YAML::Value << options.proxy_port;
  if (!options.proxy_allowed_ip.empty()) {
    y << YAML::Key << "allowed_ips" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    Quoted(y, options.proxy_allowed_ip + "/32");
    y << YAML::EndSeq;
  }
  y << YAML::EndMap << YAML::EndSeq;
  AnyBinary(y);
  y << YAML::EndMap;
}

// The first of `texts` that is not UTF-8, which OpenShell's policy must be.
std::string NotUtf8(const std::vector<std::string>& texts) {
  for (const std::string& text : texts) {
    if (!IsUtf8(text)) {
      return fmt::format(
          "\"{}\" is not UTF-8, and OpenShell reads its policy as UTF-8: rename it to run "
          "under OpenShell.",
          text);
    }
  }
  return {};
}

}  // namespace

OpenShellPolicy TranslateToOpenShell(const policy::NetworkRules& rules,
                                     const OpenShellPolicyOptions& options) {
  OpenShellPolicy out;
  std::vector<std::string> writable = {options.repo, "/tmp", options.home};
  writable.insert(writable.end(), options.writable.begin(), options.writable.end());
  // OpenShell's Landlock handles every write right and grants none outside
  // read_write, so the devices every program writes (its own default policy
  // lists /dev/null) are granted as the native runtime grants them.
  for (const char* device : internal::kSandboxDeviceFiles) writable.emplace_back(device);
  for (const char* dir : internal::kSandboxDeviceDirs) writable.emplace_back(dir);
  const std::vector<Entry> entries = AllowEntries(rules, out);

  YAML::Emitter y;
  // Anything past ASCII as an escape, so that DEL is one too.
  y.SetOutputCharset(YAML::EscapeNonAscii);
  y << YAML::Comment("Generated by mojoup-node for one session from the effective policy.")
    << YAML::Newline;
  y << YAML::BeginMap << YAML::Key << "version" << YAML::Value << 1;
  EmitFilesystem(y, writable);
  y << YAML::Key << "landlock" << YAML::Value << YAML::BeginMap << YAML::Key << "compatibility"
    << YAML::Value << "hard_requirement" << YAML::EndMap;
  // As strings, as OpenShell's policy has them.
  y << YAML::Key << "process" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "run_as_user" << YAML::Value;
  Quoted(y, std::to_string(options.uid));
  y << YAML::Key << "run_as_group" << YAML::Value;
  Quoted(y, std::to_string(options.gid));
  y << YAML::EndMap;
  y << YAML::Key << "network_policies" << YAML::Value;
  if (entries.empty() && options.proxy_port == 0) y << YAML::Flow;
  y << YAML::BeginMap;
  for (const Entry& entry : entries) EmitAllow(y, entry);
  if (options.proxy_port != 0) EmitProxy(y, options);
  y << YAML::EndMap << YAML::EndMap;
  out.yaml = y.c_str();
  out.yaml += '\n';

  // An emitter's escapes turn bytes that are not UTF-8 into U+FFFD: refused
  // instead, as OpenShell refused them when they reached it unchanged.
  std::vector<std::string> texts = writable;
  for (const Entry& entry : entries) texts.insert(texts.end(), {entry.name, entry.host});
  if (std::string problem = NotUtf8(texts); !problem.empty() && out.refused.empty()) {
    out.refused = std::move(problem);
  }
  return out;
}

}  // namespace mojoup::sandbox

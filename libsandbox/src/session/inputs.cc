// The operator's session inputs as the CLI spells them: --credential
// NAME[=HOST,...] and --resolve HOST:PORT:ADDRESS.
#include <arpa/inet.h>

#include "fmt/format.h"
#include "mojoup/policy/policy.h"
#include "mojoup/sandbox/session.h"

namespace mojoup::sandbox {

absl::Status AddCredential(const std::string& spec, const policy::NodeConfig& config,
                           const Getenv& getenv, credproxy::Vault& vault) {
  const std::size_t equals = spec.find('=');
  const std::string name = spec.substr(0, equals);
  std::vector<std::string> hosts;
  if (equals != std::string::npos) {
    hosts = policy::SplitConfigList(spec.substr(equals + 1));
  } else if (auto bound = config.Get("node.sandbox.credential_hosts." + name)) {
    hosts = policy::SplitConfigList(*bound);
  } else {
    hosts = credproxy::DefaultBinding(name);
  }
  if (hosts.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("--credential {0} has no built-in binding; name its hosts as --credential "
                    "{0}=HOST[,HOST...] or set node.sandbox.credential_hosts.{0}",
                    name));
  }
  std::optional<std::string> value = getenv(name);
  if (!value || value->empty()) {
    return absl::InvalidArgumentError(
        fmt::format("--credential {0}: {0} is not set in this process's environment", name));
  }
  auto stand_in = vault.Add(name, *value, hosts);
  return stand_in.ok() ? absl::OkStatus() : stand_in.status();
}

absl::Status AddPin(const std::string& spec, std::map<std::string, std::string>& pins) {
  // HOST:PORT:ADDR, ADDR possibly IPv6 (with or without brackets).
  const std::size_t first = spec.find(':');
  const std::size_t second = first == std::string::npos ? first : spec.find(':', first + 1);
  std::string address = second == std::string::npos ? "" : spec.substr(second + 1);
  if (address.size() > 2 && address.front() == '[') address = address.substr(1, address.size() - 2);
  unsigned char bytes[16];
  if (second == std::string::npos || (inet_pton(AF_INET, address.c_str(), bytes) != 1 &&
                                      inet_pton(AF_INET6, address.c_str(), bytes) != 1)) {
    return absl::InvalidArgumentError(
        fmt::format("--resolve {}: expected HOST:PORT:ADDRESS", spec));
  }
  // Keyed by the spelling the proxy looks requested hosts up by, so that
  // "API.test." meets the pin for "api.test".
  auto host = policy::CanonicalHost(spec.substr(0, first));
  if (!host) {
    return absl::InvalidArgumentError(
        fmt::format("--resolve {}: \"{}\" is not a host name", spec, spec.substr(0, first)));
  }
  pins[*host + spec.substr(first, second - first)] = address;
  return absl::OkStatus();
}

}  // namespace mojoup::sandbox

// The network half of fake-openshell-sandbox: the proxy OpenShell's
// supervisor runs for every sandbox (v0.0.111
// crates/openshell-supervisor-network/src/proxy.rs, run.rs; v0.0.92 the
// same crate), as its commands meet it.
//
//   SandboxCa ca;                                 // the ephemeral CA
//   ca.WriteFiles(kTlsDir, system_bundle);        // what the child trusts
//   ProxyConfig config{ParseNetworkRules(text), upstream_pem};
//   std::thread([&] { ServeProxy(listener, config, ca); }).detach();
//
// Each connection is a CONNECT or an absolute-form plain-http request,
// judged against the policy's network_policies with OpenShell's host
// globs, then against its destination (SSRF) rules, and answered as the
// source answers: 403 with the same JSON, 200 Connection Established, the
// TLS inside terminated with a certificate of the sandbox's CA and
// re-originated to the upstream, verified against the image's CA bundle.
#pragma once

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace openshell_sandbox {

// Where the supervisor writes its CA for the child (v0.0.111
// crates/openshell-core/src/container_paths.rs TLS_ROOT,
// SUPERVISOR_CA_CERT_PATH, SUPERVISOR_CA_BUNDLE_PATH) and the proxy's
// address on the child's side (crates/openshell-supervisor-process/src/
// netns/mod.rs SUBNET_PREFIX, HOST_IP_SUFFIX; proxy.rs port 3128).
inline constexpr const char* kTlsDir = "/etc/openshell-tls";
inline constexpr const char* kCaCertPath = "/etc/openshell-tls/openshell-ca.pem";
inline constexpr const char* kCaBundlePath = "/etc/openshell-tls/ca-bundle.pem";
inline constexpr const char* kProxyAddress = "10.200.0.1";
inline constexpr std::uint16_t kProxyPort = 3128;

// One endpoint of one network_policies entry whose binaries admit every
// program (fake-openshell's NetworkRules lines: "policies N", then
// "allow KEY HOST PORT [CIDR,...]").
struct Endpoint {
  std::string host;  // as written: exact, a glob with "*", or "-" for none
  std::uint16_t port = 0;
  std::vector<std::string> allowed_ips;
};

// OPA's glob.match(pattern, ["."], name), as the policy matches hosts
// (crates/openshell-supervisor-network/data/sandbox-policy.rego
// endpoint_allowed): "*" is any run within one label, "**" any run across
// labels, "?" one character of a label; case-insensitive.
bool HostGlobMatch(std::string_view pattern, std::string_view name);

// The sandbox's ephemeral CA (l7/tls.rs SandboxCa::generate: CN "OpenShell
// Sandbox CA", O "OpenShell", key usages cert sign and CRL sign) and the
// leaf certificates it signs per host (CertCache).
class SandboxCa {
 public:
  SandboxCa();  // error() says why it could not
  ~SandboxCa();
  SandboxCa(const SandboxCa&) = delete;
  SandboxCa& operator=(const SandboxCa&) = delete;

  const std::string& error() const { return error_; }
  const std::string& certificate_pem() const { return pem_; }
  // write_ca_files: the CA alone, and the system bundle with the CA after it.
  bool WriteFiles(const std::string& system_bundle, std::string& error) const;
  // A server context presenting a leaf for `host` and the CA after it, with
  // a reference of the caller's own to free (the cache may drop its own).
  SSL_CTX* ServerContext(const std::string& host);

 private:
  EVP_PKEY* key_ = nullptr;
  X509* cert_ = nullptr;
  std::string pem_;
  std::string error_;
  std::mutex mu_;
  std::map<std::string, SSL_CTX*> leaves_;
};

struct ProxyConfig {
  int policies = 0;  // the policy's network_policies entries, whatever they admit
  std::vector<Endpoint> endpoints;
  // The CAs the proxy trusts upstream: the image's bundle (build_upstream_
  // client_config), with the test hook's CAs standing in for public ones.
  // The real proxy adds Mozilla's roots too (the bundled-ca-roots
  // feature, webpki_roots): not here, so an image without a bundle
  // reaches no HTTPS upstream in the fake.
  std::string trusted_pem;
  // Where the supervisor keeps the policy's live rules (NetworkRules' lines):
  // each connection is judged by what it holds then, so a `policy update`
  // the supervisor loaded applies to the next connection, as the real
  // proxy's OPA engine reloads (v0.0.111 crates/openshell-supervisor-process/
  // src/lib.rs run_policy_poll_loop). Empty: the rules above, for good.
  std::string policy_file;
};
// The policy's part of a ProxyConfig from NetworkRules' lines.
void ParseNetworkRules(const std::string& text, ProxyConfig& config);

// Where fake-openshell-sandbox keeps the live rules in the container: under
// OpenShell's own /run/openshell, which mounts may not touch.
inline constexpr const char* kPolicyFile = "/run/openshell/fake-network-rules";

// What the supervisor's LogPushLayer sends the gateway (v0.0.111
// crates/openshell-supervisor-process/src/log_push.rs), carried to
// fake-openshell's `logs` as a line of the container's stderr (the double's
// own transport; the real one is gRPC PushSandboxLogs):
//   "openshell-log <timestamp_ms> <level> <target> <message>"
inline constexpr std::string_view kLogPrefix = "openshell-log ";
void PushLog(std::string_view level, std::string_view target, std::string_view message);

// The first CA bundle of the image that exists (l7/tls.rs SYSTEM_CA_PATHS),
// as text; "" when none.
std::string ReadSystemCaBundle();

// Accepts on `listener` (bound in the child's network namespace) for ever,
// serving each connection on a thread of its own; upstream sockets are
// opened in this process's namespace.
void ServeProxy(int listener, const ProxyConfig& config, SandboxCa& ca);

}  // namespace openshell_sandbox

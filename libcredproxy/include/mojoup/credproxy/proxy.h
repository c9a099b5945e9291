// Proxy: the session's egress proxy and credential swap, the single
// enforcement point for what an agent may reach.
//
// It is an HTTP forward proxy (absolute-form requests and CONNECT) on a unix
// socket and/or loopback TCP. Every connection is checked against the
// session's NetworkRules (deny wins); the proxy resolves names itself, refuses
// loopback, private, link-local (metadata), unspecified and multicast
// addresses unless a rule names the address or the operator pinned it, and
// connects to the very address it checked. For hosts with a bound credential
// it terminates TLS with the session CA, checks that each HTTP/1.1 request
// names that host, swaps stand-ins for real values in its credential headers
// (nowhere else), re-originates verified TLS to the real host, and scrubs the
// response: a real value sent back reaches the sandbox as its stand-in.
// A sign-in's refresh token (Vault::AddToken) is swapped only in its field
// of a POST to its token endpoint, whose body is read whole; the provider's
// answer is read whole too, its new tokens go into the vault (on_refresh
// tells the sign-in's owner) and the sandbox gets fresh stand-ins for them.
// Other allowed hosts get a plain tunnel. A stand-in the proxy can see
// anywhere else is refused with 403, never forwarded; TRACE and TRACK never
// are.
// Refusals are 403 with X-Mojoup-Proxy-Error and a JSON body; every decision
// is one "egress" event of the session's AuditLog (audit.h).
//
//   ProxyOptions options;
//   options.rules = NetworkRules::Build(policy, "claude-code");
//   options.listen = "127.0.0.1:0";
//   options.vault.Add("ANTHROPIC_API_KEY", key, {"api.anthropic.com"});
//   auto proxy = Proxy::Start(std::move(options));   // serves on its own thread
//   std::string address = (*proxy)->tcp_address();   // "127.0.0.1:40123"
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "mojoup/credproxy/approvals.h"
#include "mojoup/credproxy/audit.h"
#include "mojoup/credproxy/vault.h"
#include "mojoup/policy/network_rules.h"

namespace mojoup::credproxy {

// The request headers (lowercase) a stand-in is swapped in:
// policy::kCommonCredentialHeaders (authorization, x-api-key, api-key,
// x-goog-api-key), plus the credential headers of `tool`'s profile when it
// names one.
std::vector<std::string> CredentialHeaders(std::string_view tool);

// A sign-in's tokens renewed by its provider: what a token endpoint answered
// a request that carried the sign-in's own refresh token (its stand-in,
// swapped by the proxy). The sandbox got fresh stand-ins for them.
struct TokenRefresh {
  std::string sign_in;
  struct Token {
    std::string name;  // the vault credential
    TokenRole role = TokenRole::kAccess;
    std::string value;  // the provider's real token
  };
  std::vector<Token> tokens;
  std::optional<double> expires_in;  // seconds, when the provider said
};

// What the owner of a sign-in says of it, asked before its tokens are used.
struct SignInCheck {
  enum class State {
    kCurrent,  // as the proxy has it
    kRenewed,  // the user refreshed it outside the session: use `tokens`
    kStale,    // it changed into something the session cannot use: `why`
  };
  State state = State::kCurrent;
  std::vector<std::pair<std::string, std::string>> tokens;  // credential name, real value
  std::string why;
};

struct ProxyOptions {
  std::string session = "session";
  policy::NetworkRules rules;
  Vault vault;
  // "127.0.0.1:0" (any free port); empty: no TCP listener.
  std::string listen;
  // A unix socket path; empty: none. At least one of listen and socket.
  std::string socket;
  // Where sandboxed processes reach the proxy, for the proxy variables
  // (HTTP(S)_PROXY) of Environment(): whoever puts the proxy before a
  // sandbox knows ("127.0.0.1:3128" where the sandbox bridges that to the
  // socket). Empty: the TCP listener's address; without one, no proxy
  // variables.
  std::string sandbox_address;
  // False: Environment() has no proxy variables whatever the address (a
  // sandbox whose own proxy owns egress reaches this one through base URLs).
  bool proxy_variables = true;
  // "host:port" -> address: the operator's explicit choice, so a pinned
  // loopback or private address is allowed.
  std::map<std::string, std::string> pins;
  // A PEM file of extra CAs to trust for upstream servers; the sandbox's CA
  // variables carry them too, for the hosts it tunnels.
  std::string upstream_ca;
  // Where a stand-in is swapped for its real value (lowercase names; in
  // Authorization, the token of Bearer/token or Basic's user or password).
  std::vector<std::string> credential_headers = CredentialHeaders("");
  // The session's audit: one "egress" event per request or tunnel decided.
  std::shared_ptr<AuditLog> audit;
  // Without `audit`: the same events appended to this file, unbounded (the
  // standalone proxy's --audit); empty: none.
  std::string audit_file;
  // Where the session CA's certificate and the CA bundle are written.
  std::string ca_dir;

  // Ask: set, a request to a destination no rule decided (no allow rule, no
  // deny rule, not a blocked address) is held for the operator's answer
  // (see approvals.h); the hold is at most 300 s whatever the approvals'
  // options say. Null: such a request is refused at once.
  std::shared_ptr<Approvals> approvals;
  // Where the operator reaches `approvals`: a unix socket only this
  // process's user and root may use, served beside the proxy; empty: none.
  // It is the operator's: never put it where a sandbox can reach it.
  std::string control_socket;

  // Called on the proxy's thread, after the vault took the new tokens and
  // before the answer goes on to the sandbox: the node writes them to the
  // host's sign-in file.
  std::function<void(const TokenRefresh&)> on_refresh;
  // Called on the proxy's thread before a request to a host a sign-in's
  // tokens go to; empty: always kCurrent.
  std::function<SignInCheck(const std::string& sign_in)> check_sign_in;

  std::chrono::milliseconds header_timeout{10000};  // slowloris guard
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds idle_timeout{120000};  // keep-alive between requests
  std::size_t header_limit = 64 * 1024;
  std::size_t max_connections = 1024;
};

class Proxy {
 public:
  // Binds the listeners, creates the session CA, writes ca.pem and
  // ca-bundle.pem (the system store plus the session CA) into ca_dir, and
  // starts serving on a thread of its own.
  //
  // Effects on the whole calling process, for good: the process holds real
  // credentials from now on, so it becomes non-dumpable (prctl
  // PR_SET_DUMPABLE 0: other processes of the same user can no longer read
  // its memory or environment through /proc or ptrace it) and its core dump
  // limit, soft and hard, becomes 0 (inherited by its children). The
  // program's SIGPIPE disposition is left alone: the serving thread blocks
  // SIGPIPE for itself, so a client or upstream that goes away mid-write is
  // an EPIPE error on that connection, never the end of the program.
  static absl::StatusOr<std::unique_ptr<Proxy>> Start(ProxyOptions options);
  ~Proxy();  // stops serving, closes every connection, removes the socket

  std::string tcp_address() const;  // "127.0.0.1:40123", or "" without TCP
  std::string socket_path() const;
  std::string ca_cert_path() const;    // the session CA alone (NODE_EXTRA_CA_CERTS)
  std::string ca_bundle_path() const;  // system CAs + session CA (SSL_CERT_FILE, ...)

  // What a sandboxed process gets: proxy variables (see sandbox_address), CA
  // variables for every tool, and each API key's stand-in (a sign-in's
  // stand-ins are in its files).
  std::map<std::string, std::string> Environment() const;

  struct Impl;

 private:
  explicit Proxy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// True for loopback, RFC 1918 and fc00::/7 private, link-local (169.254/16,
// fe80::/10, so the cloud metadata address too), unspecified, multicast and
// CGNAT (100.64/10) addresses, and for IPv6 addresses that lead to such an
// IPv4 address: IPv4-mapped and IPv4-translated (::ffff:0:0/96),
// IPv4-compatible (::/96), NAT64 (64:ff9b::/96, 64:ff9b:1::/48), 6to4
// (2002::/16) and Teredo clients (2001::/32). A rule that names the address
// exempts it (NetworkRules::Ruling::NamesAddress), nothing else does.
bool IsBlockedAddress(const std::string& address);

}  // namespace mojoup::credproxy

// Refusal: a 403 the proxy sends, worded so that an agent reads it as policy,
// not as a fault to work around.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "mojoup/credproxy/vault.h"

namespace mojoup::credproxy {

struct Refusal {
  std::string code;  // X-Mojoup-Proxy-Error
  std::string host;
  std::uint16_t port = 0;
  std::string rule;     // the rule or binding that refused
  std::string message;  // one or two sentences for the agent and its user
  // Where `rule` came from, for the audit, when a policy's rule refused
  // ("repo: FILE", "default"); not in the body.
  std::string source{};

  // {"error": code, "host": ..., "port": ..., "rule": ..., "message": ...}
  std::string Json() const;

  static Refusal BlockedByPolicy(const std::string& host, std::uint16_t port,
                                 const std::string& rule);
  // `where` ("in the request body"), when it is not the head.
  static Refusal CredentialMismatch(const std::string& host, std::uint16_t port,
                                    const Credential& credential, bool over_tls,
                                    const std::string& where = "");
  // A sign-in token's stand-in in a token request where it is not swapped
  // (`where`: "in the request body, where it is not swapped").
  static Refusal TokenMisplaced(const std::string& host, std::uint16_t port,
                                const Credential& credential, const std::string& where);
  // A sign-in that changed on the host into something the session cannot use.
  static Refusal SignInStale(const std::string& host, std::uint16_t port,
                             const std::string& sign_in, const std::string& why);
  // A stand-in bound to this host, but outside the credential headers.
  static Refusal StandInMisplaced(const std::string& host, std::uint16_t port,
                                  const Credential& credential, const std::string& where,
                                  const std::vector<std::string>& credential_headers);
  // A request inside a tunnel to host:port that names another authority.
  static Refusal HostMismatch(const std::string& host, std::uint16_t port,
                              const std::string& named);
  // TRACE or TRACK: the answer would be the request, credentials and all.
  static Refusal ReflectingMethod(const std::string& host, std::uint16_t port,
                                  const std::string& method);
  // Ask: a request held for the operator's answer that got none in time,
  // one the operator denied, and one not asked because too many are pending.
  static Refusal ApprovalPending(const std::string& host, std::uint16_t port,
                                 const std::string& approval, std::chrono::seconds held);
  static Refusal ApprovalDenied(const std::string& host, std::uint16_t port,
                                const std::string& approval, const std::string& by,
                                const std::string& reason);
  static Refusal ApprovalLimit(const std::string& host, std::uint16_t port, std::size_t pending);
  static Refusal BlockedAddress(const std::string& host, std::uint16_t port,
                                const std::string& address);
};

// The body of a non-403 error (400, 408, 431, 502, 503).
std::string ErrorJson(int status, const std::string& message);

}  // namespace mojoup::credproxy

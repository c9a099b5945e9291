// SessionCa: a certificate authority that lives for one session. The proxy
// terminates TLS for hosts with a bound credential using leaf certificates
// this CA mints (EC P-256, SAN = the host, cached per host). The CA's
// certificate goes into the session's environment; its private key never
// leaves the process.
//
//   auto ca = SessionCa::Create("session-42");
//   std::string pem = (*ca)->certificate_pem();
//   std::shared_ptr<ServerTls> tls = *(*ca)->ServerContext("api.anthropic.com");
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace mojoup::credproxy {

// A TLS server context presenting one host's leaf certificate. Opaque here:
// the proxy (and the test servers) reach the TLS library's context through
// the private header server_tls.h, so no TLS library type is in this API.
class ServerTls;

class SessionCa {
 public:
  static absl::StatusOr<std::unique_ptr<SessionCa>> Create(const std::string& session);
  ~SessionCa();
  SessionCa(const SessionCa&) = delete;
  SessionCa& operator=(const SessionCa&) = delete;

  // The CA certificate, PEM.
  const std::string& certificate_pem() const { return certificate_pem_; }

  // A TLS server context presenting a leaf certificate for `host` (a DNS name
  // or an IP address), offering ALPN http/1.1 only. Minted once per host.
  absl::StatusOr<std::shared_ptr<ServerTls>> ServerContext(const std::string& host);

 private:
  struct Keys;
  struct Minted;
  SessionCa();
  std::unique_ptr<Keys> keys_;
  std::string certificate_pem_;
  std::unique_ptr<Minted> minted_;  // the leaf contexts, by host, behind their lock
};

}  // namespace mojoup::credproxy

// SessionCa: a certificate authority that lives for one session. The proxy
// terminates TLS for hosts with a bound credential using leaf certificates
// this CA mints (EC P-256, SAN = the host, cached per host). The CA's
// certificate goes into the session's environment; its private key never
// leaves the process.
//
//   auto ca = SessionCa::Create("session-42");
//   ca->WriteCertificate("/run/mojoup/s42/ca.pem");
//   std::shared_ptr<boost::asio::ssl::context> tls = ca->ServerContext("api.anthropic.com");
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"

namespace boost::asio::ssl {
class context;
}

namespace mojoup::sandbox::credproxy {

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
  absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> ServerContext(const std::string& host);

 private:
  struct Keys;
  SessionCa();
  std::unique_ptr<Keys> keys_;
  std::string certificate_pem_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<boost::asio::ssl::context>> contexts_;
};

}  // namespace mojoup::sandbox::credproxy

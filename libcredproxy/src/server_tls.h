// ServerTls's definition: the Boost.Asio TLS context behind the opaque type
// SessionCa::ServerContext returns. Private, so that the installed headers
// name no Boost or OpenSSL type.
#pragma once

#include <boost/asio/ssl/context.hpp>

#include "mojoup/credproxy/session_ca.h"

namespace mojoup::credproxy {

class ServerTls {
 public:
  ServerTls() : context_(boost::asio::ssl::context::tls_server) {}

  boost::asio::ssl::context& context() { return context_; }

 private:
  boost::asio::ssl::context context_;
};

}  // namespace mojoup::credproxy

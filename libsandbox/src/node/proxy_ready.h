// The line `mojoup-node proxy` prints once its credential proxy listens.
#pragma once

#include <map>
#include <string>

namespace mojoup {

struct ProxyReady {
  std::string listen;  // "127.0.0.1:40123", or "" without TCP (written as null)
  std::string socket;  // the unix socket's path, or "" without one (written as null)
  std::string ca_cert;
  std::map<std::string, std::string> env;  // what a client puts in its environment
};

// {"schema":"mojoup.proxy/v1","listen":...,"socket":...,"ca_cert":...,"env":{...}}
std::string ProxyReadyJson(const ProxyReady& ready);

}  // namespace mojoup

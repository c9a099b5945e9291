// Where a client finds a service, and where a service listens by default.
#include <unistd.h>

#include <cstdlib>

#include "mojoup/internal/user_dirs.h"
#include "mojoup/service/client.h"

namespace mojoup {

std::string DefaultServiceSocket() {
  if (const char* set = std::getenv("MOJOUP_SERVICE_SOCKET"); set != nullptr && *set == '/') {
    return set;
  }
  if (::geteuid() == 0) return "/run/mojoup/node.sock";
  return internal::DefaultStateDir() + "/node.sock";
}

std::vector<std::string> ServiceSocketCandidates() {
  if (const char* set = std::getenv("MOJOUP_SERVICE_SOCKET"); set != nullptr && *set == '/') {
    return {set};
  }
  std::vector<std::string> candidates = {DefaultServiceSocket()};
  if (candidates.front() != "/run/mojoup/node.sock") candidates.push_back("/run/mojoup/node.sock");
  return candidates;
}

}  // namespace mojoup

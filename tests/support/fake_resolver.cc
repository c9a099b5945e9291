// A resolver for tests, loaded with LD_PRELOAD into a program under test:
// getaddrinfo answers the names listed in MOJOUP_FAKE_HOSTS
// ("name=address,name=address") with those addresses, as a DNS server under
// the test's control would, and hands every other name to libc. It lets a
// test make a name resolve to any address (an IPv6 form of loopback, say)
// without touching /etc/hosts or the network.
#include <dlfcn.h>
#include <netdb.h>

#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int getaddrinfo(const char* node, const char* service, const addrinfo* hints,
                           addrinfo** result) {
  using Fn = int (*)(const char*, const char*, const addrinfo*, addrinfo**);
  static const Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "getaddrinfo"));
  const char* table = std::getenv("MOJOUP_FAKE_HOSTS");
  if (node == nullptr || table == nullptr) return real(node, service, hints, result);
  for (std::string_view rest = table; !rest.empty();) {
    const std::size_t comma = rest.find(',');
    const std::string_view entry = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const std::size_t equals = entry.find('=');
    if (equals == std::string_view::npos || entry.substr(0, equals) != node) continue;
    const std::string address(entry.substr(equals + 1));
    addrinfo numeric{};
    if (hints != nullptr) numeric = *hints;
    // The answer a DNS server gave, whatever addresses this machine has.
    numeric.ai_flags = (numeric.ai_flags | AI_NUMERICHOST) & ~AI_ADDRCONFIG;
    return real(address.c_str(), service, &numeric, result);
  }
  return real(node, service, hints, result);
}

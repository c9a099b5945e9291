// The credential proxy on its own (mojoup::credproxy, no sandbox library):
// a policy that allows one host, a proxy that enforces it, and two requests
// through it. The allowed host is a tiny HTTP server of this program's own,
// pinned to loopback the way an operator's `--resolve` pins a name; the
// other host is refused by the proxy before any name is looked up.
//
//   egress_proxy      prints "allowed.test: 200" and "other.test: 403", exit 0
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <thread>

#include "mojoup/credproxy/proxy.h"
#include "mojoup/policy/effective_policy.h"
#include "mojoup/policy/policy.h"

namespace {

// A loopback listener on any free port.
int Listen(int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(fd, 1) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return -1;
  }
  port = ntohs(address.sin_port);
  return fd;
}

// Sends `request` to the proxy at "127.0.0.1:PORT" and returns the status
// code of its answer, or -1.
int Ask(const std::string& proxy, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(std::stoi(proxy.substr(proxy.rfind(':') + 1))));
  int status = -1;
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    char head[64] = {};
    if (::read(fd, head, sizeof head - 1) > 12) status = std::stoi(std::string(head + 9, 3));
  }
  if (fd >= 0) ::close(fd);
  return status;
}

}  // namespace

int main() {
  int port = 0;
  const int upstream = Listen(port);
  if (upstream < 0) {
    std::cerr << "egress_proxy: cannot listen on loopback\n";
    return 1;
  }
  std::thread server([upstream] {
    const int client = ::accept(upstream, nullptr, nullptr);
    if (client < 0) return;
    char buffer[4096];
    (void)::read(client, buffer, sizeof buffer);
    const std::string answer =
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
    (void)::write(client, answer.data(), answer.size());
    ::close(client);
  });

  // A rule without "ports" allows 443 and 80; this server listens elsewhere.
  const std::string json =
      R"({"agents": {"network": {"allow": [{"host": "allowed.test", "ports": [)" +
      std::to_string(port) + "]}]}}}";
  auto file = mojoup::policy::ParsePolicy(json, "policy.json", mojoup::policy::Level::kRepo);
  if (!file.ok()) {
    std::cerr << "egress_proxy: " << file.status().message() << "\n";
    return 1;
  }
  mojoup::credproxy::ProxyOptions options;
  options.rules = mojoup::policy::NetworkRules::Build(mojoup::policy::Layer({*file}), "");
  options.listen = "127.0.0.1:0";
  const std::string target = "allowed.test:" + std::to_string(port);
  options.pins[target] = "127.0.0.1";
  char ca_dir[] = "/tmp/egress-proxy-XXXXXX";
  if (::mkdtemp(ca_dir) == nullptr) return 1;
  options.ca_dir = ca_dir;
  auto proxy = mojoup::credproxy::Proxy::Start(std::move(options));
  if (!proxy.ok()) {
    std::cerr << "egress_proxy: " << proxy.status().message() << "\n";
    return 1;
  }
  const std::string address = (*proxy)->tcp_address();
  const int allowed = Ask(address, "GET http://" + target + "/ HTTP/1.1\r\nHost: " + target +
                                       "\r\nConnection: close\r\n\r\n");
  const int refused = Ask(address,
                          "GET http://other.test/ HTTP/1.1\r\nHost: other.test\r\n"
                          "Connection: close\r\n\r\n");
  std::cout << "allowed.test: " << allowed << "\nother.test: " << refused << "\n";
  ::shutdown(upstream, SHUT_RDWR);
  server.join();
  ::close(upstream);
  proxy->reset();
  std::filesystem::remove_all(ca_dir);
  return allowed == 200 && refused == 403 ? 0 : 1;
}

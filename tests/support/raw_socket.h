// A test client's raw socket to a server (the proxy, a control socket): for
// requests a well-behaved HTTP client would never send, and answers read
// byte for byte until the server closes.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace mojoup::test {

// A connected socket to "127.0.0.1:PORT" (any host part is taken as the
// loopback) or a unix socket path; reads give up after `limit`.
inline int Dial(const std::string& where, std::chrono::seconds limit = std::chrono::seconds(10)) {
  int fd = -1;
  if (where.front() == '/') {
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", where.c_str());
    REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  } else {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port =
        htons(static_cast<std::uint16_t>(std::stoi(where.substr(where.rfind(':') + 1))));
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  }
  timeval timeout{static_cast<time_t>(limit.count()), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  return fd;
}

inline void Send(int fd, const std::string& text) {
  REQUIRE(send(fd, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size()));
}

// Everything the server sends until it closes (or the read limit passes);
// closes `fd`.
inline std::string ReadToClose(int fd) {
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) text.append(buf, static_cast<std::size_t>(n));
  close(fd);
  return text;
}

}  // namespace mojoup::test

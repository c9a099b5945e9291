// What the test upstreams (EchoServer, FakeProvider) share: a listening TCP
// socket whose connections are each served on a thread of their own, and
// the record of a request as a test reads it back.
//
//   ThreadServer server("127.0.0.1", 0, [](asio::ip::tcp::socket& socket) { ... });
//   if (!server.error().empty()) MOJOUP_SKIP(server.error());
//   connect to server.port() ...
//
// The destructor stops accepting, shuts every open connection down (so a
// serve blocked in a read returns) and joins their threads.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "echo_server.h"

namespace mojoup::test {

class ThreadServer {
 public:
  using Serve = std::function<void(boost::asio::ip::tcp::socket&)>;
  // Listens on `address` (IPv4) and `port` (0: any free one). error() says
  // why it could not.
  ThreadServer(const std::string& address, unsigned short port, Serve serve);
  ~ThreadServer();
  ThreadServer(const ThreadServer&) = delete;
  ThreadServer& operator=(const ThreadServer&) = delete;

  const std::string& error() const { return error_; }
  unsigned short port() const { return port_; }
  // How many connections it has accepted so far.
  int accepted() const { return accepted_.load(); }
  // Whether a connection has arrived that it has not accepted yet.
  bool Pending() const;

 private:
  void AcceptLoop();
  void ServeOne(int fd);

  Serve serve_;
  std::string error_;
  int listen_fd_ = -1;
  unsigned short port_ = 0;
  std::mutex mu_;
  bool stopping_ = false;
  std::vector<int> connections_;
  std::atomic<int> accepted_{0};
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

// The request's method, target, headers (names lowercased, full values) and
// body size.
SeenRequest Recorded(const boost::beast::http::request<boost::beast::http::string_body>& request);

}  // namespace mojoup::test

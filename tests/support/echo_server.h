// EchoServer: an upstream for proxy tests, on 127.0.0.1, plain HTTP or TLS
// with a certificate from its own CA. It records every request it receives
// (so a test can see what really arrived upstream) and answers with
// fingerprints of what it saw, never the values themselves:
//   {"method": "GET", "target_sha256": "...", "headers": {"authorization": "<sha256>", ...},
//    "body_bytes": 0}
// "/bytes/N" answers with N bytes instead (for throughput); a WebSocket
// upgrade request gets 101 and then every byte echoed back.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace boost::asio::ssl {
class context;
}

namespace mojoup::test {

struct SeenRequest {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased
  std::size_t body_bytes = 0;
  std::string Header(const std::string& name) const;
};

class EchoServer {
 public:
  // `tls` null: plain HTTP.
  explicit EchoServer(std::shared_ptr<boost::asio::ssl::context> tls = nullptr);
  ~EchoServer();
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;

  unsigned short port() const { return port_; }
  std::vector<SeenRequest> seen() const;

 private:
  void AcceptLoop();
  void Serve(int fd);

  std::shared_ptr<boost::asio::ssl::context> tls_;
  int listen_fd_ = -1;
  unsigned short port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::vector<SeenRequest> seen_;
  std::vector<int> connections_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

std::string Sha256Hex(const std::string& text);

}  // namespace mojoup::test

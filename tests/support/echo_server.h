// EchoServer: an upstream for proxy tests, on 127.0.0.1 (or an address given), plain HTTP or TLS
// with a certificate from its own CA. It records every request it receives
// (so a test can see what really arrived upstream) and answers with
// fingerprints of what it saw, never the values themselves:
//   {"method": "GET", "target_sha256": "...", "headers": {"authorization": "<sha256>", ...},
//    "body_bytes": 0}
// "/bytes/N" answers with N bytes instead (for throughput); "/NAME.git/info/refs"
// as a dumb-protocol git server with one branch, main at kEchoGitCommit; a WebSocket
// upgrade request gets 101 and then every byte echoed back.
//
// It is also a *reflecting upstream*, the kind that hands a request's
// credentials back: a path starting "/reflect" answers with the request
// itself, as a careless or hostile API might:
//   the body       "target: T\n" then "name: value\n" per header, then the
//                  request body; with ?b64=1 base64 of all that
//   the head       X-Echo-Target: T, and X-Echo-<name>: value per header
// shaped by the query:
//   gzip=1         the body gzip-compressed (Content-Encoding: gzip) whatever
//                  the request's Accept-Encoding; deflate=1 likewise (zlib)
//   chunked=1      Transfer-Encoding: chunked (else Content-Length)
//   split=N        the body written N bytes at a time, each piece flushed
//                  and a moment apart (as chunks of N with chunked=1), so a
//                  reflected key crosses piece and chunk boundaries
// A WebSocket upgrade to /reflect... sends that text as its first bytes after
// the 101, then echoes. TRACE, to any path, is answered as RFC 9110 says: 200, message/http, the
// request head as received.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "mojoup/internal/sha256.h"

namespace mojoup::credproxy {
class ServerTls;  // from SessionCa::ServerContext
}

namespace mojoup::test {

class ThreadServer;  // test_server.h

// The commit the git answer names as main.
inline constexpr const char* kEchoGitCommit = "0123456789abcdef0123456789abcdef01234567";

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
  explicit EchoServer(std::shared_ptr<credproxy::ServerTls> tls = nullptr,
                      const std::string& address = "127.0.0.1");
  ~EchoServer();
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;

  unsigned short port() const;
  std::vector<SeenRequest> seen() const;
  // How many connections it has accepted so far.
  int connections() const;
  // Lets GET /hold send its last chunk (it waits up to 30 s for this).
  void Release();

 private:
  std::shared_ptr<credproxy::ServerTls> tls_;
  mutable std::mutex mu_;
  std::condition_variable released_changed_;
  bool released_ = false;
  std::vector<SeenRequest> seen_;
  std::unique_ptr<ThreadServer> server_;  // last: it stops first
};

// The libraries' own digest, which the tests compare audit lines against.
using mojoup::internal::Sha256Hex;

// `text` gzip-compressed (one member), or zlib-wrapped deflate.
std::string Gzip(const std::string& text, bool zlib_only = false);
// `text` in standard base64.
std::string Base64(const std::string& text);

}  // namespace mojoup::test

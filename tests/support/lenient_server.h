// LenientServer: an upstream on 127.0.0.1 (plain, or TLS) that reads
// requests with ParseLeniently (lenient_parser.h), the way lax servers do,
// and answers each it finds 200 with a short body on a connection it keeps
// open. It records every request, and any bytes a connection ended with
// that were not a whole request.
//
//   LenientServer first(Repeated::kFirst), last(Repeated::kLast);
//   ... send the same bytes through the proxy to each ...
//   first.WaitIdle(); last.WaitIdle();
//   compare first.seen() with last.seen()
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lenient_parser.h"

namespace mojoup::credproxy {
class ServerTls;  // from SessionCa::ServerContext
}

namespace mojoup::test {

class ThreadServer;  // test_server.h

class LenientServer {
 public:
  explicit LenientServer(Repeated repeated, std::shared_ptr<credproxy::ServerTls> tls = nullptr);
  ~LenientServer();
  LenientServer(const LenientServer&) = delete;
  LenientServer& operator=(const LenientServer&) = delete;

  unsigned short port() const;
  std::vector<LenientRequest> seen() const;
  // Bytes that connections ended with, not a whole request.
  std::vector<std::string> leftovers() const;
  // Waits until every connection accepted so far has ended; false after `limit`.
  bool WaitIdle(std::chrono::milliseconds limit) const;
  void Clear();

 private:
  Repeated repeated_;
  std::shared_ptr<credproxy::ServerTls> tls_;
  mutable std::mutex mu_;
  mutable std::condition_variable ended_;
  int started_ = 0;
  int finished_ = 0;
  std::vector<LenientRequest> seen_;
  std::vector<std::string> leftovers_;
  std::unique_ptr<ThreadServer> server_;  // last: it stops first
};

}  // namespace mojoup::test

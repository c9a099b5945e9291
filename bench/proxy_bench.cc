// bench_proxy [--gib N] [--runs N] [--requests N] [--idle N]
//
// The credential proxy (`mojoup-node proxy`, a process of its own) measured
// in one run, medians throughout:
//   1. CONNECT tunnel throughput for N GiB (default 1) from a local source,
//      against a direct connection and against Debian's tinyproxy on the
//      same path. Goals: >= 0.9x direct, and above tinyproxy.
//   2. Latency of small keep-alive requests through interception (TLS
//      terminated, stand-in swapped, TLS re-originated), p50 and p99,
//      against direct TLS to the same server. Goal: under 0.5 ms added at p50.
//   3. The proxy's memory with 500 idle tunnels. Goal: under 64 KiB each.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../tests/support/background_process.h"
#include "../tests/support/echo_server.h"
#include "fmt/format.h"
#include "mojoup/credproxy/session_ca.h"
#include "timing.h"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;
using mojoup::test::BackgroundProcess;
using mojoup::test::EchoServer;

using mojoup::bench::Median;

namespace {

void RaiseFileLimit() {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
}

double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(p * static_cast<double>(values.size() - 1))];
}

int Dial(unsigned short port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    throw std::runtime_error(fmt::format("connect 127.0.0.1:{}: {}", port, strerror(errno)));
  }
  return fd;
}

// Sends CONNECT target and reads the reply's head; throws unless it is 200.
void ConnectThrough(int fd, const std::string& target) {
  std::string request = fmt::format("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n\r\n", target);
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) < 0) throw std::runtime_error("send");
  std::string head;
  char c;
  while (head.find("\r\n\r\n") == std::string::npos && recv(fd, &c, 1, 0) == 1) head += c;
  if (head.rfind("HTTP/1.1 200", 0) != 0 && head.rfind("HTTP/1.0 200", 0) != 0) {
    throw std::runtime_error("CONNECT refused: " + head.substr(0, head.find('\r')));
  }
}

// A source that sends `bytes` to every connection, then closes it. With
// `http`, it first reads a request head and answers with a 200 and
// Content-Length, so curl can be the client.
class Source {
 public:
  Source(std::size_t bytes, bool http) : bytes_(bytes), http_(http) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    listen(fd_, 16);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] {
      std::vector<char> chunk(1 << 20, 'x');
      for (;;) {
        int conn = accept(fd_, nullptr, nullptr);
        if (conn < 0) return;
        if (http_) {
          std::string head;
          char c;
          while (head.find("\r\n\r\n") == std::string::npos && recv(conn, &c, 1, 0) == 1) {
            head += c;
          }
          std::string status = fmt::format(
              "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", bytes_);
          send(conn, status.data(), status.size(), MSG_NOSIGNAL);
        }
        std::size_t left = bytes_;
        while (left > 0) {
          ssize_t n = send(conn, chunk.data(), std::min(left, chunk.size()), MSG_NOSIGNAL);
          if (n <= 0) break;
          left -= static_cast<std::size_t>(n);
        }
        close(conn);
      }
    });
  }
  ~Source() {
    ::shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  unsigned short port() const { return port_; }

 private:
  std::size_t bytes_;
  bool http_;
  int fd_ = -1;
  unsigned short port_ = 0;
  std::thread thread_;
};

// Reads until EOF; returns GB/s.
double Drain(int fd, std::size_t expected) {
  std::vector<char> buffer(1 << 20);
  std::size_t total = 0;
  auto start = Clock::now();
  for (ssize_t n; (n = recv(fd, buffer.data(), buffer.size(), 0)) > 0;) {
    total += static_cast<std::size_t>(n);
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  close(fd);
  if (total != expected) {
    throw std::runtime_error(fmt::format("received {} of {} bytes", total, expected));
  }
  return static_cast<double>(total) / seconds / 1e9;
}

unsigned short FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

void WaitForPort(unsigned short port) {
  for (int i = 0; i < 200; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool up = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    close(fd);
    if (up) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  throw std::runtime_error(fmt::format("nothing listens on port {}", port));
}

long RssKiB(int pid) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// Small keep-alive GETs over one TLS connection; returns each one's latency in ms.
template <class Stream>
std::vector<double> Requests(Stream& stream, int count, const std::string& host,
                             const std::string& key) {
  std::vector<double> latencies;
  beast::flat_buffer buffer;
  for (int i = 0; i < count; ++i) {
    http::request<http::empty_body> request{http::verb::get, "/small", 11};
    request.set(http::field::host, host);
    request.set("x-api-key", key);
    auto start = Clock::now();
    http::write(stream, request);
    http::response<http::string_body> response;
    http::read(stream, buffer, response);
    latencies.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (response.result() != http::status::ok) {
      throw std::runtime_error(fmt::format("request failed: HTTP {} {}", response.result_int(),
                                           response.body().substr(0, 200)));
    }
  }
  return latencies;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t gib = 1;
  int runs = 3;
  int requests = 2000;
  int idle = 500;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    int value = std::atoi(argv[i + 1]);
    if (flag == "--gib")
      gib = static_cast<std::size_t>(std::max(1, value));
    else if (flag == "--runs")
      runs = std::max(1, value);
    else if (flag == "--requests")
      requests = std::max(100, value);
    else if (flag == "--idle")
      idle = std::max(10, value);
  }
  RaiseFileLimit();
  const std::string bin = std::filesystem::canonical("/proc/self/exe").parent_path().string();
  char dir_template[] = "/tmp/mojoup-bench-proxy-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::size_t bytes = gib << 30;

  Source source(bytes, false);
  Source http_source(bytes, true);
  auto upstream_ca = *mojoup::credproxy::SessionCa::Create("bench upstream");
  EchoServer api(*upstream_ca->ServerContext("api.test"));
  EchoServer tunnel_target;
  std::ofstream(dir + "/upstream-ca.pem") << upstream_ca->certificate_pem();
  std::ofstream(dir + "/policy.json") << fmt::format(
      R"({{"agents": {{"network": {{"allow": [{{"host": "src.test", "ports": [{}, {}]}},
          {{"host": "api.test", "ports": [{}]}}, {{"host": "idle.test", "ports": [{}]}}]}}}}}})",
      source.port(), http_source.port(), api.port(), tunnel_target.port());
  const std::string real_key = "bench-real-key-0123456789abcdefghij";

  BackgroundProcess proxy(
      {"BENCH_KEY=" + real_key, "MOJOUP_STATE_DIR=" + dir + "/state",
       "MOJOUP_NODE_CONFIG=" + dir + "/node.json"},
      {bin + "/mojoup-node", "proxy", "--policy", dir + "/policy.json", "--credential",
       "BENCH_KEY=api.test", "--upstream-ca", dir + "/upstream-ca.pem", "--resolve",
       fmt::format("src.test:{}:127.0.0.1", source.port()), "--resolve",
       fmt::format("src.test:{}:127.0.0.1", http_source.port()), "--resolve",
       fmt::format("api.test:{}:127.0.0.1", api.port()), "--resolve",
       fmt::format("idle.test:{}:127.0.0.1", tunnel_target.port())});
  auto ready = proxy.ReadLine(std::chrono::seconds(10));
  if (!ready) {
    std::fprintf(stderr, "bench: the proxy did not start: %s\n", proxy.Stderr().c_str());
    return 1;
  }
  const std::size_t listen_at = ready->find("\"listen\":\"127.0.0.1:") + 20;
  const auto proxy_port = static_cast<unsigned short>(std::stoi(ready->substr(listen_at)));
  const std::size_t stand_in_at = ready->find("\"BENCH_KEY\":\"") + 13;
  const std::string stand_in =
      ready->substr(stand_in_at, ready->find('"', stand_in_at) - stand_in_at);

  // tinyproxy on the same path, when installed.
  std::unique_ptr<BackgroundProcess> tinyproxy;
  unsigned short tiny_port = 0;
  if (access("/usr/bin/tinyproxy", X_OK) == 0) {
    tiny_port = FreePort();
    std::ofstream(dir + "/tinyproxy.conf") << fmt::format(
        "Port {}\nListen 127.0.0.1\nTimeout 600\nMaxClients 100\n"
        "Allow 127.0.0.1\nLogLevel Critical\n",
        tiny_port);
    tinyproxy = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{},
        std::vector<std::string>{"/usr/bin/tinyproxy", "-d", "-c", dir + "/tinyproxy.conf"});
    WaitForPort(tiny_port);
  }

  // 1. Throughput.
  std::vector<double> direct, ours, tiny;
  const std::string src_target = fmt::format("src.test:{}", source.port());
  for (int run = 0; run < runs; ++run) {
    direct.push_back(Drain(Dial(source.port()), bytes));
    int fd = Dial(proxy_port);
    ConnectThrough(fd, src_target);
    ours.push_back(Drain(fd, bytes));
    if (tinyproxy) {
      int tfd = Dial(tiny_port);
      ConnectThrough(tfd, fmt::format("127.0.0.1:{}", source.port()));
      tiny.push_back(Drain(tfd, bytes));
    }
  }
  std::printf("1. CONNECT tunnel, %zu GiB, median of %d runs (raw client)\n", gib, runs);
  std::printf("   direct:          %.2f GB/s\n", Median(direct));
  std::printf("   mojoup proxy:    %.2f GB/s  (%.2fx direct; goal >= 0.9)\n", Median(ours),
              Median(ours) / Median(direct));
  if (tinyproxy) {
    std::printf("   tinyproxy:       %.2f GB/s  (%.2fx direct; mojoup / tinyproxy = %.1fx)\n",
                Median(tiny), Median(tiny) / Median(direct), Median(ours) / Median(tiny));
  } else {
    std::printf("   tinyproxy:       not installed (apt-get install tinyproxy)\n");
  }

  // 1b. The same with curl as the client, as a tool in a sandbox would
  // fetch: `curl -p` opens the CONNECT tunnel for a plain http URL.
  auto curl_speed = [&](std::vector<std::string> via) {
    std::vector<std::string> command{"curl", "-s", "-o", "/dev/null", "-w", "%{speed_download}\n"};
    command.insert(command.end(), via.begin(), via.end());
    BackgroundProcess curl({}, command);
    auto line = curl.ReadLine(std::chrono::minutes(2));
    curl.Stop();
    return line ? std::stod(*line) / 1e9 : 0.0;
  };
  if (access("/usr/bin/curl", X_OK) == 0) {
    std::vector<double> curl_direct, curl_ours, curl_tiny;
    const std::string url = fmt::format("http://src.test:{}/", http_source.port());
    const std::string resolve = fmt::format("src.test:{}:127.0.0.1", http_source.port());
    for (int run = 0; run < runs; ++run) {
      curl_direct.push_back(curl_speed({"--resolve", resolve, url}));
      curl_ours.push_back(
          curl_speed({"-p", "-x", fmt::format("http://127.0.0.1:{}", proxy_port), url}));
      if (tinyproxy) {
        curl_tiny.push_back(curl_speed({"-p", "-x", fmt::format("http://127.0.0.1:{}", tiny_port),
                                        fmt::format("http://127.0.0.1:{}/", http_source.port())}));
      }
    }
    std::printf("   with curl as the client:\n");
    std::printf("   direct:          %.2f GB/s\n", Median(curl_direct));
    std::printf("   mojoup proxy:    %.2f GB/s  (%.2fx direct)\n", Median(curl_ours),
                Median(curl_ours) / Median(curl_direct));
    if (tinyproxy) {
      std::printf("   tinyproxy:       %.2f GB/s  (%.2fx direct)\n", Median(curl_tiny),
                  Median(curl_tiny) / Median(curl_direct));
    }
  }

  // 2. Keep-alive latency through interception against direct TLS.
  asio::io_context io;
  // TLS to api.test over `fd` (connected directly, or through a CONNECT),
  // trusting `ca`; then the timed requests.
  auto timed = [&](int fd, const std::string& ca, const std::string& key) {
    asio::ssl::context context(asio::ssl::context::tls_client);
    context.load_verify_file(ca);
    asio::ip::tcp::socket socket(io, asio::ip::tcp::v4(), fd);
    socket.set_option(asio::ip::tcp::no_delay(true));
    asio::ssl::stream<asio::ip::tcp::socket&> tls(socket, context);
    SSL_set_tlsext_host_name(tls.native_handle(), "api.test");
    tls.set_verify_mode(asio::ssl::verify_peer);
    tls.set_verify_callback(asio::ssl::host_name_verification("api.test"));
    tls.handshake(asio::ssl::stream_base::client);
    // Host names the port, as clients do for a port other than 443: the
    // proxy refuses a Host that is not the tunnel's host and port.
    return Requests(tls, requests, fmt::format("api.test:{}", api.port()), key);
  };
  const std::vector<double> direct_ms = timed(Dial(api.port()), dir + "/upstream-ca.pem", real_key);
  const std::size_t ca_at = ready->find("\"ca_cert\":\"") + 11;
  const std::string session_ca = ready->substr(ca_at, ready->find('"', ca_at) - ca_at);
  int through = Dial(proxy_port);
  ConnectThrough(through, fmt::format("api.test:{}", api.port()));
  const std::vector<double> intercepted_ms = timed(through, session_ca, stand_in);
  const double added = Percentile(intercepted_ms, 0.5) - Percentile(direct_ms, 0.5);
  std::printf("2. small keep-alive requests, %d each\n", requests);
  std::printf("   direct TLS:      p50 %.3f ms  p99 %.3f ms\n", Percentile(direct_ms, 0.5),
              Percentile(direct_ms, 0.99));
  std::printf("   intercepted:     p50 %.3f ms  p99 %.3f ms  (+%.3f ms at p50; goal < 0.5)\n",
              Percentile(intercepted_ms, 0.5), Percentile(intercepted_ms, 0.99), added);

  // 3. Memory with idle tunnels.
  const long before = RssKiB(proxy.pid());
  std::vector<int> tunnels;
  const std::string idle_target = fmt::format("idle.test:{}", tunnel_target.port());
  for (int i = 0; i < idle; ++i) {
    int fd = Dial(proxy_port);
    ConnectThrough(fd, idle_target);
    tunnels.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const long after = RssKiB(proxy.pid());
  std::printf("3. %d idle tunnels: proxy RSS %ld KiB -> %ld KiB, %.1f KiB each (goal < 64)\n", idle,
              before, after, static_cast<double>(after - before) / idle);
  for (int fd : tunnels) close(fd);

  proxy.Stop();
  if (tinyproxy) tinyproxy->Stop();
  std::filesystem::remove_all(dir);
  return 0;
}

// bench_proxy [--gib N] [--runs N] [--requests N] [--fresh N] [--concurrent N] [--idle N]
//             [--only SECTIONS] [--baseline MOJOUP_NODE]
//
// The credential proxy (`mojoup-node proxy`, a process of its own, with an
// audit file as the node runs it) against its peers, in one run, against the
// same loopback upstreams (a thread per connection; /bytes/N answers N
// bytes with Content-Length, on kept-alive connections). curl is the client
// for throughput, as a tool in a sandbox would fetch; medians throughout.
//   1. Plain http, N GiB (default 1): direct, Debian's squid and tinyproxy,
//      and our forwarding path (absolute-form requests). Goal: >= 1.0x squid.
//   2. TLS, N GiB: direct, our CONNECT tunnel (a host with no credential)
//      and our interception (a host with a bound credential: TLS terminated,
//      the stand-in swapped, the response scrubbed). Goal: interception >=
//      0.5x the tunnel.
//      Both print the CPU seconds each proxy process spent per GiB.
//   3. Small requests (100-byte answers) on one kept-alive connection per
//      path, p50 and p99 of each and what the proxy adds at p50 (goals:
//      <= 0.2 ms plain, <= 0.5 ms intercepted), and time to first byte on a
//      fresh connection (connect, CONNECT and TLS handshake included).
//   4. The proxy's memory with idle tunnels. Goal: under 64 KiB each.
//   5. Peak memory of the proxy with N (default 1000) connections at once,
//      each mid-body (the client has stopped reading), plain and intercepted.
// --baseline runs another build's mojoup-node proxy beside ours in sections
// 1 to 3 (another commit's, to see what a change costs), its rows marked
// "(baseline)" and its ratios printed beside ours.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "../tests/support/background_process.h"
#include "../tests/support/echo_server.h"
#include "../tests/support/test_server.h"
#include "fmt/format.h"
#include "mojoup/credproxy/session_ca.h"
#include "server_tls.h"
#include "timing.h"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using mojoup::bench::Median;
using mojoup::test::BackgroundProcess;

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

// An upstream: every request for /bytes/N gets N bytes ('x') with
// Content-Length, on a kept-alive connection, over TLS when `tls`.
class Upstream {
 public:
  explicit Upstream(std::shared_ptr<mojoup::credproxy::ServerTls> tls = nullptr)
      : tls_(std::move(tls)),
        server_("127.0.0.1", 0, [this](tcp::socket& socket) { Serve(socket); }) {
    if (!server_.error().empty()) throw std::runtime_error(server_.error());
  }
  unsigned short port() const { return server_.port(); }

 private:
  template <class Stream>
  static void Answer(Stream& stream) {
    static const std::string chunk(1 << 20, 'x');
    beast::flat_buffer buffer;
    for (;;) {
      http::request<http::empty_body> request;
      beast::error_code ec;
      http::read(stream, buffer, request, ec);
      if (ec) return;
      const std::string target(request.target());
      const std::size_t bytes = target.rfind("/bytes/", 0) == 0 ? std::stoull(target.substr(7)) : 0;
      std::string head = fmt::format("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n{}\r\n", bytes,
                                     request.keep_alive() ? "" : "Connection: close\r\n");
      if (bytes < 4096) head.append(bytes, 'x');
      asio::write(stream, asio::buffer(head), ec);
      for (std::size_t left = bytes < 4096 ? 0 : bytes; left > 0 && !ec;) {
        const std::size_t n = std::min(left, chunk.size());
        asio::write(stream, asio::buffer(chunk.data(), n), ec);
        left -= n;
      }
      if (ec || !request.keep_alive()) return;
    }
  }
  void Serve(tcp::socket& socket) {
    socket.set_option(tcp::no_delay(true));
    if (!tls_) return Answer(socket);
    ssl::stream<tcp::socket&> stream(socket, tls_->context());
    beast::error_code ec;
    stream.handshake(ssl::stream_base::server, ec);
    if (!ec) Answer(stream);
  }

  std::shared_ptr<mojoup::credproxy::ServerTls> tls_;
  mojoup::test::ThreadServer server_;
};

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
  asio::io_context io;
  for (int i = 0; i < 400; ++i) {
    tcp::socket socket(io);
    beast::error_code ec;
    socket.connect({asio::ip::address_v4::loopback(), port}, ec);
    if (!ec) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  throw std::runtime_error(fmt::format("nothing listens on port {}", port));
}

long ProcStatus(int pid, const char* field) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::strlen(field)));
  }
  return -1;
}

// User and system CPU seconds the process has used so far.
double CpuSeconds(int pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;  // state .. cmajflt
  double user = 0, system = 0;
  fields >> user >> system;
  return (user + system) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// One peer on one path: how curl reaches the upstream through it.
struct Path {
  std::string name;
  std::vector<std::string> curl;  // flags before the URL
  std::string url;                // the URL of /bytes/ (the size is appended)
  int pid = 0;                    // the proxy's process (0: direct)
  std::vector<double> speeds;     // MB/s, per run
  double cpu = 0;                 // the proxy's CPU seconds over every run
};

Path MakePath(std::string name, std::vector<std::string> curl, std::string url, int pid = 0) {
  Path path;
  path.name = std::move(name);
  path.curl = std::move(curl);
  path.url = std::move(url);
  path.pid = pid;
  return path;
}

double CurlSpeed(const Path& path, std::size_t bytes) {
  std::vector<std::string> command{"curl",      "-fsS", "-o",
                                   "/dev/null", "-w",   "%{size_download} %{speed_download}\n"};
  command.insert(command.end(), path.curl.begin(), path.curl.end());
  command.push_back(path.url + std::to_string(bytes));
  BackgroundProcess curl({}, command);
  // curl writes the line as it ends.
  const auto line = curl.ReadLine(std::chrono::minutes(5));
  std::size_t size = 0;
  double speed = 0;
  if (!line || std::sscanf(line->c_str(), "%zu %lf", &size, &speed) != 2 || size != bytes) {
    throw std::runtime_error(
        fmt::format("{}: curl got {} of {} bytes: {}", path.name, size, bytes, curl.Stderr()));
  }
  return speed / 1e6;
}

// Every path in turn, once per run, so that drift on a shared machine
// touches all of them alike.
void Throughput(std::vector<Path>& paths, std::size_t bytes, int runs) {
  for (int run = 0; run < runs; ++run) {
    for (Path& path : paths) {
      const double cpu = path.pid ? CpuSeconds(path.pid) : 0;
      path.speeds.push_back(CurlSpeed(path, bytes));
      if (path.pid) path.cpu += CpuSeconds(path.pid) - cpu;
    }
  }
}

void PrintThroughput(const std::vector<Path>& paths, std::size_t gib, int runs) {
  for (const Path& path : paths) {
    std::printf("   %-26s %7.0f MB/s", path.name.c_str(), Median(path.speeds));
    if (path.pid) {
      std::printf("   %.2f CPU s/GiB", path.cpu / static_cast<double>(gib * runs));
    }
    std::printf("\n");
  }
}

const Path& Named(const std::vector<Path>& paths, const std::string& name) {
  return *std::find_if(paths.begin(), paths.end(),
                       [&](const Path& path) { return path.name == name; });
}

// A client connection to the upstream: direct, or through a proxy (plain:
// absolute-form requests; TLS: a CONNECT first).
struct Route {
  unsigned short dial = 0;  // the port connected to
  std::string authority;    // host:port of the upstream
  bool tls = false;
  bool connect = false;   // CONNECT authority first
  bool absolute = false;  // absolute-form targets
  std::string ca;         // the CA file the client trusts
  std::string header;     // a credential header, "name: value"

  static Route Plain(unsigned short dial, std::string authority, bool absolute) {
    Route route;
    route.dial = dial;
    route.authority = std::move(authority);
    route.absolute = absolute;
    return route;
  }
  static Route Tls(unsigned short dial, std::string authority, bool connect, std::string ca,
                   std::string header = "") {
    Route route;
    route.dial = dial;
    route.authority = std::move(authority);
    route.tls = true;
    route.connect = connect;
    route.ca = std::move(ca);
    route.header = std::move(header);
    return route;
  }
};

void SendConnect(tcp::socket& socket, const std::string& authority) {
  const std::string request = fmt::format("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n\r\n", authority);
  asio::write(socket, asio::buffer(request));
  // A byte at a time: what follows the reply's head is the tunnel's.
  std::string line;
  char c;
  while (line.find("\r\n\r\n") == std::string::npos) {
    asio::read(socket, asio::buffer(&c, 1));
    line += c;
  }
  if (line.rfind("HTTP/1.1 200", 0) != 0 && line.rfind("HTTP/1.0 200", 0) != 0) {
    throw std::runtime_error("CONNECT refused: " + line.substr(0, line.find('\r')));
  }
}

class Client {
 public:
  Client(asio::io_context& io, const Route& route)
      : route_(route), socket_(io), context_(ssl::context::tls_client) {
    socket_.connect({asio::ip::address_v4::loopback(), route.dial});
    socket_.set_option(tcp::no_delay(true));
    if (route.connect) SendConnect(socket_, route.authority);
    if (!route.tls) return;
    context_.load_verify_file(route.ca);
    tls_.emplace(socket_, context_);
    const std::string host = route.authority.substr(0, route.authority.find(':'));
    SSL_set_tlsext_host_name(tls_->native_handle(), host.c_str());
    tls_->set_verify_mode(ssl::verify_peer);
    tls_->set_verify_callback(ssl::host_name_verification(host));
    tls_->handshake(ssl::stream_base::client);
  }

  // Sends a GET for /bytes/N; with `whole`, reads the whole response and
  // returns whether the connection stays open.
  bool Get(std::size_t bytes, bool whole) {
    const std::string target =
        (route_.absolute ? "http://" + route_.authority : "") + "/bytes/" + std::to_string(bytes);
    std::string request = fmt::format("GET {} HTTP/1.1\r\nHost: {}\r\n", target, route_.authority);
    if (!route_.header.empty()) request += route_.header + "\r\n";
    request += "\r\n";
    Write(request);
    if (!whole) return true;
    http::response<http::string_body> response;
    if (tls_) {
      http::read(*tls_, buffer_, response);
    } else {
      http::read(socket_, buffer_, response);
    }
    if (response.result() != http::status::ok || response.body().size() != bytes) {
      throw std::runtime_error(fmt::format("GET {}: HTTP {} {}", target, response.result_int(),
                                           response.body().substr(0, 200)));
    }
    return response.keep_alive();
  }
  // Reads what has arrived, up to `most` bytes.
  std::size_t ReadSome(std::size_t most) {
    std::vector<char> data(most);
    return tls_ ? tls_->read_some(asio::buffer(data)) : socket_.read_some(asio::buffer(data));
  }

 private:
  void Write(const std::string& bytes) {
    if (tls_) {
      asio::write(*tls_, asio::buffer(bytes));
    } else {
      asio::write(socket_, asio::buffer(bytes));
    }
  }

  Route route_;
  tcp::socket socket_;
  ssl::context context_;
  std::optional<ssl::stream<tcp::socket&>> tls_;
  beast::flat_buffer buffer_;
};

struct Latency {
  std::vector<double> kept;   // ms per request on one connection
  std::vector<double> fresh;  // ms to the first byte on a new connection
  bool closes = false;        // the peer closed the connection after a request
};

Latency MeasureLatencyOf(const Route& route, int requests, int fresh);

Latency MeasureLatency(const Route& route, int requests, int fresh) {
  try {
    return MeasureLatencyOf(route, requests, fresh);
  } catch (const std::exception& error) {
    throw std::runtime_error(fmt::format("small requests through port {} to {}: {}", route.dial,
                                         route.authority, error.what()));
  }
}

Latency MeasureLatencyOf(const Route& route, int requests, int fresh) {
  asio::io_context io;
  Latency latency;
  auto client = std::make_unique<Client>(io, route);
  for (int i = 0; i < requests; ++i) {
    const auto start = Clock::now();
    // A peer that closes every connection (tinyproxy) pays for a new one.
    if (!client) client = std::make_unique<Client>(io, route);
    bool open = false;
    try {
      open = client->Get(100, true);
    } catch (const boost::system::system_error& error) {
      // tinyproxy passes on a keep-alive answer, then closes anyway.
      if (error.code() != http::error::end_of_stream) throw;
      client = std::make_unique<Client>(io, route);
      open = client->Get(100, true);
      latency.closes = true;
    }
    if (!open) {
      client.reset();
      latency.closes = true;
    }
    latency.kept.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  for (int i = 0; i < fresh; ++i) {
    const auto start = Clock::now();
    Client first(io, route);
    first.Get(100, false);
    first.ReadSome(1);
    latency.fresh.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return latency;
}

// `count` connections through `route`, each with a 1 GiB response begun and
// no longer read; the proxy's RSS then, in KiB.
long MidBody(const Route& route, int count, int proxy) {
  asio::io_context io;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < count; ++i) {
    clients.push_back(std::make_unique<Client>(io, route));
    clients.back()->Get(std::size_t{1} << 30, false);
    clients.back()->ReadSome(16 * 1024);
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));  // every buffer on the way fills
  return ProcStatus(proxy, "VmRSS:");
}

struct Tools {
  std::string dir;
  std::string bin;
};

std::unique_ptr<BackgroundProcess> StartSquid(const Tools& tools, unsigned short port) {
  if (access("/usr/sbin/squid", X_OK) != 0) return nullptr;
  const std::string dir = tools.dir + "/squid";
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::all);
  std::ofstream(dir + "/squid.conf") << fmt::format(
      "http_port 127.0.0.1:{}\nhttp_access allow all\ncache deny all\ncache_mem 0 MB\n"
      "access_log none\ncache_log {}/cache.log\npid_filename {}/squid.pid\n"
      "coredump_dir {}\nshutdown_lifetime 0 seconds\nworkers 1\n",
      port, dir, dir, dir);
  auto squid = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{},
      std::vector<std::string>{"/usr/sbin/squid", "-N", "-f", dir + "/squid.conf"});
  WaitForPort(port);
  return squid;
}

std::unique_ptr<BackgroundProcess> StartTinyproxy(const Tools& tools, unsigned short port) {
  if (access("/usr/bin/tinyproxy", X_OK) != 0) return nullptr;
  std::ofstream(tools.dir + "/tinyproxy.conf") << fmt::format(
      "Port {}\nListen 127.0.0.1\nTimeout 600\nMaxClients 2000\nAllow 127.0.0.1\n"
      "LogLevel Critical\n",
      port);
  auto tinyproxy = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{},
      std::vector<std::string>{"/usr/bin/tinyproxy", "-d", "-c", tools.dir + "/tinyproxy.conf"});
  WaitForPort(port);
  return tinyproxy;
}

std::string Field(const std::string& line, const std::string& name) {
  const std::size_t at = line.find("\"" + name + "\":\"") + name.size() + 4;
  return line.substr(at, line.find('"', at) - at);
}

struct Options {
  std::size_t gib = 1;
  int runs = 3;
  int requests = 2000;
  int fresh = 200;
  int concurrent = 1000;
  int idle = 500;
  std::string only;      // the sections to run ("134"); all when empty
  std::string baseline;  // another mojoup-node to run beside ours
  bool Runs(char section) const { return only.empty() || only.find(section) != std::string::npos; }
};

Options Parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--only") options.only = argv[i + 1];
    if (flag == "--baseline") options.baseline = argv[i + 1];
    const int value = std::max(1, std::atoi(argv[i + 1]));
    if (flag == "--gib") options.gib = static_cast<std::size_t>(value);
    if (flag == "--runs") options.runs = value;
    if (flag == "--requests") options.requests = std::max(100, value);
    if (flag == "--fresh") options.fresh = std::max(10, value);
    if (flag == "--concurrent") options.concurrent = std::min(1000, value);
    if (flag == "--idle") options.idle = std::max(10, value);
  }
  return options;
}

void PrintLatency(const char* name, const Latency& latency, const Latency* direct) {
  std::printf("   %-26s p50 %.3f ms  p99 %.3f ms", name, Percentile(latency.kept, 0.5),
              Percentile(latency.kept, 0.99));
  if (direct) {
    std::printf("  (+%.3f ms at p50)",
                Percentile(latency.kept, 0.5) - Percentile(direct->kept, 0.5));
  }
  std::printf("   first byte %.3f ms%s\n", Median(latency.fresh),
              latency.closes ? "  (closes every connection: each request connects anew)" : "");
}

// Everything the sections share: the upstreams, our proxy and its peers.
class Bench {
 public:
  explicit Bench(const Options& options);
  ~Bench();
  void PlainThroughput();
  void TlsThroughput();
  void SmallRequests();
  void MidBodyMemory();
  void IdleTunnels();

 private:
  Options options_;
  Tools tools_;
  std::size_t bytes_;
  std::unique_ptr<mojoup::credproxy::SessionCa> upstream_ca_;
  std::unique_ptr<Upstream> plain_, api_, tls_;
  // A mojoup-node proxy: ours, or the baseline's.
  struct Ours {
    std::unique_ptr<BackgroundProcess> process;
    unsigned short port = 0;
    std::string url;
    std::string stand_in;
    std::string ca_cert;
  };
  Ours StartOurs(const std::string& binary, const std::string& name);
  std::unique_ptr<BackgroundProcess> proxy_, squid_, tinyproxy_;
  unsigned short proxy_port_ = 0, squid_port_ = 0, tiny_port_ = 0;
  std::optional<Ours> baseline_;
  std::string real_key_ = "bench-real-key-0123456789abcdefghij";
  std::string stand_in_;
  std::string trust_;  // both CAs, for curl
  std::string ours_;   // our proxy's URL
  std::string src_authority_, api_authority_, tls_authority_;
};

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    const Options options = Parse(argc, argv);
    Bench bench(options);
    if (options.Runs('1')) bench.PlainThroughput();
    if (options.Runs('2')) bench.TlsThroughput();
    if (options.Runs('3')) bench.SmallRequests();
    // Idle tunnels first: the memory section 5 takes is not all given back.
    if (options.Runs('4')) bench.IdleTunnels();
    if (options.Runs('5')) bench.MidBodyMemory();
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_proxy: %s\n", error.what());
    return 1;
  }
}

namespace {

Bench::Bench(const Options& options) : options_(options), bytes_(options.gib << 30) {
  RaiseFileLimit();
  char dir_template[] = "/tmp/mojoup-bench-proxy-XXXXXX";
  tools_ = {mkdtemp(dir_template),
            std::filesystem::canonical("/proc/self/exe").parent_path().string()};
  upstream_ca_ = *mojoup::credproxy::SessionCa::Create("bench upstream");
  plain_ = std::make_unique<Upstream>();
  api_ = std::make_unique<Upstream>(*upstream_ca_->ServerContext("api.test"));  // bound
  tls_ = std::make_unique<Upstream>(*upstream_ca_->ServerContext("tls.test"));  // a tunnel
  src_authority_ = fmt::format("src.test:{}", plain_->port());
  api_authority_ = fmt::format("api.test:{}", api_->port());
  tls_authority_ = fmt::format("tls.test:{}", tls_->port());
  const std::string& dir = tools_.dir;
  std::ofstream(dir + "/upstream-ca.pem") << upstream_ca_->certificate_pem();
  std::ofstream(dir + "/policy.json") << fmt::format(
      R"({{"agents": {{"network": {{"allow": [{{"host": "src.test", "ports": [{}]}},
          {{"host": "api.test", "ports": [{}]}}, {{"host": "tls.test", "ports": [{}]}}]}}}}}})",
      plain_->port(), api_->port(), tls_->port());
  Ours ours = StartOurs(tools_.bin + "/mojoup-node", "ours");
  proxy_ = std::move(ours.process);
  proxy_port_ = ours.port;
  ours_ = ours.url;
  stand_in_ = ours.stand_in;
  if (!options_.baseline.empty()) baseline_ = StartOurs(options_.baseline, "baseline");
  trust_ = dir + "/trust.pem";
  {
    std::ofstream bundle(trust_);
    bundle << upstream_ca_->certificate_pem();
    for (const std::string& ca : {ours.ca_cert, baseline_ ? baseline_->ca_cert : ""}) {
      if (ca.empty()) continue;
      std::ifstream session_ca(ca);
      bundle << session_ca.rdbuf();
    }
  }
  squid_port_ = FreePort();
  squid_ = StartSquid(tools_, squid_port_);
  tiny_port_ = FreePort();
  tinyproxy_ = StartTinyproxy(tools_, tiny_port_);
}

Bench::Ours Bench::StartOurs(const std::string& binary, const std::string& name) {
  const std::string& dir = tools_.dir;
  Ours ours;
  ours.process = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{"BENCH_KEY=" + real_key_,
                               "MOJOUP_STATE_DIR=" + dir + "/state-" + name,
                               "MOJOUP_NODE_CONFIG=" + dir + "/node.json"},
      std::vector<std::string>{
          binary, "proxy", "--policy", dir + "/policy.json", "--credential", "BENCH_KEY=api.test",
          "--upstream-ca", dir + "/upstream-ca.pem", "--audit", dir + "/audit-" + name + ".jsonl",
          "--resolve", src_authority_ + ":127.0.0.1", "--resolve", api_authority_ + ":127.0.0.1",
          "--resolve", tls_authority_ + ":127.0.0.1"});
  auto ready = ours.process->ReadLine(std::chrono::seconds(10));
  if (!ready) throw std::runtime_error("the proxy did not start: " + ours.process->Stderr());
  const std::size_t listen_at = ready->find("\"listen\":\"127.0.0.1:") + 20;
  ours.port = static_cast<unsigned short>(std::stoi(ready->substr(listen_at)));
  ours.url = fmt::format("http://127.0.0.1:{}", ours.port);
  ours.stand_in = Field(*ready, "BENCH_KEY");
  ours.ca_cert = Field(*ready, "ca_cert");
  return ours;
}

Bench::~Bench() {
  proxy_->Stop();
  if (baseline_) baseline_->process->Stop();
  if (squid_) squid_->Stop();
  if (tinyproxy_) tinyproxy_->Stop();
  std::filesystem::remove_all(tools_.dir);
}

void Bench::PlainThroughput() {
  const std::string src = fmt::format("http://{}/bytes/", src_authority_);
  const std::string by_address = fmt::format("http://127.0.0.1:{}/bytes/", plain_->port());
  std::vector<Path> paths{MakePath("direct", {"--resolve", src_authority_ + ":127.0.0.1"}, src),
                          MakePath("mojoup-node proxy", {"-x", ours_}, src, proxy_->pid())};
  if (baseline_) {
    paths.push_back(MakePath("mojoup-node proxy (baseline)", {"-x", baseline_->url}, src,
                             baseline_->process->pid()));
  }
  if (squid_) {
    paths.push_back(MakePath("squid", {"-x", fmt::format("http://127.0.0.1:{}", squid_port_)},
                             by_address, squid_->pid()));
  }
  if (tinyproxy_) {
    paths.push_back(MakePath("tinyproxy", {"-x", fmt::format("http://127.0.0.1:{}", tiny_port_)},
                             by_address, tinyproxy_->pid()));
  }
  Throughput(paths, bytes_, options_.runs);
  std::printf("1. plain http, %zu GiB, median of %d runs (curl)\n", options_.gib, options_.runs);
  PrintThroughput(paths, options_.gib, options_.runs);
  const double forward = Median(Named(paths, "mojoup-node proxy").speeds);
  if (squid_) {
    std::printf("   mojoup / squid = %.2fx (goal >= 1.0)\n",
                forward / Median(Named(paths, "squid").speeds));
    if (baseline_) {
      std::printf("   baseline / squid = %.2fx\n",
                  Median(Named(paths, "mojoup-node proxy (baseline)").speeds) /
                      Median(Named(paths, "squid").speeds));
    }
  } else {
    std::printf("   squid: not installed (apt-get install squid)\n");
  }
  if (tinyproxy_) {
    std::printf("   mojoup / tinyproxy = %.2fx\n",
                forward / Median(Named(paths, "tinyproxy").speeds));
  } else {
    std::printf("   tinyproxy: not installed (apt-get install tinyproxy)\n");
  }
}

void Bench::TlsThroughput() {
  const std::string tunnel_url = fmt::format("https://{}/bytes/", tls_authority_);
  std::vector<Path> paths{
      MakePath("direct", {"--cacert", trust_, "--resolve", tls_authority_ + ":127.0.0.1"},
               tunnel_url),
      MakePath("mojoup tunnel", {"--cacert", trust_, "-x", ours_}, tunnel_url, proxy_->pid()),
      MakePath("mojoup interception",
               {"--cacert", trust_, "-x", ours_, "-H", "x-api-key: " + stand_in_},
               fmt::format("https://{}/bytes/", api_authority_), proxy_->pid())};
  if (baseline_) {
    paths.push_back(MakePath("mojoup tunnel (baseline)", {"--cacert", trust_, "-x", baseline_->url},
                             tunnel_url, baseline_->process->pid()));
    paths.push_back(MakePath(
        "mojoup interception (baseline)",
        {"--cacert", trust_, "-x", baseline_->url, "-H", "x-api-key: " + baseline_->stand_in},
        fmt::format("https://{}/bytes/", api_authority_), baseline_->process->pid()));
  }
  Throughput(paths, bytes_, options_.runs);
  std::printf("2. TLS, %zu GiB, median of %d runs (curl)\n", options_.gib, options_.runs);
  PrintThroughput(paths, options_.gib, options_.runs);
  const double direct = Median(paths[0].speeds);
  std::printf("   interception / tunnel = %.2fx (goal >= 0.5)\n",
              Median(paths[2].speeds) / Median(paths[1].speeds));
  std::printf("   tunnel / direct = %.2fx, interception / direct = %.2fx\n",
              Median(paths[1].speeds) / direct, Median(paths[2].speeds) / direct);
  if (baseline_) {
    std::printf(
        "   baseline: interception / tunnel = %.2fx, tunnel / direct = %.2fx, "
        "interception / direct = %.2fx\n",
        Median(paths[4].speeds) / Median(paths[3].speeds), Median(paths[3].speeds) / direct,
        Median(paths[4].speeds) / direct);
  }
}

void Bench::SmallRequests() {
  const int requests = options_.requests;
  const int fresh = options_.fresh;
  std::printf("3. small requests: %d on one kept-alive connection, %d on fresh ones\n", requests,
              fresh);
  const Latency plain =
      MeasureLatency(Route::Plain(plain_->port(), src_authority_, false), requests, fresh);
  PrintLatency("plain, direct", plain, nullptr);
  PrintLatency("plain, mojoup-node proxy",
               MeasureLatency(Route::Plain(proxy_port_, src_authority_, true), requests, fresh),
               &plain);
  if (baseline_) {
    PrintLatency(
        "plain, baseline",
        MeasureLatency(Route::Plain(baseline_->port, src_authority_, true), requests, fresh),
        &plain);
  }
  const std::string by_address = fmt::format("127.0.0.1:{}", plain_->port());
  if (squid_) {
    PrintLatency("plain, squid",
                 MeasureLatency(Route::Plain(squid_port_, by_address, true), requests, fresh),
                 &plain);
  }
  if (tinyproxy_) {
    PrintLatency("plain, tinyproxy",
                 MeasureLatency(Route::Plain(tiny_port_, by_address, true), requests, fresh),
                 &plain);
  }
  const Latency tls =
      MeasureLatency(Route::Tls(api_->port(), api_authority_, false,
                                tools_.dir + "/upstream-ca.pem", "x-api-key: " + real_key_),
                     requests, fresh);
  PrintLatency("TLS, direct", tls, nullptr);
  PrintLatency(
      "TLS, mojoup tunnel",
      MeasureLatency(Route::Tls(proxy_port_, tls_authority_, true, trust_), requests, fresh), &tls);
  PrintLatency("TLS, mojoup interception",
               MeasureLatency(
                   Route::Tls(proxy_port_, api_authority_, true, trust_, "x-api-key: " + stand_in_),
                   requests, fresh),
               &tls);
  if (baseline_) {
    PrintLatency("TLS, baseline interception",
                 MeasureLatency(Route::Tls(baseline_->port, api_authority_, true, trust_,
                                           "x-api-key: " + baseline_->stand_in),
                                requests, fresh),
                 &tls);
  }
}

void Bench::MidBodyMemory() {
  std::printf(
      "5. %d connections at once, each mid-body (1 GiB answers the client stopped "
      "reading)\n",
      options_.concurrent);
  const std::vector<std::pair<std::string, Route>> routes{
      {"plain", Route::Plain(proxy_port_, src_authority_, true)},
      {"intercepted",
       Route::Tls(proxy_port_, api_authority_, true, trust_, "x-api-key: " + stand_in_)}};
  for (const auto& [name, route] : routes) {
    const long before = ProcStatus(proxy_->pid(), "VmRSS:");
    const long during = MidBody(route, options_.concurrent, proxy_->pid());
    std::printf("   %-12s proxy RSS %ld KiB -> %ld KiB, %.1f KiB per connection\n", name.c_str(),
                before, during, static_cast<double>(during - before) / options_.concurrent);
    std::this_thread::sleep_for(std::chrono::seconds(1));  // the proxy closes them all
  }
  std::printf("   the proxy's peak RSS over the whole run: %ld KiB\n",
              ProcStatus(proxy_->pid(), "VmHWM:"));
}

void Bench::IdleTunnels() {
  asio::io_context io;
  const long before = ProcStatus(proxy_->pid(), "VmRSS:");
  std::vector<std::unique_ptr<tcp::socket>> tunnels;
  for (int i = 0; i < options_.idle; ++i) {
    tunnels.push_back(std::make_unique<tcp::socket>(io));
    tunnels.back()->connect({asio::ip::address_v4::loopback(), proxy_port_});
    SendConnect(*tunnels.back(), tls_authority_);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const long after = ProcStatus(proxy_->pid(), "VmRSS:");
  std::printf("4. %d idle tunnels: proxy RSS %ld KiB -> %ld KiB, %.1f KiB each (goal < 64)\n",
              options_.idle, before, after, static_cast<double>(after - before) / options_.idle);
}

}  // namespace

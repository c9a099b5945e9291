#include "sandbox_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

namespace openshell_sandbox {
namespace {

constexpr int kIdleSeconds = 300;
constexpr int kConnectSeconds = 10;
constexpr std::size_t kMaxHead = 16 * 1024;

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string OpenSslError() {
  const unsigned long code = ERR_get_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

// serde_json's string escaping, for the JSON bodies below.
std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// build_json_error_response(_with_reason) in proxy.rs: serde_json without
// preserve_order writes the keys sorted.
std::string JsonError(int status, std::string_view text, std::string_view error,
                      std::string_view detail, std::string_view reason = {}) {
  std::string body = "{\"detail\":" + JsonString(detail) + ",\"error\":" + JsonString(error);
  if (!reason.empty()) body += ",\"reason\":" + JsonString(reason);
  body += "}";
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(text) +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

// --- Connections: a plain socket, or TLS over one ---

struct Side {
  int fd = -1;
  SSL* ssl = nullptr;

  // Bytes read; 0 at the end; -1 when there is nothing yet (the socket is
  // non-blocking in Relay).
  long Read(char* buffer, std::size_t size) const {
    if (ssl == nullptr) {
      const long n = ::recv(fd, buffer, size, 0);
      return n < 0 && (errno == EAGAIN || errno == EINTR) ? -1 : std::max(n, 0L);
    }
    const int n = SSL_read(ssl, buffer, static_cast<int>(size));
    if (n > 0) return n;
    const int error = SSL_get_error(ssl, n);
    return error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE ? -1 : 0;
  }
  // All of `data`, waiting up to 60 s whenever the peer does not take more.
  bool WriteAll(std::string_view data) const {
    while (!data.empty()) {
      const long n = ssl != nullptr ? SSL_write(ssl, data.data(), static_cast<int>(data.size()))
                                    : ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
      if (n > 0) {
        data.remove_prefix(static_cast<std::size_t>(n));
        continue;
      }
      const bool again = ssl != nullptr
                             ? (SSL_get_error(ssl, static_cast<int>(n)) == SSL_ERROR_WANT_WRITE ||
                                SSL_get_error(ssl, static_cast<int>(n)) == SSL_ERROR_WANT_READ)
                             : (n < 0 && (errno == EAGAIN || errno == EINTR));
      pollfd waiting{fd, POLLOUT | POLLIN, 0};
      if (!again || ::poll(&waiting, 1, 60 * 1000) != 1) return false;
    }
    return true;
  }
  bool Pending() const { return ssl != nullptr && SSL_pending(ssl) > 0; }
  void End() const {
    if (ssl != nullptr) SSL_shutdown(ssl);
    ::shutdown(fd, SHUT_WR);
  }
};

void SetTimeouts(int fd) {
  timeval limit{};
  limit.tv_sec = 60;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
}

// Bytes both ways until both sides have ended or both are idle for
// kIdleSeconds. One side's end is passed on (close_notify, or a FIN) and
// the other direction goes on, as a client that sends its request and
// closes its half expects. Reads never block: a TLS record that carries no
// data (a session ticket) leaves the other direction free.
void Relay(const Side& a, const Side& b) {
  for (int fd : {a.fd, b.fd}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  char buffer[16384];
  bool open[2] = {true, true};
  const Side* sides[2] = {&a, &b};
  while (open[0] || open[1]) {
    const bool ready[2] = {open[0] && a.Pending(), open[1] && b.Pending()};
    pollfd fds[2] = {{open[0] ? a.fd : -1, POLLIN, 0}, {open[1] ? b.fd : -1, POLLIN, 0}};
    if (!ready[0] && !ready[1]) {
      const int n = ::poll(fds, 2, kIdleSeconds * 1000);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
    }
    for (int i = 0; i < 2; ++i) {
      if (!open[i] || (!ready[i] && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0)) {
        continue;
      }
      const long n = sides[i]->Read(buffer, sizeof buffer);
      if (n < 0) continue;
      if (n == 0) {
        open[i] = false;
        sides[1 - i]->End();
        continue;
      }
      if (!sides[1 - i]->WriteAll(std::string_view(buffer, static_cast<std::size_t>(n)))) return;
    }
  }
}

// --- Addresses ---

struct Address {
  int family = AF_INET;
  unsigned char bytes[16] = {};
  std::string text;
};

std::optional<Address> ParseAddress(const std::string& text) {
  Address address;
  address.text = text;
  if (::inet_pton(AF_INET, text.c_str(), address.bytes) == 1) return address;
  address.family = AF_INET6;
  if (::inet_pton(AF_INET6, text.c_str(), address.bytes) == 1) return address;
  return std::nullopt;
}

bool InV4(const unsigned char* b, unsigned a0, unsigned a1, unsigned a2, int prefix) {
  const std::uint32_t value =
      (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
  const std::uint32_t net = (a0 << 24) | (a1 << 16) | (a2 << 8);
  const std::uint32_t mask = prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - prefix);
  return (value & mask) == (net & mask);
}

// An IPv4-mapped IPv6 address's IPv4 bytes.
const unsigned char* MappedV4(const Address& a) {
  static constexpr unsigned char kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return a.family == AF_INET6 && std::memcmp(a.bytes, kPrefix, 12) == 0 ? a.bytes + 12 : nullptr;
}

// openshell-core net.rs is_always_blocked_ip: loopback, link-local, unspecified.
bool AlwaysBlocked(const Address& a) {
  const unsigned char* v4 = a.family == AF_INET ? a.bytes : MappedV4(a);
  if (v4 != nullptr) {
    return InV4(v4, 127, 0, 0, 8) || InV4(v4, 169, 254, 0, 16) || InV4(v4, 0, 0, 0, 32);
  }
  static constexpr unsigned char kZero[16] = {};
  unsigned char loopback[16] = {};
  loopback[15] = 1;
  return std::memcmp(a.bytes, kZero, 16) == 0 || std::memcmp(a.bytes, loopback, 16) == 0 ||
         (a.bytes[0] == 0xfe && (a.bytes[1] & 0xc0) == 0x80);
}

// net.rs is_internal_ip (is_internal_v4: loopback, private, link-local,
// unspecified, documentation, broadcast, then CGNAT, 192.0.0.0/24 and
// benchmarking; IPv6: loopback, unspecified, link-local, ULA, mapped IPv4).
bool Internal(const Address& a) {
  const unsigned char* v4 = a.family == AF_INET ? a.bytes : MappedV4(a);
  if (v4 != nullptr) {
    return InV4(v4, 127, 0, 0, 8) || InV4(v4, 10, 0, 0, 8) || InV4(v4, 172, 16, 0, 12) ||
           InV4(v4, 192, 168, 0, 16) || InV4(v4, 169, 254, 0, 16) || InV4(v4, 0, 0, 0, 32) ||
           InV4(v4, 192, 0, 2, 24) || InV4(v4, 198, 51, 100, 24) || InV4(v4, 203, 0, 113, 24) ||
           InV4(v4, 255, 255, 255, 32) || InV4(v4, 100, 64, 0, 10) || InV4(v4, 192, 0, 0, 24) ||
           InV4(v4, 198, 18, 0, 15);
  }
  return AlwaysBlocked(a) || (a.bytes[0] & 0xfe) == 0xfc;
}

struct Cidr {
  Address net;
  int prefix = 0;
};

bool SameBits(const Address& a, const Address& b, int count) {
  for (int i = 0; i < count; ++i) {
    const int bit = 7 - (i % 8);
    if (((a.bytes[i / 8] >> bit) & 1) != ((b.bytes[i / 8] >> bit) & 1)) return false;
  }
  return true;
}

// An allowed_ips entry: an address or ADDRESS/PREFIX; nullopt for one
// parse_allowed_ips refuses (not a network, or one overlapping loopback,
// link-local or unspecified addresses: is_always_blocked_net).
std::optional<Cidr> ParseCidr(const std::string& text) {
  const std::size_t slash = text.find('/');
  auto net = ParseAddress(text.substr(0, slash));
  if (!net) return std::nullopt;
  const int bits = net->family == AF_INET ? 32 : 128;
  int prefix = bits;
  if (slash != std::string::npos) {
    const std::string digits = text.substr(slash + 1);
    if (digits.empty() || digits.size() > 3 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    prefix = std::stoi(digits);
    if (prefix > bits) return std::nullopt;
  }
  const Cidr cidr{*net, prefix};
  // Two networks overlap when they agree on the shorter prefix.
  auto overlaps = [&](const char* blocked, int blocked_prefix) {
    auto other = ParseAddress(blocked);
    return other->family == cidr.net.family &&
           SameBits(cidr.net, *other, std::min(cidr.prefix, blocked_prefix));
  };
  if (overlaps("127.0.0.0", 8) || overlaps("169.254.0.0", 16) || overlaps("0.0.0.0", 32) ||
      overlaps("::1", 128) || overlaps("::", 128) || overlaps("fe80::", 10)) {
    return std::nullopt;
  }
  return cidr;
}

bool InCidr(const Address& a, const Cidr& cidr) {
  return cidr.net.family == a.family && SameBits(a, cidr.net, cidr.prefix);
}

// resolve_socket_addrs: an IP literal, else the sandbox's /etc/hosts
// (resolve_from_sandbox_hosts), else DNS, which this double does not have.
std::vector<Address> Resolve(const std::string& host) {
  std::string bare = host;
  if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']')
    bare = bare.substr(1, bare.size() - 2);
  if (auto literal = ParseAddress(bare)) return {*literal};
  std::vector<Address> found;
  std::ifstream hosts("/etc/hosts");
  for (std::string line; std::getline(hosts, line);) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string address;
    if (!(words >> address)) continue;
    for (std::string name; words >> name;) {
      if (Lower(name) != Lower(bare)) continue;
      if (auto parsed = ParseAddress(address)) found.push_back(*parsed);
    }
  }
  return found;
}

int ConnectTo(const Address& address, std::uint16_t port) {
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (address.family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    std::memcpy(&in->sin_addr, address.bytes, 4);
    length = sizeof *in;
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    std::memcpy(&in6->sin6_addr, address.bytes, 16);
    length = sizeof *in6;
  }
  const int fd = ::socket(address.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  pollfd waiting{fd, POLLOUT, 0};
  int error = 0;
  socklen_t size = sizeof error;
  if (::poll(&waiting, 1, kConnectSeconds * 1000) != 1 ||
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0 || error != 0) {
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  SetTimeouts(fd);
  return fd;
}

// --- The policy ---

struct Decision {
  bool allowed = false;
  std::string reason;  // the rego's deny_reason when not
  bool exact = false;  // an exact declared host matched
  std::vector<std::string> allowed_ips;
};

// endpoint_allowed in the rego, over the policy's entries in order; the
// first match's endpoint decides the destination checks (query_allowed_ips
// takes policy_configs.first()). A hostless endpoint ("-") with
// allowed_ips matches any host on its port.
Decision Evaluate(const ProxyConfig& config, const std::string& host, std::uint16_t port) {
  Decision decision;
  for (const Endpoint& endpoint : config.endpoints) {
    if (endpoint.port != port) continue;
    const bool hostless = endpoint.host == "-";
    const bool glob = endpoint.host.find('*') != std::string::npos;
    if (hostless ? endpoint.allowed_ips.empty()
        : glob   ? !HostGlobMatch(endpoint.host, host)
                 : Lower(endpoint.host) != Lower(host)) {
      continue;
    }
    if (!decision.allowed) decision.allowed_ips = endpoint.allowed_ips;
    decision.allowed = true;
    decision.exact = decision.exact || (!glob && !hostless);
  }
  if (!decision.allowed) {
    decision.reason = config.policies == 0 ? "network connections not allowed by policy"
                                           : "endpoint " + host + ":" + std::to_string(port) +
                                                 " is not allowed by any policy";
  }
  return decision;
}

// build_validation_plan and validate_destination (proxy/destination.rs,
// proxy.rs): the resolved addresses, or the denial's detail
// (destination_denial_detail) when the destination is refused. The host
// aliases are trusted as the gateway only when they map to a link-local
// address (detect_trusted_host_gateway), never on a Docker bridge: there
// they are declared hosts like any other.
std::vector<Address> CheckDestination(const Decision& decision, const std::string& host,
                                      std::uint16_t port, std::string& denied) {
  static constexpr std::uint16_t kControlPlanePorts[] = {2379, 2380, 6443, 10250, 10255};
  const bool control_plane = std::find(std::begin(kControlPlanePorts), std::end(kControlPlanePorts),
                                       port) != std::end(kControlPlanePorts);
  std::vector<std::string> raw = decision.allowed_ips;
  std::string kind;
  if (!raw.empty()) {
    kind = "allowed_ips check failed";
  } else if (auto literal = ParseAddress(host); literal && !AlwaysBlocked(*literal)) {
    raw.push_back(host);  // implicit_allowed_ips_for_ip_host
    kind = "allowed_ips check failed";
  } else if (decision.exact) {
    kind = "declared endpoint check failed";
  } else {
    kind = "internal address";
  }
  std::vector<Cidr> nets;
  for (const std::string& entry : raw) {
    auto cidr = ParseCidr(entry);
    if (!cidr) {
      denied = "invalid allowed_ips in policy";
      return {};
    }
    nets.push_back(*cidr);
  }
  std::vector<Address> addresses = Resolve(host);
  bool ok = !addresses.empty();
  for (const Address& address : addresses) {
    if (!nets.empty()) {
      ok = ok && !control_plane && !AlwaysBlocked(address) &&
           std::any_of(nets.begin(), nets.end(),
                       [&](const Cidr& cidr) { return InCidr(address, cidr); });
    } else if (decision.exact) {
      ok = ok && !control_plane && !AlwaysBlocked(address);
    } else {
      ok = ok && !Internal(address);
    }
  }
  if (!ok) denied = kind;
  return ok ? addresses : std::vector<Address>{};
}

// --- TLS ---

bool IsIp(const std::string& host) { return ParseAddress(host).has_value(); }

SSL_CTX* UpstreamContext(const std::string& trusted_pem) {
  static std::once_flag once;
  static SSL_CTX* context = nullptr;
  std::call_once(once, [&] {
    context = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
    X509_STORE* store = SSL_CTX_get_cert_store(context);
    BIO* bio = BIO_new_mem_buf(trusted_pem.data(), static_cast<int>(trusted_pem.size()));
    while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      X509_STORE_add_cert(store, cert);
      X509_free(cert);
    }
    ERR_clear_error();
    BIO_free(bio);
    static const unsigned char kAlpn[] = "\x08http/1.1";
    SSL_CTX_set_alpn_protos(context, kAlpn, sizeof kAlpn - 1);
  });
  return context;
}

int SelectHttp11(SSL*, const unsigned char** out, unsigned char* out_length,
                 const unsigned char* in, unsigned int in_length, void*) {
  for (unsigned int i = 0; i < in_length;) {
    const unsigned int length = in[i];
    if (i + 1 + length > in_length) break;
    if (length == 8 && std::memcmp(in + i + 1, "http/1.1", 8) == 0) {
      *out = in + i + 1;
      *out_length = 8;
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + length;
  }
  // rustls with ALPN configured refuses a client whose offer lacks it
  // (no_application_protocol); a client that offers none goes on.
  return in_length == 0 ? SSL_TLSEXT_ERR_NOACK : SSL_TLSEXT_ERR_ALERT_FATAL;
}

// The tunnel's TLS terminated with a leaf of the sandbox's CA, and a TLS
// connection of the proxy's own to the upstream, verified (l7/tls.rs
// ProxyTlsState: tls_terminate_client, tls_connect_upstream).
void TerminateTls(int client, int upstream, const std::string& host, const ProxyConfig& config,
                  SandboxCa& ca) {
  SSL_CTX* server = ca.ServerContext(host);
  if (server == nullptr) return;
  SSL* inside = SSL_new(server);
  SSL_CTX_free(server);  // the SSL holds its own reference
  SSL_set_fd(inside, client);
  SSL* outside = SSL_new(UpstreamContext(config.trusted_pem));
  SSL_set_fd(outside, upstream);
  if (!IsIp(host)) {
    SSL_set_tlsext_host_name(outside, host.c_str());
    SSL_set1_host(outside, host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(outside), host.c_str());
  }
  // Relay passes each side's close_notify on.
  if (SSL_accept(inside) == 1 && SSL_connect(outside) == 1) {
    Relay(Side{client, inside}, Side{upstream, outside});
  }
  SSL_free(outside);
  SSL_free(inside);
}

// --- Requests ---

struct Head {
  std::string method, target, version, text, rest;
};

// The request head, up to its blank line; rest holds what came after.
std::optional<Head> ReadHead(int fd, std::string& problem) {
  std::string data;
  char buffer[4096];
  std::size_t end = std::string::npos;
  while ((end = data.find("\r\n\r\n")) == std::string::npos) {
    if (data.size() >= kMaxHead) {
      problem = "HTTP/1.1 431 Request Header Fields Too Large\r\n\r\n";
      return std::nullopt;
    }
    const long n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return std::nullopt;
    data.append(buffer, static_cast<std::size_t>(n));
  }
  Head head;
  head.text = data.substr(0, end + 4);
  head.rest = data.substr(end + 4);
  std::istringstream line(head.text.substr(0, head.text.find("\r\n")));
  std::string extra;
  if (!(line >> head.method >> head.target >> head.version) || (line >> extra)) {
    problem = "HTTP/1.1 400 Bad Request\r\n\r\n";
    return std::nullopt;
  }
  return head;
}

// "host:port" or "[v6]:port".
bool SplitTarget(const std::string& target, std::uint16_t fallback, std::string& host,
                 std::uint16_t& port) {
  std::size_t colon = target.rfind(':');
  if (!target.empty() && target.front() == '[') {
    const std::size_t close = target.find(']');
    if (close == std::string::npos) return false;
    host = target.substr(1, close - 1);
    colon = close + 1 < target.size() && target[close + 1] == ':' ? close + 1 : std::string::npos;
  } else {
    host = target.substr(0, colon);
  }
  if (colon == std::string::npos) {
    port = fallback;
    return fallback != 0 && !host.empty();
  }
  const std::string digits = target.substr(colon + 1);
  if (digits.empty() || digits.size() > 5 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  const long value = std::stol(digits);
  if (value <= 0 || value > 65535) return false;
  port = static_cast<std::uint16_t>(value);
  return !host.empty();
}

int Open(const std::vector<Address>& addresses, std::uint16_t port) {
  for (const Address& address : addresses) {
    if (const int fd = ConnectTo(address, port); fd >= 0) return fd;
  }
  return -1;
}

// The OCSF event a policy denial emits, as its shorthand reaches the gateway
// (level "OCSF", target "ocsf"): for a CONNECT, handle_tcp_connection's
// NetworkActivity (v0.0.111 crates/openshell-supervisor-network/src/proxy.rs,
// "CONNECT denied"); for a forwarded request,
// build_forward_policy_deny_ocsf_event's HttpActivity; each formatted by
// crates/openshell-ocsf/src/format/shorthand.rs format_shorthand (severity
// Medium "[MED]", firewall_rule("-", "opa"), the reason from status_detail,
// at most MAX_REASON_LEN 256 bytes). The actor is the connecting binary and
// its pid, resolved through /proc; the double does not resolve process
// identity, so it is "-" and pid "-", which Process::from_bypass makes "-(0)".
void LogPolicyDenial(const std::string& host, std::uint16_t port, const std::string& verb,
                     const std::string& refused, const std::string& reason) {
  const std::string shown = reason.size() > 256 ? reason.substr(0, 256) + "..." : reason;
  const std::string tail =
      " [policy:- engine:opa]" + (shown.empty() ? "" : " [reason:" + shown + "]");
  if (verb == "CONNECT") {
    PushLog("OCSF", "ocsf",
            "NET:OPEN [MED] DENIED -(0) -> " + host + ":" + std::to_string(port) + tail);
    return;
  }
  // `refused` is "METHOD host:port/path"; the URL shows the port unless it
  // is http's own (Url::to_display_string).
  const std::string where = host + ":" + std::to_string(port);
  std::string path = refused.substr(std::min(refused.size(), verb.size() + 1 + where.size()));
  if (path.empty()) path = "/";
  const std::string url = "http://" + (port == 80 ? host : where) + path;
  PushLog("OCSF", "ocsf", "HTTP:" + verb + " [MED] DENIED -(0) -> " + verb + " " + url + tail);
}

// The policy, then the destination checks, then the upstream: its socket,
// or -1 once the client has its answer. `verb` starts each answer's detail
// ("CONNECT", or the request's method); a refusal by the policy says
// `refused` and, for a CONNECT, the rego's reason.
int OpenAdmitted(const Side& side, const ProxyConfig& config, const std::string& host,
                 std::uint16_t port, const std::string& verb, const std::string& refused) {
  const std::string where = host + ":" + std::to_string(port);
  const Decision decision = Evaluate(config, host, port);
  if (!decision.allowed) {
    LogPolicyDenial(host, port, verb, refused, decision.reason);
    side.WriteAll(JsonError(403, "Forbidden", "policy_denied", refused + " not permitted by policy",
                            verb == "CONNECT" ? decision.reason : ""));
    return -1;
  }
  std::string denied;
  const std::vector<Address> addresses = CheckDestination(decision, host, port, denied);
  if (!denied.empty()) {
    side.WriteAll(
        JsonError(403, "Forbidden", "ssrf_denied", verb + " " + where + " blocked: " + denied));
    return -1;
  }
  const int upstream = Open(addresses, port);
  // A CONNECT whose upstream does not answer is dropped without a word
  // (proxy.rs: `upstream_result.into_diagnostic()?`); a forwarded request
  // gets a 502.
  if (upstream < 0 && verb != "CONNECT") {
    side.WriteAll(JsonError(502, "Bad Gateway", "upstream_unreachable",
                            "connection to " + where + " failed"));
  }
  return upstream;
}

// handle_tcp_connection's CONNECT path.
void Connect(int client, const Head& head, const ProxyConfig& config, SandboxCa& ca) {
  const Side side{client, nullptr};
  std::string host;
  std::uint16_t port = 0;
  if (!SplitTarget(head.target, 0, host, port)) {
    side.WriteAll("HTTP/1.1 400 Bad Request\r\n\r\n");
    return;
  }
  host = Lower(host);
  const int upstream = OpenAdmitted(side, config, host, port, "CONNECT",
                                    "CONNECT " + host + ":" + std::to_string(port));
  if (upstream < 0) return;
  if (side.WriteAll("HTTP/1.1 200 Connection Established\r\n\r\n")) {
    // TlsMode::Auto (l7/mod.rs): a tunnel that opens with a TLS handshake
    // record is terminated; anything else is relayed as it is.
    unsigned char first = 0;
    pollfd waiting{client, POLLIN, 0};
    const bool tls = ::poll(&waiting, 1, kIdleSeconds * 1000) == 1 &&
                     ::recv(client, &first, 1, MSG_PEEK) == 1 && first == 0x16;
    if (tls) {
      TerminateTls(client, upstream, host, config, ca);
    } else {
      Relay(side, Side{upstream, nullptr});
    }
  }
  ::close(upstream);
}

// rewrite_forward_request (proxy.rs): the request line in origin form; the
// Host field made from the target's authority; Proxy-Connection,
// Proxy-Authorization, Proxy-Authenticate, Connection, Upgrade and the
// fields Connection names dropped; Connection: close and, without one,
// Via: 1.1 openshell-sandbox added. (The WebSocket upgrade's own fields are
// not modelled.)
std::string OriginForm(const Head& head, const std::string& path, const std::string& authority) {
  std::vector<std::string> nominated;
  std::vector<std::string> lines;
  std::istringstream text(head.text.substr(head.text.find("\r\n") + 2));
  for (std::string line; std::getline(text, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) break;
    lines.push_back(line);
    const std::string name = Lower(line.substr(0, line.find(':')));
    if (name == "connection") {
      std::istringstream tokens(line.substr(line.find(':') + 1));
      for (std::string token; std::getline(tokens, token, ',');) {
        token.erase(0, token.find_first_not_of(" \t"));
        token.erase(token.find_last_not_of(" \t") + 1);
        nominated.push_back(Lower(token));
      }
    }
  }
  std::string out =
      head.method + " " + path + " " + head.version + "\r\nHost: " + authority + "\r\n";
  bool via = false;
  for (const std::string& line : lines) {
    const std::string name = Lower(line.substr(0, line.find(':')));
    if (name == "host" || name == "proxy-connection" || name == "proxy-authorization" ||
        name == "proxy-authenticate" || name == "connection" || name == "upgrade" ||
        std::find(nominated.begin(), nominated.end(), name) != nominated.end()) {
      continue;
    }
    via = via || name == "via";
    out += line + "\r\n";
  }
  out += "Connection: close\r\n";
  if (!via) out += "Via: 1.1 openshell-sandbox\r\n";
  return out + "\r\n";
}

// What came after the head that belongs to the first request's body
// (initial_forward_body_prefix_len): up to its Content-Length, none without
// one; a chunked body is passed as it came.
std::string FirstBody(const Head& head) {
  const std::string lower = Lower(head.text);
  if (lower.find("\r\ntransfer-encoding:") != std::string::npos) return head.rest;
  const std::size_t at = lower.find("\r\ncontent-length:");
  if (at == std::string::npos) return {};
  const unsigned long length = std::strtoul(head.text.c_str() + at + 17, nullptr, 10);
  return head.rest.substr(0, std::min<std::size_t>(length, head.rest.size()));
}

// handle_forward_proxy: an absolute-form plain-http request, sent on in
// origin form; the connection is then relayed as it is.
void Forward(int client, const Head& head, const ProxyConfig& config) {
  const Side side{client, nullptr};
  const std::size_t scheme_end = head.target.find("://");
  const std::string scheme =
      scheme_end == std::string::npos ? "" : Lower(head.target.substr(0, scheme_end));
  if (scheme == "https") {
    side.WriteAll(
        "HTTP/1.1 400 Bad Request\r\nContent-Length: 27\r\n\r\nUse CONNECT for HTTPS URLs");
    return;
  }
  if (scheme != "http") {
    side.WriteAll("HTTP/1.1 400 Bad Request\r\n\r\n");
    return;
  }
  const std::string after = head.target.substr(scheme_end + 3);
  const std::size_t slash = after.find('/');
  std::string path = slash == std::string::npos ? "/" : after.substr(slash);
  std::string host;
  std::uint16_t port = 0;
  if (!SplitTarget(after.substr(0, slash), 80, host, port)) {
    side.WriteAll("HTTP/1.1 400 Bad Request\r\n\r\n");
    return;
  }
  host = Lower(host);
  const int upstream = OpenAdmitted(
      side, config, host, port, head.method,
      head.method + " " + host + ":" + std::to_string(port) + path.substr(0, path.find('?')));
  if (upstream < 0) return;
  const Side out{upstream, nullptr};
  const std::string authority = port == 80 ? host : host + ":" + std::to_string(port);
  if (out.WriteAll(OriginForm(head, path, authority)) && out.WriteAll(FirstBody(head))) {
    Relay(side, out);
  }
  ::close(upstream);
}

// The rules in force now: the policy file's, when the supervisor keeps one
// and it can be read, else those it started with.
ProxyConfig Current(const ProxyConfig& started) {
  if (started.policy_file.empty()) return started;
  std::ifstream file(started.policy_file);
  std::ostringstream text;
  text << file.rdbuf();
  if (!file) return started;
  ProxyConfig now;
  now.trusted_pem = started.trusted_pem;
  now.policy_file = started.policy_file;
  ParseNetworkRules(text.str(), now);
  return now;
}

void ServeOne(int client, const ProxyConfig& started, SandboxCa& ca) {
  const ProxyConfig config = Current(started);
  SetTimeouts(client);
  const int one = 1;
  ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::string problem;
  if (auto head = ReadHead(client, problem)) {
    if (head->method == "CONNECT") {
      Connect(client, *head, config, ca);
    } else {
      Forward(client, *head, config);
    }
  } else if (!problem.empty()) {
    Side{client, nullptr}.WriteAll(problem);
  }
  ::close(client);
}

// --- Certificates ---

X509_NAME* Name(const std::vector<std::pair<const char*, std::string>>& parts) {
  X509_NAME* name = X509_NAME_new();
  for (const auto& [field, value] : parts) {
    X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1, 0);
  }
  return name;
}

void AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
  if (X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str())) {
    X509_add_ext(cert, extension, -1);
    X509_EXTENSION_free(extension);
  }
}

X509* NewCertificate(EVP_PKEY* key, X509_NAME* subject) {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7f;
  BIGNUM* number = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(number, X509_get_serialNumber(cert));
  BN_free(number);
  X509_gmtime_adj(X509_getm_notBefore(cert), -24 * 3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 365L * 24 * 3600);
  X509_set_subject_name(cert, subject);
  X509_set_pubkey(cert, key);
  return cert;
}

}  // namespace

void PushLog(std::string_view level, std::string_view target, std::string_view message) {
  static std::mutex mu;
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const long long ms = static_cast<long long>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
  std::string line = std::string(kLogPrefix) + std::to_string(ms) + " " + std::string(level) + " " +
                     std::string(target) + " ";
  for (char c : message) line += (c == '\n' || c == '\r') ? ' ' : c;
  line += '\n';
  std::lock_guard lock(mu);
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t wrote = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return;
    done += static_cast<std::size_t>(wrote);
  }
}

void ParseNetworkRules(const std::string& text, ProxyConfig& config) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string kind, key, port, ips;
    Endpoint endpoint;
    if (line.starts_with("policies ")) {
      config.policies = std::atoi(line.c_str() + 9);
      continue;
    }
    // KEY names the entry for a reader of the lines; matching needs only the rest.
    if (!(words >> kind >> key >> endpoint.host >> port) || kind != "allow") continue;
    endpoint.port = static_cast<std::uint16_t>(std::atoi(port.c_str()));
    if (words >> ips) {
      std::istringstream list(ips);
      for (std::string ip; std::getline(list, ip, ',');) {
        if (!ip.empty()) endpoint.allowed_ips.push_back(ip);
      }
    }
    config.endpoints.push_back(std::move(endpoint));
  }
}

bool HostGlobMatch(std::string_view pattern, std::string_view name) {
  const std::string p = Lower(pattern);
  const std::string n = Lower(name);
  // Backtracking over p[i..] and n[j..].
  auto match = [&](auto&& self, std::size_t i, std::size_t j) -> bool {
    if (i == p.size()) return j == n.size();
    if (p[i] == '*') {
      const bool cross = i + 1 < p.size() && p[i + 1] == '*';
      const std::size_t next = cross ? i + 2 : i + 1;
      for (std::size_t k = j;; ++k) {
        if (self(self, next, k)) return true;
        if (k == n.size() || (!cross && n[k] == '.')) return false;
      }
    }
    if (j == n.size()) return false;
    if (p[i] == '?' ? n[j] == '.' : p[i] != n[j]) return false;
    return self(self, i + 1, j + 1);
  };
  return match(match, 0, 0);
}

SandboxCa::SandboxCa() {
  key_ = EVP_EC_gen("P-256");
  if (key_ == nullptr) {
    error_ = "cannot generate the sandbox CA's key: " + OpenSslError();
    return;
  }
  X509_NAME* name = Name({{"CN", "OpenShell Sandbox CA"}, {"O", "OpenShell"}});
  cert_ = NewCertificate(key_, name);
  X509_set_issuer_name(cert_, name);
  X509_NAME_free(name);
  AddExtension(cert_, cert_, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(cert_, cert_, NID_key_usage, "critical,keyCertSign,cRLSign");
  AddExtension(cert_, cert_, NID_subject_key_identifier, "hash");
  if (X509_sign(cert_, key_, EVP_sha256()) == 0) {
    error_ = "cannot sign the sandbox CA: " + OpenSslError();
    return;
  }
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert_);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  pem_.assign(data, static_cast<std::size_t>(size));
  BIO_free(bio);
}

SandboxCa::~SandboxCa() {
  for (auto& [host, context] : leaves_) SSL_CTX_free(context);
  X509_free(cert_);
  EVP_PKEY_free(key_);
}

bool SandboxCa::WriteFiles(const std::string& system_bundle, std::string& error) const {
  std::string combined = system_bundle;
  if (!combined.empty() && combined.back() != '\n') combined += '\n';
  combined += pem_;
  for (const auto& [path, text] :
       {std::pair<const char*, const std::string&>{kCaCertPath, pem_}, {kCaBundlePath, combined}}) {
    std::ofstream file(path, std::ios::trunc);
    file << text;
    if (!file.flush()) {
      error = std::string("cannot write ") + path + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

SSL_CTX* SandboxCa::ServerContext(const std::string& host) {
  std::lock_guard lock(mu_);
  if (auto found = leaves_.find(host); found != leaves_.end()) {
    SSL_CTX_up_ref(found->second);
    return found->second;
  }
  if (leaves_.size() >= 256) {  // MAX_CACHED_CERTS: the cache is cleared when full
    for (auto& [name, context] : leaves_) SSL_CTX_free(context);
    leaves_.clear();
  }
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (key == nullptr) return nullptr;
  X509_NAME* subject = Name({{"CN", host}});
  X509* leaf = NewCertificate(key, subject);
  X509_NAME_free(subject);
  X509_set_issuer_name(leaf, X509_get_subject_name(cert_));
  AddExtension(leaf, cert_, NID_subject_alt_name, (IsIp(host) ? "IP:" : "DNS:") + host);
  AddExtension(leaf, cert_, NID_authority_key_identifier, "keyid:always");
  AddExtension(leaf, cert_, NID_ext_key_usage, "serverAuth");
  X509_sign(leaf, key_, EVP_sha256());
  SSL_CTX* context = SSL_CTX_new(TLS_server_method());
  SSL_CTX_use_certificate(context, leaf);
  SSL_CTX_add1_chain_cert(context, cert_);
  SSL_CTX_use_PrivateKey(context, key);
  SSL_CTX_set_alpn_select_cb(context, SelectHttp11, nullptr);
  X509_free(leaf);
  EVP_PKEY_free(key);
  leaves_[host] = context;
  SSL_CTX_up_ref(context);
  return context;
}

std::string ReadSystemCaBundle() {
  for (const char* path : {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
                           "/etc/ssl/ca-bundle.pem", "/etc/ssl/cert.pem"}) {
    std::ifstream file(path);
    if (!file) continue;
    std::ostringstream text;
    text << file.rdbuf();
    if (!text.str().empty()) return text.str();  // an empty file is skipped
  }
  return {};
}

void ServeProxy(int listener, const ProxyConfig& config, SandboxCa& ca) {
  for (;;) {
    const int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EMFILE || errno == ENFILE) ::usleep(100 * 1000);
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) continue;
      return;
    }
    try {
      std::thread([client, &config, &ca] { ServeOne(client, config, ca); }).detach();
    } catch (const std::system_error&) {
      ::close(client);  // no thread to serve it: refused, the proxy stays
    }
  }
}

}  // namespace openshell_sandbox

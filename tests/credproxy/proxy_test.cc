// The credential proxy's parts on their own (vault, addresses, CA), and the
// proxy in process against raw sockets: malformed, oversized and slow
// requests, the unix socket listener, and the audit log.
#include "mojoup/credproxy/proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "../support/echo_server.h"
#include "../support/proxy_inputs.h"
#include "../support/raw_socket.h"
#include "../support/test_support.h"
#include "mojoup/credproxy/audit.h"
#include "mojoup/credproxy/session_ca.h"
#include "mojoup/policy/network_rules.h"
#include "request_head.h"

using namespace mojoup::credproxy;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using mojoup::test::TempDir;

using mojoup::test::Dial;
using mojoup::test::ReadToClose;
using mojoup::test::Rules;
using mojoup::test::Send;

namespace {

std::string ReadSome(int fd) {
  char buf[4096];
  ssize_t n = recv(fd, buf, sizeof buf, 0);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

namespace {

// Each character's class: a lowercase or an uppercase letter, a digit, or
// itself.
std::string ClassPattern(std::string_view text) {
  std::string pattern;
  for (char c : text) {
    pattern += std::islower(static_cast<unsigned char>(c))   ? 'a'
               : std::isupper(static_cast<unsigned char>(c)) ? 'A'
               : std::isdigit(static_cast<unsigned char>(c)) ? '0'
                                                             : c;
  }
  return pattern;
}

struct StandInShape {
  std::string real;
  std::string prefix;    // kept as it is
  std::string alphabet;  // what the rest is drawn from
  std::string kept;      // characters of the rest that stay where they are
};

const std::string kLower = "abcdefghijklmnopqrstuvwxyz";
const std::string kUpper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const std::string kDigits = "0123456789";

}  // namespace

TEST_CASE("stand-ins keep the real key's prefix, length and alphabet, drawn uniformly", "[vault]") {
  const std::vector<StandInShape> shapes = {
      {"sk-ant-api03-Q9vX2mKpL7rT4wYz8bN3cF6hJ1dS5gA0eR-tU_iO2pZ7xC4vB9nM", "sk-ant-api03-",
       kLower + kUpper + kDigits + "-_", ""},
      {"ghp_R3alT0kenF0rOtherH0stOnly1234567890", "ghp_", kLower + kUpper + kDigits, ""},
      {"github_pat_11ABCDEFG0_abcdefghijklmnop", "github_pat_11ABCDEFG0_", kLower, ""},
      {"sk-proj-abcdefghijklmnop0123456789", "sk-proj-", kLower + kDigits, ""},
      {"0123456789abcdef0123456789abcdef", "", "abcdef" + kDigits, ""},
      {"DEADBEEF0011223344556677AABBCCDD", "", "ABCDEF" + kDigits, ""},
      {"12345678901234567890", "", kDigits, ""},
      {"AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW+/x==", "", kLower + kUpper + kDigits + "+/", "="},
      {"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "", kLower + kUpper + kDigits, "."},
  };
  for (const StandInShape& shape : shapes) {
    INFO(shape.real);
    const std::string pattern = ClassPattern(shape.real.substr(shape.prefix.size()));
    std::map<char, int> drawn;
    std::size_t same_pattern = 0;
    std::set<std::string> seen;
    constexpr int kDraws = 300;
    for (int i = 0; i < kDraws; ++i) {
      const std::string stand_in = MakeStandIn(shape.real);
      REQUIRE(stand_in.size() == shape.real.size());
      REQUIRE_THAT(stand_in, StartsWith(shape.prefix));
      seen.insert(stand_in);
      const std::string rest = stand_in.substr(shape.prefix.size());
      for (std::size_t at = 0; at < rest.size(); ++at) {
        const char real = shape.real[shape.prefix.size() + at];
        if (shape.kept.find(real) != std::string::npos) {
          REQUIRE(rest[at] == real);  // structure ('.', '=') stays in place
          continue;
        }
        INFO("position " << at << ": " << rest[at]);
        REQUIRE(shape.alphabet.find(rest[at]) != std::string::npos);
        ++drawn[rest[at]];
      }
      if (ClassPattern(rest) == pattern) ++same_pattern;
    }
    REQUIRE(seen.size() == kDraws);  // random every time
    REQUIRE(seen.count(shape.real) == 0);
    // The key's pattern of letters and digits is not the stand-in's: drawn
    // from one alphabet, not each position from its own class.
    if (std::set<char>(pattern.begin(), pattern.end()).size() > 1) REQUIRE(same_pattern == 0);
    // Every character of the alphabet turns up, about equally often.
    std::size_t total = 0;
    for (const auto& [c, count] : drawn) total += static_cast<std::size_t>(count);
    const double expected = static_cast<double>(total) / static_cast<double>(shape.alphabet.size());
    for (char c : shape.alphabet) {
      INFO("character " << c << " drawn " << drawn[c] << " times, expected about " << expected);
      REQUIRE(drawn[c] > expected * 0.5);
      REQUIRE(drawn[c] < expected * 1.5);
    }
  }
  // Structure and text that is no key character stay as they are.
  const std::string text = "key with spaces, punctuation; and UTF-8 \xc3\xa9\xc3\xa8 1234";
  const std::string stand_in = MakeStandIn(text);
  REQUIRE(stand_in.size() == text.size());
  for (std::size_t at = 0; at < text.size(); ++at) {
    if (!std::isalnum(static_cast<unsigned char>(text[at])) && text[at] != '-') {
      REQUIRE(stand_in[at] == text[at]);
    }
  }
}

TEST_CASE("a key that is all prefix, or has nothing to draw from, never hangs the vault",
          "[vault]") {
  Vault vault;
  // Everything up to its last '-' is "prefix": the whole of it is drawn instead.
  auto stand_in = vault.Add("ALL_PREFIX", "sk-test-", {"a.test"});
  REQUIRE(stand_in.ok());
  REQUIRE(stand_in->size() == 8);
  REQUIRE(*stand_in != "sk-test-");
  for (char c : *stand_in) REQUIRE((std::islower(static_cast<unsigned char>(c)) || c == '-'));
  // Nothing of a key in it at all: refused, saying why.
  auto none = vault.Add("NOTHING", "........", {"a.test"});
  REQUIRE_FALSE(none.ok());
  REQUIRE_THAT(std::string(none.status().message()), Contains("NOTHING"));
  REQUIRE_FALSE(vault.Add("DASHES", "--------", {"a.test"}).ok());
}

TEST_CASE("the vault binds, substitutes only for bound hosts, and refuses bad input", "[vault]") {
  Vault vault;
  auto stand_in = vault.Add("ACME_KEY", "acme-secret-value-123", {"API.acme.test"});
  REQUIRE(stand_in.ok());
  REQUIRE(vault.credentials()[0].hosts == std::vector<std::string>{"api.acme.test"});
  const std::string header = "Bearer " + *stand_in;
  REQUIRE(vault.RealValue(*stand_in, "api.acme.test") == "acme-secret-value-123");
  REQUIRE_FALSE(vault.RealValue(*stand_in, "evil.test").has_value());
  // Only a whole stand-in is swapped, never one inside other text.
  REQUIRE_FALSE(vault.RealValue(header, "api.acme.test").has_value());
  REQUIRE_FALSE(vault.RealValue(*stand_in + "x", "api.acme.test").has_value());
  auto found = vault.Scan(header, "evil.test");
  REQUIRE(found.size() == 1);
  REQUIRE_FALSE(found[0].bound_here);
  REQUIRE(vault.Scan(header, "api.acme.test")[0].bound_here);
  REQUIRE(vault.ContainsSecret("x acme-secret-value-123 y"));
  REQUIRE_FALSE(vault.ContainsSecret(header));

  REQUIRE_FALSE(vault.Add("ACME_KEY", "another-secret-1", {"a.test"}).ok());  // twice
  REQUIRE_FALSE(vault.Add("SHORT", "abc", {"a.test"}).ok());
  REQUIRE_FALSE(vault.Add("NOHOST", "long-enough-secret", {}).ok());
  REQUIRE_FALSE(vault.Add("WILD", "long-enough-secret", {"*.acme.test"}).ok());
  REQUIRE(DefaultBinding("ANTHROPIC_API_KEY") == std::vector<std::string>{"api.anthropic.com"});
  REQUIRE(DefaultBinding("GH_TOKEN") == std::vector<std::string>{"api.github.com", "github.com"});
  REQUIRE(DefaultBinding("MY_TOKEN").empty());
  // Codex's own name for its key goes where OPENAI_API_KEY goes.
  REQUIRE(DefaultBinding("CODEX_API_KEY") == std::vector<std::string>{"api.openai.com"});
}

TEST_CASE("blocked addresses", "[addresses]") {
  for (const char* blocked :
       {"127.0.0.1", "127.8.9.10", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
        "169.254.169.254", "0.0.0.0", "224.0.0.1", "100.64.0.1", "::1", "::", "fe80::1", "fd00::7",
        "fc00::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "not an address"}) {
    INFO(blocked);
    REQUIRE(IsBlockedAddress(blocked));
  }
  for (const char* open : {"93.184.216.34", "172.32.0.1", "192.169.0.1", "2606:4700::1111",
                           "::ffff:8.8.8.8", "100.128.0.1"}) {
    INFO(open);
    REQUIRE_FALSE(IsBlockedAddress(open));
  }
}

TEST_CASE("IPv6 addresses that lead to a blocked IPv4 address are blocked like it", "[addresses]") {
  struct Case {
    const char* address;
    const char* why;
  };
  const Case blocked[] = {
      {"::127.0.0.1", "IPv4-compatible (RFC 4291 2.5.5.1)"},
      {"::7f00:1", "IPv4-compatible, hex spelling"},
      {"::10.1.2.3", "IPv4-compatible, private"},
      {"::169.254.169.254", "IPv4-compatible, metadata"},
      {"::0.0.0.2", "IPv4-compatible, this network"},
      {"::ffff:0:127.0.0.1", "IPv4-translated (RFC 2765 2.1)"},
      {"::ffff:0:a9fe:a9fe", "IPv4-translated, metadata"},
      {"64:ff9b::7f00:1", "NAT64 well-known prefix (RFC 6052 2.1)"},
      {"64:ff9b::169.254.169.254", "NAT64, metadata"},
      {"64:ff9b::a00:1", "NAT64, private"},
      {"64:ff9b:1::7f00:1", "NAT64 local-use (RFC 8215), /96"},
      {"64:ff9b:1:0:a:0:100:0", "NAT64 local-use, /64: 10.0.0.1"},
      {"64:ff9b:1:7f00:0:100::", "NAT64 local-use, /48: 127.0.0.1"},
      {"64:ff9b:1:a9:fe:a9fe::", "NAT64 local-use, /56: 169.254.169.254"},
      {"2002:7f00:1::", "6to4 (RFC 3056 2)"},
      {"2002:a9fe:a9fe::1", "6to4, metadata"},
      {"2002:c0a8:101:1::1", "6to4, 192.168.1.1"},
      {"2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo (RFC 4380 4), client 127.0.0.1"},
      {"2001::5601:5601", "Teredo, client 169.254.169.254"},
  };
  for (const Case& c : blocked) {
    INFO(c.address << ": " << c.why);
    REQUIRE(IsBlockedAddress(c.address));
  }
  // The same forms around public addresses lead to public addresses.
  for (const char* open :
       {"::8.8.8.8", "::ffff:0:8.8.8.8", "64:ff9b::808:808", "64:ff9b::93.184.216.34",
        "2002:808:808::1", "2001:0:4136:e378:8000:63bf:f7f7:f7f7", "2001:4860:4860::8888",
        "2606:4700::1111", "2a00:1450:4001:80b::200e"}) {
    INFO(open);
    REQUIRE_FALSE(IsBlockedAddress(open));
  }
}

TEST_CASE("the session CA mints leaf certificates for names and addresses", "[ca]") {
  auto ca = SessionCa::Create("t");
  REQUIRE(ca.ok());
  REQUIRE_THAT((*ca)->certificate_pem(), StartsWith("-----BEGIN CERTIFICATE-----"));
  auto first = (*ca)->ServerContext("api.test");
  REQUIRE(first.ok());
  REQUIRE(*first == *(*ca)->ServerContext("api.test"));  // cached
  REQUIRE((*ca)->ServerContext("10.0.0.7").ok());
  REQUIRE((*ca)->ServerContext("[fd00::7]").ok());
  // The CA certificate is EC P-256 and a CA.
  BIO* bio = BIO_new_mem_buf((*ca)->certificate_pem().data(),
                             static_cast<int>((*ca)->certificate_pem().size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  REQUIRE(cert != nullptr);
  EVP_PKEY* key = X509_get0_pubkey(cert);
  REQUIRE(EVP_PKEY_get_bits(key) == 256);
  REQUIRE(X509_check_ca(cert) == 1);
  X509_free(cert);
}

TEST_CASE("malformed, oversized and slow requests neither crash nor stall the proxy",
          "[proxy][robustness]") {
  TempDir dir;
  ProxyOptions options;
  options.listen = "127.0.0.1:0";
  options.socket = dir / "proxy.sock";
  options.header_timeout = std::chrono::milliseconds(500);
  options.rules = Rules(R"({"agents": {"network": {"allow": [{"host": "ok.test"},
      {"host": "0xa9fea9fe"}, {"host": "2852039166"}]}}})");
  options.audit_file = dir / "audit.log";
  auto started = Proxy::Start(std::move(options));
  REQUIRE(started.ok());
  Proxy& proxy = **started;

  SECTION("garbage is a 400") {
    int fd = Dial(proxy.tcp_address());
    Send(fd, "\x16\x03\x01 this is not http\r\n\r\n");
    REQUIRE_THAT(ReadToClose(fd), StartsWith("HTTP/1.1 400"));
  }
  SECTION("an empty base-URL and a CONNECT without a port are bad requests") {
    int fd = Dial(proxy.tcp_address());
    Send(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    REQUIRE_THAT(ReadToClose(fd), StartsWith("HTTP/1.1 400"));
    fd = Dial(proxy.tcp_address());
    Send(fd, "CONNECT ok.test HTTP/1.1\r\nHost: ok.test\r\n\r\n");
    REQUIRE_THAT(ReadToClose(fd), StartsWith("HTTP/1.1 400"));
  }
  SECTION("oversized headers are a 431") {
    int fd = Dial(proxy.tcp_address());
    Send(fd, "GET http://ok.test/ HTTP/1.1\r\nHost: ok.test\r\nX-Big: " +
                 std::string(100 * 1024, 'a') + "\r\n\r\n");
    REQUIRE_THAT(ReadToClose(fd), StartsWith("HTTP/1.1 431"));
  }
  SECTION("a slow client is cut off at the header deadline, and others are served meanwhile") {
    int slow = Dial(proxy.tcp_address());
    Send(slow, "GET http://ok.test/ HTTP/1.1\r\n");
    int other = Dial(proxy.tcp_address());
    Send(other, "GET http://blocked.test/ HTTP/1.1\r\nHost: blocked.test\r\n\r\n");
    REQUIRE_THAT(ReadToClose(other), Contains("X-Mojoup-Proxy-Error: blocked-by-policy"));
    // Disconnected at the deadline (0.5 s here), not left to hold a slot.
    auto begin = std::chrono::steady_clock::now();
    REQUIRE(ReadToClose(slow).empty());
    REQUIRE(std::chrono::steady_clock::now() - begin < std::chrono::seconds(5));
  }
  SECTION("an idle connection that never speaks is closed too") {
    int idle = Dial(proxy.tcp_address());
    auto begin = std::chrono::steady_clock::now();
    REQUIRE(ReadToClose(idle).empty());
    REQUIRE(std::chrono::steady_clock::now() - begin < std::chrono::seconds(5));
  }
  SECTION("names that resolve to the metadata address are refused after resolution") {
    // Hex and decimal spellings of 169.254.169.254: valid host names to the
    // rules, the metadata address to the resolver.
    for (const char* host : {"0xa9fea9fe", "2852039166"}) {
      int fd = Dial(proxy.tcp_address());
      Send(fd, std::string("GET http://") + host + "/ HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
      std::string answer = ReadToClose(fd);
      INFO(answer);
      REQUIRE_THAT(answer, Contains("X-Mojoup-Proxy-Error: blocked-address"));
      REQUIRE_THAT(answer, Contains("169.254.169.254"));
    }
  }
  SECTION("the unix socket listener serves the same rules") {
    int fd = Dial(proxy.socket_path());
    Send(fd, "CONNECT blocked.test:443 HTTP/1.1\r\nHost: blocked.test:443\r\n\r\n");
    REQUIRE_THAT(ReadToClose(fd), Contains("X-Mojoup-Proxy-Error: blocked-by-policy"));
  }
  // After all that, the proxy still answers.
  int fd = Dial(proxy.tcp_address());
  Send(fd, "GET http://blocked.test/ HTTP/1.1\r\nHost: blocked.test\r\n\r\n");
  REQUIRE_THAT(ReadToClose(fd), StartsWith("HTTP/1.1 403"));
}

TEST_CASE("a tunnel over the unix socket reaches a pinned upstream", "[proxy]") {
  TempDir dir;
  mojoup::test::EchoServer echo;
  ProxyOptions options;
  options.socket = dir / "proxy.sock";
  options.sandbox_address = "127.0.0.1:3128";
  options.rules = Rules(R"({"agents": {"network": {"allow": [{"host": "echo.test", "ports": [)" +
                        std::to_string(echo.port()) + "]}]}}}");
  options.pins["echo.test:" + std::to_string(echo.port())] = "127.0.0.1";
  auto proxy = Proxy::Start(std::move(options));
  REQUIRE(proxy.ok());
  REQUIRE((*proxy)->tcp_address().empty());
  REQUIRE((*proxy)->Environment().at("HTTPS_PROXY") == "http://127.0.0.1:3128");
  int fd = Dial((*proxy)->socket_path());
  const std::string target = "echo.test:" + std::to_string(echo.port());
  Send(fd, "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n");
  REQUIRE_THAT(ReadSome(fd), StartsWith("HTTP/1.1 200"));
  Send(fd, "GET /inside HTTP/1.1\r\nHost: echo.test\r\nConnection: close\r\n\r\n");
  REQUIRE_THAT(ReadToClose(fd), StartsWith("HTTP/1.1 200"));
  REQUIRE(echo.seen().size() == 1);
  REQUIRE(echo.seen()[0].target == "/inside");
}

TEST_CASE("the proxy writes its decisions into the session's audit log", "[proxy][audit]") {
  TempDir dir;
  mojoup::test::EchoServer echo;
  auto log = AuditLog::Open({.path = dir / "audit.jsonl", .session = "0123456789abcdef"});
  REQUIRE(log.ok());
  ProxyOptions options;
  options.listen = "127.0.0.1:0";
  options.audit = *log;
  options.audit_file = dir / "unused.jsonl";  // the session's log wins
  options.rules = Rules(R"({"agents": {"network": {"allow": [{"host": "echo.test", "ports": [)" +
                        std::to_string(echo.port()) + "]}]}}}");
  options.pins["echo.test:" + std::to_string(echo.port())] = "127.0.0.1";
  auto proxy = Proxy::Start(std::move(options));
  REQUIRE(proxy.ok());
  const std::string url = "http://echo.test:" + std::to_string(echo.port());
  int fd = Dial((*proxy)->tcp_address());
  Send(fd,
       "GET " + url + "/a/b?token=x#f HTTP/1.1\r\nHost: echo.test\r\nConnection: close\r\n\r\n");
  REQUIRE_THAT(ReadToClose(fd), StartsWith("HTTP/1.1 200"));
  fd = Dial((*proxy)->tcp_address());
  Send(fd, "GET http://blocked.test/c?q=1 HTTP/1.1\r\nHost: blocked.test\r\n\r\n");
  REQUIRE_THAT(ReadToClose(fd), Contains("X-Mojoup-Proxy-Error: blocked-by-policy"));
  proxy->reset();  // every decision written

  std::vector<AuditEvent> events;
  std::istringstream lines(mojoup::test::Slurp(dir / "audit.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    auto event = ParseAuditLine(line);
    REQUIRE(event.ok());
    events.push_back(*event);
  }
  REQUIRE(events.size() == 2);
  CHECK(events[0].seq == 1);
  CHECK(events[0].session == "0123456789abcdef");
  CHECK(events[0].event == "egress");
  CHECK(events[0].decision == "allow");
  CHECK(events[0].path == "/a/b");
  CHECK(events[0].status == 200);
  CHECK_THAT(events[0].rule, StartsWith("allow echo.test:"));
  CHECK(events[0].source == "repo: p.json");
  CHECK(events[1].seq == 2);
  CHECK(events[1].decision == "deny");
  CHECK(events[1].reason == "blocked-by-policy");
  CHECK(events[1].rule == "no rule allows it");
  CHECK(events[1].source == "default");
  CHECK(events[1].path == "/c");
  CHECK((*log)->counts().allowed == 1);
  CHECK((*log)->counts().denied == 1);
  CHECK(access((dir / "unused.jsonl").c_str(), F_OK) != 0);
}

TEST_CASE("a wildcard over numbers opens no address, through any request form",
          "[proxy][addresses]") {
  // Rules given directly: the policy parser refuses these patterns already.
  mojoup::test::EchoServer echo;
  ProxyOptions options;
  options.listen = "127.0.0.1:0";
  std::vector<mojoup::policy::NetworkRules::Rule> list;
  for (const char* pattern : {"*.0.0.1", "*.0.1", "*.1"}) {
    mojoup::policy::NetworkRules::Rule rule;
    rule.host.host = pattern;
    rule.host.ports = {echo.port()};
    list.push_back(rule);
  }
  options.rules = mojoup::policy::NetworkRules::FromRules(std::move(list));
  auto proxy = Proxy::Start(std::move(options));
  REQUIRE(proxy.ok());
  const std::string port = std::to_string(echo.port());
  for (const std::string host : {"127.0.0.1", "127.0.1", "127.1", "127.0.0.1."}) {
    INFO(host);
    int fd = Dial((*proxy)->tcp_address());
    Send(fd, "CONNECT " + host + ":" + port + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
    REQUIRE_THAT(ReadToClose(fd),
                 StartsWith("HTTP/1.1 403") && Contains("X-Mojoup-Proxy-Error: blocked-by-policy"));
    fd = Dial((*proxy)->tcp_address());
    Send(fd, "GET http://" + host + ":" + port + "/ HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
    REQUIRE_THAT(ReadToClose(fd), StartsWith("HTTP/1.1 403"));
  }
  REQUIRE(echo.seen().empty());
}

TEST_CASE("a host with a trailing dot or capitals meets its rule and its pin", "[proxy]") {
  mojoup::test::EchoServer echo;
  ProxyOptions options;
  options.listen = "127.0.0.1:0";
  const std::string port = std::to_string(echo.port());
  options.rules = Rules(R"({"agents": {"network": {"allow": [{"host": "echo.test", "ports": [)" +
                        port + "]}]}}}");
  // Pins are keyed by the host's canonical spelling, as the session's
  // AddPin keys them (tests/sandbox/session_test.cc).
  const auto pinned = mojoup::policy::CanonicalHost("Echo.Test.");
  REQUIRE(pinned == "echo.test");
  options.pins[*pinned + ":" + port] = "127.0.0.1";
  auto proxy = Proxy::Start(std::move(options));
  REQUIRE(proxy.ok());
  // Absolute-form: the pin is found, so the request reaches the echo server.
  int fd = Dial((*proxy)->tcp_address());
  Send(fd, "GET http://ECHO.test.:" + port +
               "/dot HTTP/1.1\r\nHost: echo.test.\r\nConnection: close\r\n\r\n");
  REQUIRE_THAT(ReadToClose(fd), StartsWith("HTTP/1.1 200"));
  // CONNECT: a tunnel to the pinned address.
  fd = Dial((*proxy)->tcp_address());
  Send(fd, "CONNECT echo.test.:" + port + " HTTP/1.1\r\nHost: echo.test.\r\n\r\n");
  REQUIRE_THAT(ReadSome(fd), StartsWith("HTTP/1.1 200"));
  Send(fd, "GET /tunnel HTTP/1.1\r\nHost: echo.test\r\nConnection: close\r\n\r\n");
  REQUIRE_THAT(ReadToClose(fd), StartsWith("HTTP/1.1 200"));
  REQUIRE(echo.seen().size() == 2);
  REQUIRE(echo.seen()[0].target == "/dot");
  REQUIRE(echo.seen()[1].target == "/tunnel");
  // Two trailing dots, or an empty label, are no host at all.
  for (const std::string target : {"echo.test..", "echo..test", ".echo.test"}) {
    INFO(target);
    fd = Dial((*proxy)->tcp_address());
    Send(fd, "CONNECT " + target + ":" + port + " HTTP/1.1\r\nHost: x\r\n\r\n");
    REQUIRE_THAT(ReadToClose(fd), StartsWith("HTTP/1.1 400"));
  }
  REQUIRE(echo.seen().size() == 2);
}

TEST_CASE("the environment has the proxy, every CA variable and the stand-ins", "[proxy]") {
  ProxyOptions options;
  options.listen = "127.0.0.1:0";
  auto stand_in = options.vault.Add("OPENAI_API_KEY", "sk-proj-abcdefghijklmnop0123456789",
                                    DefaultBinding("OPENAI_API_KEY"));
  REQUIRE(stand_in.ok());
  auto proxy = Proxy::Start(std::move(options));
  REQUIRE(proxy.ok());
  auto env = (*proxy)->Environment();
  REQUIRE(env.at("HTTPS_PROXY") == "http://" + (*proxy)->tcp_address());
  REQUIRE(env.at("NO_PROXY") == "localhost,127.0.0.1,::1");
  REQUIRE(env.at("NODE_USE_ENV_PROXY") == "1");
  REQUIRE(env.at("NODE_EXTRA_CA_CERTS") == (*proxy)->ca_cert_path());
  for (const char* name : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                           "GIT_SSL_CAINFO", "CODEX_CA_CERTIFICATE"}) {
    REQUIRE(env.at(name) == (*proxy)->ca_bundle_path());
  }
  REQUIRE(env.at("OPENAI_API_KEY") == *stand_in);
  std::ifstream bundle((*proxy)->ca_bundle_path());
  std::string text((std::istreambuf_iterator<char>(bundle)), std::istreambuf_iterator<char>());
  std::ifstream ca((*proxy)->ca_cert_path());
  std::string pem((std::istreambuf_iterator<char>(ca)), std::istreambuf_iterator<char>());
  REQUIRE(text.size() > pem.size());
  REQUIRE(text.find(pem) != std::string::npos);
}

TEST_CASE("a tunnelled host under an --upstream-ca CA verifies with the sandbox's bundle",
          "[proxy][tls]") {
  TempDir dir;
  auto upstream_ca = SessionCa::Create("private upstream CA");
  REQUIRE(upstream_ca.ok());
  const std::string ca_file = dir.Write("upstream-ca.pem", (*upstream_ca)->certificate_pem());
  mojoup::test::EchoServer echo{*(*upstream_ca)->ServerContext("private.test")};
  const std::string port = std::to_string(echo.port());
  ProxyOptions options;
  options.listen = "127.0.0.1:0";
  options.rules = Rules(R"({"agents": {"network": {"allow": [{"host": "private.test", "ports": [)" +
                        port + "]}]}}}");
  options.pins["private.test:" + port] = "127.0.0.1";
  options.upstream_ca = ca_file;
  auto proxy = Proxy::Start(std::move(options));
  REQUIRE(proxy.ok());
  // No credential is bound to the host: the sandbox's client meets the
  // upstream's own certificate, through a plain tunnel.
  mojoup::test::Run run = mojoup::test::RunWithEnv(
      {},
      {"curl", "-sS", "--max-time", "20", "-x", "http://" + (*proxy)->tcp_address(), "--cacert",
       (*proxy)->ca_bundle_path(), "https://private.test:" + port + "/tunnelled"},
      std::chrono::seconds(30));
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("\"method\": \"GET\""));
}

TEST_CASE("request heads: malformed Basic credentials and targets are handled safely",
          "[proxy][request]") {
  namespace http = boost::beast::http;
  Vault vault;
  auto stand_in = vault.Add("ACME_KEY", "acme-secret-value-123", {"api.acme.test"});
  REQUIRE(stand_in.ok());
  const std::vector<std::string> headers = CredentialHeaders("");
  // Lengths that are not a multiple of four once overran the decoder's buffer
  // (found by fuzz/request_fuzz.cc); under ASan this would fail loudly.
  for (const char* value : {"Basic a", "Basic ab", "Basic abcde", "Basic =====",
                            // decoded past the small-string buffer, so ASan sees an overrun
                            "Basic QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcQ",
                            "Basic QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXI"}) {
    http::request_header<> header;
    header.target("/");
    header.set(http::field::authorization, value);
    REQUIRE_FALSE(FindMisplacedStandIn(header, vault, "api.acme.test", headers, true));
    REQUIRE(SwapStandIns(header, vault, "api.acme.test", headers).empty());
  }
  http::request_header<> header;
  header.target("/q");
  header.set(http::field::authorization, "Bearer " + *stand_in);
  header.insert("X-Api-Key", *stand_in);
  header.insert("X-Twice", "one");
  header.insert("X-Twice", "two");
  REQUIRE_FALSE(FindMisplacedStandIn(header, vault, "api.acme.test", headers, true));
  SwapStandIns(header, vault, "api.acme.test", headers);
  REQUIRE(Str(header.target()) == "/q");
  REQUIRE(Str(header[http::field::authorization]) == "Bearer acme-secret-value-123");
  REQUIRE(Str(header["x-api-key"]) == "acme-secret-value-123");
  auto twice = header.equal_range("X-Twice");
  REQUIRE(std::distance(twice.first, twice.second) == 2);

  REQUIRE(SplitHostPort("API.test:443", 0) ==
          std::make_pair(std::string("api.test"), std::uint16_t{443}));
  REQUIRE(SplitHostPort("[fd00::7]:8443", 0)->first == "[fd00::7]");
  REQUIRE(SplitHostPort("[FD00:0::7]:8443", 0)->first == "[fd00::7]");
  REQUIRE(SplitHostPort("API.test.:443", 0) ==
          std::make_pair(std::string("api.test"), std::uint16_t{443}));
  REQUIRE_FALSE(SplitHostPort("api..test:443", 0).has_value());
  REQUIRE_FALSE(SplitHostPort("api.test..:443", 0).has_value());
  REQUIRE(ParseAbsoluteTarget("http://API.test./x")->host == "api.test");
  REQUIRE(ParseBaseUrlTarget("/api.test./v1")->host == "api.test");
  REQUIRE_FALSE(SplitHostPort("api.test:0", 0).has_value());
  REQUIRE_FALSE(SplitHostPort("api.test:99999", 0).has_value());
  REQUIRE_FALSE(SplitHostPort("api.test:44x", 0).has_value());
  REQUIRE_FALSE(ParseAbsoluteTarget("http://user:pw@api.test/").has_value());
  REQUIRE(ParseAbsoluteTarget("http://api.test")->origin == "/");
  REQUIRE(ParseAbsoluteTarget("http://api.test:8080?x=1")->origin == "/?x=1");
  auto base = ParseBaseUrlTarget("/API.test/v1/messages?beta=1");
  REQUIRE(base->host == "api.test");
  REQUIRE(base->port == 443);
  REQUIRE(base->origin == "/v1/messages?beta=1");
  REQUIRE(ParseBaseUrlTarget("/api.test:8443")->origin == "/");
  REQUIRE_FALSE(ParseBaseUrlTarget("/").has_value());
  REQUIRE_FALSE(ParseBaseUrlTarget("/u@api.test/").has_value());
}

TEST_CASE("past its connection limit the proxy answers 503 and keeps serving", "[proxy]") {
  ProxyOptions options;
  options.listen = "127.0.0.1:0";
  options.max_connections = 2;
  options.rules = Rules(R"({"agents": {}})");
  auto proxy = Proxy::Start(std::move(options));
  REQUIRE(proxy.ok());
  int first = Dial((*proxy)->tcp_address());
  int second = Dial((*proxy)->tcp_address());
  // Both are held open (headers not sent yet); the third is turned away.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int third = Dial((*proxy)->tcp_address());
  REQUIRE_THAT(ReadToClose(third), StartsWith("HTTP/1.1 503"));
  close(first);
  close(second);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int again = Dial((*proxy)->tcp_address());
  Send(again, "GET http://x.test/ HTTP/1.1\r\nHost: x.test\r\n\r\n");
  REQUIRE_THAT(ReadToClose(again), StartsWith("HTTP/1.1 403"));
}

namespace {

// Runs `body` in a forked child and waits: what a proxy does to its process
// is for good, and must not reach the test process. "" when `body` found all
// well, else what it reported or how the child ended. Catch's assertions must
// not run in the child.
std::string InChild(const std::function<std::string()>& body) {
  int report[2];
  REQUIRE(pipe2(report, O_CLOEXEC) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(report[0]);
    std::string problem;
    try {
      problem = body();
    } catch (const std::exception& e) {
      problem = std::string("exception: ") + e.what();
    }
    if (!problem.empty()) (void)!write(report[1], problem.data(), problem.size());
    _exit(problem.empty() ? 0 : 1);
  }
  close(report[1]);
  std::string problem;
  char buf[1024];
  for (ssize_t n; (n = read(report[0], buf, sizeof buf)) > 0;) {
    problem.append(buf, static_cast<std::size_t>(n));
  }
  close(report[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    problem += "the child died of signal " + std::to_string(WTERMSIG(status));
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && problem.empty()) {
    problem = "the child exited " + std::to_string(WEXITSTATUS(status));
  }
  return problem;
}

}  // namespace

TEST_CASE("a process holding real keys cannot be read by its user's other processes, nor dumped",
          "[proxy][memory]") {
  const std::string problem = InChild([] {
    std::string found;
    // A program as it starts: dumpable (this test binary is not if an
    // earlier test in it started a proxy), and allowed core files.
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    const rlimit some_core{1 << 20, RLIM_INFINITY};
    setrlimit(RLIMIT_CORE, &some_core);
    if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 1) return std::string("not dumpable to begin with");
    ProxyOptions options;
    options.listen = "127.0.0.1:0";
    if (!options.vault.Add("ACME_KEY", "acme-secret-value-123", {"api.acme.test"}).ok()) {
      return std::string("Vault::Add failed");
    }
    auto proxy = Proxy::Start(std::move(options));
    if (!proxy.ok()) return "Proxy::Start: " + std::string(proxy.status().message());
    const int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    if (dumpable != 0) found += "PR_GET_DUMPABLE is " + std::to_string(dumpable) + ", not 0\n";
    rlimit core{};
    getrlimit(RLIMIT_CORE, &core);
    if (core.rlim_cur != 0 || core.rlim_max != 0) {
      found += "RLIMIT_CORE is " + std::to_string(core.rlim_cur) + "/" +
               std::to_string(core.rlim_max) + ", not 0/0\n";
    }
    return found;
  });
  INFO(problem);
  REQUIRE(problem.empty());
}

namespace {

// Reads exactly `size` bytes (or what there is before the end).
std::string ReadExactly(int fd, std::size_t size) {
  std::string text(size, '\0');
  const ssize_t n = recv(fd, text.data(), size, MSG_WAITALL);
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return text;
}

// A client that has read enough: it half-closes (the proxy's side of the
// connection sees end of input), then closes with most of the response
// unread, which answers the proxy's next bytes with a reset.
void HangUp(int fd) {
  shutdown(fd, SHUT_WR);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  close(fd);
}

}  // namespace

TEST_CASE("a client that goes away mid-response leaves the proxy, and its program, running",
          "[proxy][sigpipe]") {
  // This test program keeps SIGPIPE's default action, as any program that
  // embeds the proxy may: a SIGPIPE on any of the proxy's threads ends it.
  struct sigaction pipe_action {};
  REQUIRE(sigaction(SIGPIPE, nullptr, &pipe_action) == 0);
  REQUIRE(pipe_action.sa_handler == SIG_DFL);
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  REQUIRE_FALSE(sigismember(&mask, SIGPIPE));

  mojoup::test::EchoServer echo;
  const std::string port = std::to_string(echo.port());
  ProxyOptions options;
  options.listen = "127.0.0.1:0";
  options.rules = Rules(R"({"agents": {"network": {"allow": [{"host": "echo.test", "ports": [)" +
                        port + "]}]}}}");
  options.pins["echo.test:" + port] = "127.0.0.1";
  auto proxy = Proxy::Start(std::move(options));
  REQUIRE(proxy.ok());
  const std::string address = (*proxy)->tcp_address();
  const std::string big = "/bytes/" + std::to_string(32 << 20);
  for (int round = 0; round < 10; ++round) {
    INFO("round " << round);
    // Through a CONNECT tunnel, whose bytes move with splice(2).
    int fd = Dial(address);
    Send(fd, "CONNECT echo.test:" + port + " HTTP/1.1\r\nHost: echo.test:" + port + "\r\n\r\n");
    REQUIRE_THAT(ReadSome(fd), StartsWith("HTTP/1.1 200"));
    Send(fd, "GET " + big + " HTTP/1.1\r\nHost: echo.test\r\n\r\n");
    REQUIRE(ReadExactly(fd, 5) == "HTTP/");
    HangUp(fd);
    // Plain http, forwarded.
    fd = Dial(address);
    Send(fd, "GET http://echo.test:" + port + big + " HTTP/1.1\r\nHost: echo.test:" + port +
                 "\r\n\r\n");
    REQUIRE(ReadExactly(fd, 5) == "HTTP/");
    HangUp(fd);
  }
  // The proxy still serves both ways, and this program is still here to see it.
  int fd = Dial(address);
  Send(fd, "CONNECT echo.test:" + port + " HTTP/1.1\r\nHost: echo.test:" + port + "\r\n\r\n");
  REQUIRE_THAT(ReadSome(fd), StartsWith("HTTP/1.1 200"));
  Send(fd, "GET /after HTTP/1.1\r\nHost: echo.test\r\nConnection: close\r\n\r\n");
  REQUIRE_THAT(ReadToClose(fd), StartsWith("HTTP/1.1 200"));
  fd = Dial(address);
  Send(fd, "GET http://echo.test:" + port + "/after HTTP/1.1\r\nHost: echo.test:" + port +
               "\r\nConnection: close\r\n\r\n");
  REQUIRE_THAT(ReadToClose(fd), StartsWith("HTTP/1.1 200"));
  // The program's own disposition is as it was.
  REQUIRE(sigaction(SIGPIPE, nullptr, &pipe_action) == 0);
  REQUIRE(pipe_action.sa_handler == SIG_DFL);
}

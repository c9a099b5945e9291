// `mojoup-node proxy` with real curl as the client and real TLS and HTTP
// servers upstream, each with its own CA. The upstream records what really
// arrived; the client only ever holds stand-ins.
#include <rapidjson/document.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>
#include <fstream>
#include <thread>

#include "../support/background_process.h"
#include "../support/connect_tunnel.h"
#include "../support/echo_server.h"
#include "../support/test_support.h"
#include "fmt/format.h"
#include "mojoup/credproxy/session_ca.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using mojoup::credproxy::SessionCa;
using mojoup::test::BackgroundProcess;
using mojoup::test::EchoServer;
using mojoup::test::Run;
using mojoup::test::RunWithEnv;
using mojoup::test::Sha256Hex;
using mojoup::test::TempDir;

namespace {

bool HaveCurl() { return RunWithEnv({}, {"curl", "--version"}).result.Succeeded(); }

// The proxy between curl and four upstreams:
//   api.test    TLS, ACME_KEY is bound to it: intercepted
//   other.test  TLS, OTHER_KEY is bound to it: intercepted
//   tunnel.test TLS, nothing bound: a plain CONNECT tunnel
//   plain.test  plain HTTP
struct World {
  TempDir dir;
  std::unique_ptr<SessionCa> upstream_ca = *SessionCa::Create("upstream test CA");
  EchoServer api{*upstream_ca->ServerContext("api.test")};
  EchoServer other{*upstream_ca->ServerContext("other.test")};
  EchoServer tunnel{*upstream_ca->ServerContext("tunnel.test")};
  EchoServer plain;
  const std::string real = "sk-ant-api03-Q9vX2mKpL7rT4wYz8bN3cF6hJ1dS5gA0eR-tU_iO2pZ7xC4vB9nM";
  const std::string other_real = "ghp_R3alT0kenF0rOtherH0stOnly1234567890";
  std::unique_ptr<BackgroundProcess> proxy;
  std::string address;
  std::string ca;
  std::string stand_in;
  std::string audit;
  std::string stdout_line;

  // `extra_env`: more of the proxy's environment (a fake resolver, say).
  explicit World(const std::vector<std::string>& extra_env = {}) {
    const std::string upstream_ca_file =
        dir.Write("upstream-ca.pem", upstream_ca->certificate_pem());
    const std::string policy =
        dir.Write("policy.json",
                  fmt::format(R"({{"agents": {{"network": {{"tool_services": false,
            "allow": [{{"host": "api.test", "ports": [{}]}}, {{"host": "other.test", "ports": [{}]}},
                      {{"host": "tunnel.test", "ports": [{}]}}, {{"host": "plain.test", "ports": [{}]}},
                      {{"host": "dead.test", "ports": [9]}},
                      {{"host": "localhost", "ports": [{}]}}, {{"host": "0xa9fea9fe", "ports": [80]}},
                      {{"host": "2852039166", "ports": [80]}}, {{"host": "denied.test"}},
                      {{"host": "*.embedded.test"}}],
            "deny": [{{"host": "denied.test"}}]}}}}}})",
                              api.port(), other.port(), tunnel.port(), plain.port(), plain.port()));
    audit = dir / "audit.log";
    std::vector<std::string> argv = {mojoup::test::BinDir() + "/mojoup-node",
                                     "proxy",
                                     "--policy",
                                     policy,
                                     "--credential",
                                     "ACME_KEY=api.test",
                                     "--credential",
                                     "OTHER_KEY=other.test",
                                     "--upstream-ca",
                                     upstream_ca_file,
                                     "--audit",
                                     audit};
    for (auto [host, port] : {std::pair{"api.test", api.port()},
                              {"other.test", other.port()},
                              {"tunnel.test", tunnel.port()},
                              {"plain.test", plain.port()},
                              {"dead.test", static_cast<unsigned short>(9)}}) {
      argv.push_back("--resolve");
      argv.push_back(fmt::format("{}:{}:127.0.0.1", host, port));
    }
    std::vector<std::string> env{"ACME_KEY=" + real, "OTHER_KEY=" + other_real,
                                 "MOJOUP_STATE_DIR=" + (dir / "state"),
                                 "MOJOUP_NODE_CONFIG=" + (dir / "node.json")};
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    proxy = std::make_unique<BackgroundProcess>(env, argv);
    auto line = proxy->ReadLine(std::chrono::seconds(10));
    INFO(proxy->Stderr());
    REQUIRE(line.has_value());
    stdout_line = *line;
    rapidjson::Document ready;
    ready.Parse(line->c_str());
    REQUIRE_FALSE(ready.HasParseError());
    REQUIRE(std::string(ready["schema"].GetString()) == "mojoup.proxy/v1");
    address = ready["listen"].GetString();
    ca = ready["ca_cert"].GetString();
    stand_in = ready["env"]["ACME_KEY"].GetString();
  }

  Run Curl(std::vector<std::string> args) const {
    std::vector<std::string> argv{"curl", "-sS", "--max-time", "20", "-x", "http://" + address};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunWithEnv({}, argv, std::chrono::seconds(30));
  }
  std::string Url(const std::string& host, unsigned short port, const std::string& path,
                  bool tls = true) const {
    return fmt::format("{}://{}:{}{}", tls ? "https" : "http", host, port, path);
  }
};

}  // namespace

TEST_CASE("proxy: the upstream gets the real key, the client only the stand-in", "[proxy]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  World world;
  // Same shape: prefix and length kept, value different.
  REQUIRE(world.stand_in.size() == world.real.size());
  REQUIRE_THAT(world.stand_in, StartsWith("sk-ant-api03-"));
  REQUIRE(world.stand_in != world.real);

  Run run = world.Curl({"--cacert", world.ca, "-H", "Authorization: Bearer " + world.stand_in, "-H",
                        "x-api-key: " + world.stand_in,
                        world.Url("api.test", world.api.port(), "/v1/messages?beta=1")});
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 0);
  auto seen = world.api.seen();
  REQUIRE(seen.size() == 1);
  REQUIRE(seen[0].Header("authorization") == "Bearer " + world.real);
  REQUIRE(seen[0].Header("x-api-key") == world.real);
  REQUIRE(seen[0].target == "/v1/messages?beta=1");
  // The client learns only fingerprints of what the upstream saw.
  REQUIRE_THAT(run.result.out, Contains(Sha256Hex("Bearer " + world.real)));
  REQUIRE(run.result.out.find(world.real) == std::string::npos);

  SECTION("Basic credentials are swapped inside their encoding") {
    run = world.Curl({"--cacert", world.ca, "-u", "user:" + world.stand_in,
                      world.Url("api.test", world.api.port(), "/basic")});
    REQUIRE(run.result.exit_code == 0);
    std::string expected = "user:" + world.real;
    std::string encoded(boost::beast::detail::base64::encoded_size(expected.size()), '\0');
    encoded.resize(
        boost::beast::detail::base64::encode(encoded.data(), expected.data(), expected.size()));
    REQUIRE(world.api.seen().back().Header("authorization") == "Basic " + encoded);
  }

  // Neither the proxy's output nor its audit log ever holds the real value.
  REQUIRE(world.stdout_line.find(world.real) == std::string::npos);
  world.proxy->Stop();
  REQUIRE(world.proxy->Stderr().find(world.real) == std::string::npos);
  const std::string audit = mojoup::test::Slurp(world.audit);
  REQUIRE_THAT(audit, Contains("\"host\":\"api.test\""));
  REQUIRE(audit.find(world.real) == std::string::npos);
  REQUIRE(audit.find(world.stand_in) == std::string::npos);
  // Lines of the audit format, the request's path without its query, the
  // credentials swapped by name, the rule and where it came from.
  REQUIRE_THAT(audit, StartsWith("{\"schema\":\"mojoup.audit/v1\",\"seq\":1,"));
  REQUIRE_THAT(audit, Contains("\"method\":\"GET\",\"host\":\"api.test\""));
  REQUIRE_THAT(audit, Contains("\"path\":\"/v1/messages\",\"credentials\":[\"ACME_KEY\"]"));
  REQUIRE(audit.find("beta=1") == std::string::npos);
  REQUIRE_THAT(audit, Contains("\"source\":\"repo: " + world.dir.path()));
}

TEST_CASE("proxy: streamed and chunked bodies both ways through interception", "[proxy]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  World world;
  // A 3 MiB chunked upload and a 20 MiB response, neither held whole.
  const std::string upload = world.dir.Write("upload.bin", std::string(3 << 20, 'u'));
  Run run = world.Curl({"--cacert", world.ca, "-H", "Transfer-Encoding: chunked", "-H",
                        "x-api-key: " + world.stand_in, "--data-binary", "@" + upload,
                        world.Url("api.test", world.api.port(), "/upload")});
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(world.api.seen().back().body_bytes == (3u << 20));
  REQUIRE(world.api.seen().back().Header("x-api-key") == world.real);
  run = world.Curl({"--cacert", world.ca, "-o", world.dir / "down.bin", "-w", "%{size_download}",
                    world.Url("api.test", world.api.port(), "/bytes/20971520")});
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(run.result.out == "20971520");
  // Keep-alive: three URLs on one connection, each swapped.
  run = world.Curl({"--cacert", world.ca, "-H", "x-api-key: " + world.stand_in,
                    world.Url("api.test", world.api.port(), "/k1"),
                    world.Url("api.test", world.api.port(), "/k2"),
                    world.Url("api.test", world.api.port(), "/k3")});
  REQUIRE(run.result.exit_code == 0);
  auto seen = world.api.seen();
  REQUIRE(seen.size() == 5);
  for (std::size_t i = 2; i < 5; ++i) REQUIRE(seen[i].Header("x-api-key") == world.real);
}

TEST_CASE("proxy: a WebSocket upgrade passes through once its request is substituted", "[proxy]") {
  World world;
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  const auto colon = world.address.rfind(':');
  socket.connect({boost::asio::ip::make_address(world.address.substr(0, colon)),
                  static_cast<unsigned short>(std::stoi(world.address.substr(colon + 1)))});
  const std::string target = fmt::format("api.test:{}", world.api.port());
  boost::beast::flat_buffer buffer;
  mojoup::test::OpenTunnel(socket, buffer, target);
  boost::asio::ssl::context context(boost::asio::ssl::context::tls_client);
  context.load_verify_file(world.ca);
  boost::asio::ssl::stream<boost::asio::ip::tcp::socket&> tls(socket, context);
  SSL_set_tlsext_host_name(tls.native_handle(), "api.test");
  tls.set_verify_mode(boost::asio::ssl::verify_peer);
  tls.set_verify_callback(boost::asio::ssl::host_name_verification("api.test"));
  tls.handshake(boost::asio::ssl::stream_base::client);

  boost::beast::http::request<boost::beast::http::empty_body> upgrade{boost::beast::http::verb::get,
                                                                      "/socket", 11};
  upgrade.set(boost::beast::http::field::host, target);  // the tunnel's host and port
  upgrade.set(boost::beast::http::field::upgrade, "websocket");
  upgrade.set(boost::beast::http::field::connection, "Upgrade");
  upgrade.set(boost::beast::http::field::sec_websocket_key, "dGhlIHNhbXBsZSBub25jZQ==");
  upgrade.set(boost::beast::http::field::sec_websocket_version, "13");
  upgrade.set("x-api-key", world.stand_in);
  boost::beast::http::write(tls, upgrade);
  boost::beast::flat_buffer tls_buffer;
  boost::beast::http::response<boost::beast::http::empty_body> switched;
  boost::beast::http::read(tls, tls_buffer, switched);
  REQUIRE(switched.result() == boost::beast::http::status::switching_protocols);
  REQUIRE(world.api.seen().back().Header("x-api-key") == world.real);
  // Now raw bytes flow both ways.
  boost::asio::write(tls, boost::asio::buffer(std::string("frames after the upgrade")));
  std::string echoed(24, '\0');
  boost::asio::read(tls, boost::asio::buffer(echoed));
  REQUIRE(echoed == "frames after the upgrade");
}

TEST_CASE("proxy: base-URL mode forwards /host/path over verified TLS, under the same rules",
          "[proxy]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  World world;
  const std::string base = fmt::format("http://{}/api.test:{}", world.address, world.api.port());
  Run run = RunWithEnv({}, {"curl", "-sS", "--max-time", "20", "-H", "x-api-key: " + world.stand_in,
                            base + "/v1/messages?beta=1"});
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 0);
  auto seen = world.api.seen();
  REQUIRE(seen.size() == 1);
  REQUIRE(seen[0].target == "/v1/messages?beta=1");
  REQUIRE(seen[0].Header("x-api-key") == world.real);
  REQUIRE(seen[0].Header("host") == fmt::format("api.test:{}", world.api.port()));
  REQUIRE(run.result.out.find(world.real) == std::string::npos);

  run = RunWithEnv({}, {"curl", "-sS", "-i", "--max-time", "20",
                        fmt::format("http://{}/denied.test/x", world.address)});
  REQUIRE_THAT(run.result.out, Contains("X-Mojoup-Proxy-Error: blocked-by-policy"));
  run = RunWithEnv({},
                   {"curl", "-sS", "-i", "--max-time", "20", "-H", "x-api-key: " + world.stand_in,
                    fmt::format("http://{}/tunnel.test:{}/x", world.address, world.tunnel.port())});
  REQUIRE_THAT(run.result.out, Contains("X-Mojoup-Proxy-Error: credential-host-mismatch"));
  REQUIRE(world.tunnel.seen().empty());
}

TEST_CASE("proxy: a host without a credential gets a plain tunnel", "[proxy]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  World world;
  // The client verifies the upstream's own certificate: nothing in between.
  Run run = world.Curl({"--cacert", world.dir / "upstream-ca.pem",
                        world.Url("tunnel.test", world.tunnel.port(), "/through")});
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(world.tunnel.seen().size() == 1);
  REQUIRE(world.tunnel.seen()[0].target == "/through");
  // and the session CA would not do for it.
  run = world.Curl({"--cacert", world.ca, world.Url("tunnel.test", world.tunnel.port(), "/")});
  REQUIRE(run.result.exit_code != 0);
}

TEST_CASE("proxy: plain http in absolute form", "[proxy]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  World world;
  Run run =
      world.Curl({"-d", "hello", world.Url("plain.test", world.plain.port(), "/post", false)});
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 0);
  auto seen = world.plain.seen();
  REQUIRE(seen.size() == 1);
  REQUIRE(seen[0].target == "/post");
  REQUIRE(seen[0].body_bytes == 5);
  REQUIRE(seen[0].Header("proxy-connection").empty());
}

TEST_CASE("proxy: each refusal has its header and a body that names what refused",
          "[proxy][refusal]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  World world;
  auto refused = [&](Run run, const std::string& code) {
    INFO(run.result.out << run.result.err);
    // Refusals inside an intercepted tunnel come after the CONNECT's 200.
    const std::string established = "HTTP/1.1 200 Connection established\r\n\r\n";
    if (run.result.out.rfind(established, 0) == 0) run.result.out.erase(0, established.size());
    REQUIRE_THAT(run.result.out, StartsWith("HTTP/1.1 403"));
    REQUIRE_THAT(run.result.out, Contains("X-Mojoup-Proxy-Error: " + code));
    auto body = run.result.out.substr(run.result.out.find("\r\n\r\n") + 4);
    rapidjson::Document doc;
    doc.Parse(body.c_str());
    REQUIRE_FALSE(doc.HasParseError());
    REQUIRE(std::string(doc["error"].GetString()) == code);
    REQUIRE_THAT(std::string(doc["message"].GetString()), StartsWith("Blocked by policy"));
    return std::string(doc["rule"].GetString());
  };

  SECTION("a denied host: deny beats allow") {
    std::string rule = refused(world.Curl({"-i", "http://denied.test/"}), "blocked-by-policy");
    REQUIRE_THAT(rule, Contains("deny denied.test:443,80"));
    Run run = world.Curl({"-v", "https://denied.test/"});
    REQUIRE(run.result.exit_code != 0);
    REQUIRE_THAT(run.result.err, Contains("403"));
    REQUIRE_THAT(run.result.err, Contains("X-Mojoup-Proxy-Error: blocked-by-policy"));
  }
  SECTION("a host no rule names") {
    std::string rule = refused(world.Curl({"-i", "http://example.org/"}), "blocked-by-policy");
    REQUIRE(rule == "no rule allows it");
  }
  SECTION("a stand-in sent to the wrong host, over TLS and in plain http") {
    std::string rule = refused(
        world.Curl({"-i", "--cacert", world.ca, "-H", "Authorization: Bearer " + world.stand_in,
                    world.Url("other.test", world.other.port(), "/steal")}),
        "credential-host-mismatch");
    REQUIRE(rule == "credential ACME_KEY is bound to api.test only");
    REQUIRE(world.other.seen().empty());  // never forwarded
    refused(world.Curl({"-i", "-H", "X-Token: " + world.stand_in,
                        world.Url("plain.test", world.plain.port(), "/", false)}),
            "credential-host-mismatch");
    REQUIRE(world.plain.seen().empty());
  }
  SECTION("the metadata address, and a name that resolves to loopback") {
    // curl itself turns 0xa9fea9fe into 169.254.169.254, which no rule names;
    // the proxy's own resolution of such names is tested in sandbox_unit_tests.
    refused(world.Curl({"-i", "http://0xa9fea9fe/"}), "blocked-by-policy");
    std::string rule =
        refused(world.Curl({"-i", world.Url("localhost", world.plain.port(), "/", false)}),
                "blocked-address");
    REQUIRE_THAT(rule, Contains("loopback"));
  }
}

TEST_CASE("proxy: a host with a trailing dot is that host: intercepted, pinned and swapped",
          "[proxy][names]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  World world;
  // api.test is pinned and ACME_KEY bound to it; "api.test." once passed the
  // rules but missed both, so the stand-in left in a plain tunnel.
  Run run = world.Curl({"-v", "--cacert", world.ca, "-H", "x-api-key: " + world.stand_in,
                        world.Url("api.test.", world.api.port(), "/dot")});
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.err, Contains(fmt::format("CONNECT api.test.:{}", world.api.port())));
  auto seen = world.api.seen();
  REQUIRE(seen.size() == 1);
  REQUIRE(seen[0].target == "/dot");  // curl's Host: api.test.:PORT names the tunnel's host
  REQUIRE(seen[0].Header("x-api-key") == world.real);

  // Capitals and the dot in base-URL mode: the same host again.
  run =
      RunWithEnv({}, {"curl", "-sS", "--max-time", "20", "-H", "x-api-key: " + world.stand_in,
                      fmt::format("http://{}/API.Test.:{}/base", world.address, world.api.port())});
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 0);
  seen = world.api.seen();
  REQUIRE(seen.size() == 2);
  REQUIRE(seen[1].target == "/base");
  REQUIRE(seen[1].Header("x-api-key") == world.real);
  REQUIRE(seen[1].Header("host") == fmt::format("api.test:{}", world.api.port()));

  // Absolute-form plain http: a stand-in never goes out in the clear.
  run = world.Curl({"-i", "-H", "x-api-key: " + world.stand_in,
                    world.Url("plain.test.", world.plain.port(), "/", false)});
  REQUIRE_THAT(run.result.out, Contains("X-Mojoup-Proxy-Error: credential-host-mismatch"));
  // Two trailing dots, or an empty label, are no host at all.
  run = world.Curl({"-i", fmt::format("http://api..test:{}/", world.api.port())});
  REQUIRE_THAT(run.result.out, StartsWith("HTTP/1.1 400"));
  REQUIRE(world.api.seen().size() == 2);
  REQUIRE(world.plain.seen().empty());

  world.proxy->Stop();
  const std::string audit = mojoup::test::Slurp(world.audit);
  REQUIRE_THAT(audit, Contains("\"host\":\"api.test\""));
  // The CONNECT is allowed and intercepted; its requests follow, each on
  // its own line with its path and the credentials swapped into it.
  REQUIRE_THAT(audit, Contains("\"decision\":\"allow\""));
  REQUIRE_THAT(audit, Contains("\"detail\":\"intercepted\""));
  REQUIRE_THAT(audit, Contains("\"path\":\"/base\",\"credentials\":[\"ACME_KEY\"]"));
  REQUIRE_THAT(audit, Contains("\"reason\":\"credential-host-mismatch\""));
  REQUIRE_FALSE(audit.find("api.test.\"") != std::string::npos);
}

TEST_CASE("proxy: names that resolve to IPv6 forms of blocked IPv4 addresses are refused",
          "[proxy][addresses]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  // A DNS answer the agent's side could arrange, for names a *.domain rule
  // allows: each IPv6 address leads to loopback or the metadata address.
  const std::vector<std::pair<std::string, std::string>> names = {
      {"v4compat.embedded.test", "::127.0.0.1"},                         // RFC 4291 2.5.5.1
      {"nat64.embedded.test", "64:ff9b::7f00:1"},                        // RFC 6052
      {"local64.embedded.test", "64:ff9b:1::a9fe:a9fe"},                 // RFC 8215
      {"sixtofour.embedded.test", "2002:7f00:1::"},                      // RFC 3056
      {"teredo.embedded.test", "2001:0:4136:e378:8000:63bf:80ff:fffe"},  // RFC 4380
      {"translated.embedded.test", "::ffff:0:127.0.0.1"},                // RFC 2765
      {"mapped.embedded.test", "::ffff:169.254.169.254"},
  };
  std::string table;
  for (const auto& [name, address] : names) {
    table += (table.empty() ? "" : ",") + name + "=" + address;
  }
  World world({std::string("LD_PRELOAD=") + MOJOUP_FAKE_RESOLVER, "MOJOUP_FAKE_HOSTS=" + table,
               "ASAN_OPTIONS=verify_asan_link_order=0"});
  for (const auto& [name, address] : names) {
    INFO(name << " -> " << address);
    // CONNECT name:443, as any https client sends it.
    Run run = world.Curl({"-v", "https://" + name + "/"});
    INFO(run.result.err);
    REQUIRE(run.result.exit_code != 0);
    REQUIRE_THAT(run.result.err, Contains("< HTTP/1.1 403"));
    REQUIRE_THAT(run.result.err, Contains("X-Mojoup-Proxy-Error: blocked-address"));
    // Absolute-form, where the body says which address refused it.
    run = world.Curl({"-i", "http://" + name + "/"});
    INFO(run.result.out);
    REQUIRE_THAT(run.result.out, StartsWith("HTTP/1.1 403"));
    REQUIRE_THAT(run.result.out, Contains("X-Mojoup-Proxy-Error: blocked-address"));
    // Named as the proxy writes it: an IPv4-mapped address as its IPv4 one.
    auto resolved = boost::asio::ip::make_address_v6(address);
    const std::string shown =
        resolved.is_v4_mapped()
            ? boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, resolved).to_string()
            : resolved.to_string();
    REQUIRE_THAT(run.result.out, Contains(shown + " is a loopback"));
  }
  // The addresses themselves, in CONNECT: no rule names them.
  for (const auto& [name, address] : names) {
    Run run = world.Curl({"-v", "https://[" + address + "]:443/"});
    INFO(address << "\n" << run.result.err);
    REQUIRE(run.result.exit_code != 0);
    REQUIRE_THAT(run.result.err, Contains("< HTTP/1.1 403"));
    REQUIRE_THAT(run.result.err, Contains("X-Mojoup-Proxy-Error: blocked-by-policy"));
  }
}

TEST_CASE("proxy: a wildcard over numbers in the policy is refused before anything listens",
          "[proxy][names]") {
  mojoup::test::TempDir dir;
  const std::vector<std::string> env = {"MOJOUP_STATE_DIR=" + (dir / "state"),
                                        "MOJOUP_NODE_CONFIG=" + (dir / "node.json"),
                                        "ACME_KEY=sk-acme-0123456789abcdef"};
  for (const char* pattern : {"*.0.0.1", "*.169.254", "*.254"}) {
    const std::string policy = dir.Write(
        "policy.json",
        fmt::format("{{\"agents\": {{\"network\": {{\"allow\": [\n  {{\"host\": \"{}\"}}]}}}}}}",
                    pattern));
    Run run = RunWithEnv(env, {mojoup::test::BinDir() + "/mojoup-node", "proxy", "--policy", policy,
                               "--listen", "127.0.0.1:0"});
    INFO(pattern << "\n" << run.result.err);
    REQUIRE(run.result.exit_code == 2);
    REQUIRE(run.result.out.empty());  // never ready
    REQUIRE_THAT(run.result.err, Contains(policy + ":2:12: /agents/network/allow/0/host: \"" +
                                          pattern + "\" is a wildcard over numbers only"));
    REQUIRE_THAT(run.result.err, Contains("expected *. followed by a domain name"));
  }
  // A credential can be bound only to exact hosts, numbers or not.
  const std::string policy = dir.Write("policy.json", "{}");
  Run run = RunWithEnv(env, {mojoup::test::BinDir() + "/mojoup-node", "proxy", "--policy", policy,
                             "--credential", "ACME_KEY=*.0.0.1"});
  INFO(run.result.err);
  REQUIRE(run.result.exit_code == 2);
  REQUIRE(run.result.out.empty());
  REQUIRE_THAT(run.result.err, Contains("*.0.0.1"));
}

TEST_CASE("proxy: an unreachable upstream is a 502 with the reason", "[proxy]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  World world;
  Run run = world.Curl({"-i", "http://dead.test:9/"});
  INFO(run.result.out);
  REQUIRE_THAT(run.result.out, StartsWith("HTTP/1.1 502"));
  REQUIRE_THAT(run.result.out, Contains("cannot connect to dead.test:9"));
}

TEST_CASE("proxy: concurrent clients through interception and tunnels", "[proxy]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  World world;
  std::vector<std::thread> clients;
  std::vector<int> codes(24, -1);
  for (int i = 0; i < 24; ++i) {
    clients.emplace_back([&, i] {
      Run run =
          i % 2 == 0
              ? world.Curl({"--cacert", world.ca, "-H", "x-api-key: " + world.stand_in,
                            world.Url("api.test", world.api.port(), "/c" + std::to_string(i))})
              : world.Curl({"--cacert", world.dir / "upstream-ca.pem",
                            world.Url("tunnel.test", world.tunnel.port(), "/c")});
      codes[i] = run.result.exit_code;
    });
  }
  for (auto& client : clients) client.join();
  for (int code : codes) REQUIRE(code == 0);
  auto seen = world.api.seen();
  REQUIRE(seen.size() == 12);
  for (const auto& request : seen) REQUIRE(request.Header("x-api-key") == world.real);
  REQUIRE(world.tunnel.seen().size() == 12);
}

namespace {

// Neither the real key nor its random middle (a key with garbled edges) in
// anything curl printed.
void RequireNoRealKey(const World& world, const Run& run) {
  const std::string middle = world.real.substr(world.real.size() / 2 - 8, 16);
  for (const std::string* text : {&run.result.out, &run.result.err}) {
    REQUIRE(text->find(world.real) == std::string::npos);
    REQUIRE(text->find(middle) == std::string::npos);
  }
}

std::string Base64(const std::string& text) {
  std::string out(boost::beast::detail::base64::encoded_size(text.size()), '\0');
  out.resize(boost::beast::detail::base64::encode(out.data(), text.data(), text.size()));
  return out;
}

}  // namespace

TEST_CASE("proxy: curl gets only stand-ins back from a reflecting upstream", "[proxy][reflect]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  World world;
  const std::string url = world.Url("api.test", world.api.port(), "/reflect");
  for (const std::string query : {"", "?gzip=1", "?deflate=1", "?chunked=1&split=5",
                                  "?gzip=1&chunked=1&split=3", "?split=1"}) {
    for (bool compressed : {false, true}) {
      INFO(query << (compressed ? " --compressed" : ""));
      std::vector<std::string> args = {"-i",
                                       "--cacert",
                                       world.ca,
                                       "-H",
                                       "x-api-key: " + world.stand_in,
                                       "-H",
                                       "Authorization: Bearer " + world.stand_in};
      if (compressed) args.push_back("--compressed");
      args.push_back(url + query);
      Run run = world.Curl(args);
      INFO(run.result.out << run.result.err);
      REQUIRE(run.result.exit_code == 0);
      const auto seen = world.api.seen().back();
      REQUIRE(seen.Header("x-api-key") == world.real);
      REQUIRE(seen.Header("authorization") == "Bearer " + world.real);
      REQUIRE(seen.Header("accept-encoding") == "identity");
      REQUIRE_THAT(run.result.out, Contains("X-Echo-x-api-key: " + world.stand_in));
      REQUIRE_THAT(run.result.out, Contains("x-api-key: " + world.stand_in + "\n"));
      REQUIRE_THAT(run.result.out, Contains("Authorization: Bearer " + world.stand_in + "\n"));
      RequireNoRealKey(world, run);
    }
  }
  // Basic credentials: swapped inside their encoding, scrubbed back.
  Run run = world.Curl(
      {"-i", "--cacert", world.ca, "-u", "user:" + world.stand_in, url + "?chunked=1&split=7"});
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(world.api.seen().back().Header("authorization") ==
          "Basic " + Base64("user:" + world.real));
  REQUIRE_THAT(run.result.out, Contains("Basic " + Base64("user:" + world.stand_in)));
  RequireNoRealKey(world, run);
  // Reflected in base64: nothing of the key's random part comes back.
  run = world.Curl({"--cacert", world.ca, "-H", "x-api-key: " + world.stand_in, url + "?b64=1"});
  REQUIRE(run.result.exit_code == 0);
  std::string decoded(boost::beast::detail::base64::decoded_size(run.result.out.size()), '\0');
  decoded.resize(boost::beast::detail::base64::decode(decoded.data(), run.result.out.data(),
                                                      run.result.out.size())
                     .first);
  REQUIRE(decoded.find(world.real.substr(13, 40)) == std::string::npos);
}

TEST_CASE("proxy: curl's attempts to get a reflected key are refused before they go",
          "[proxy][reflect][refusal]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  World world;
  const std::string url = world.Url("api.test", world.api.port(), "/reflect");
  const std::string key = "x-api-key: " + world.stand_in;
  auto refused = [&](std::vector<std::string> args, const std::string& code) {
    args.insert(args.begin(), {"-i", "--cacert", world.ca});
    Run run = world.Curl(args);
    INFO(run.result.out << run.result.err);
    REQUIRE_THAT(run.result.out, Contains("HTTP/1.1 403"));
    REQUIRE_THAT(run.result.out, Contains("X-Mojoup-Proxy-Error: " + code));
    RequireNoRealKey(world, run);
    REQUIRE(world.api.seen().empty());  // never forwarded
    return run.result.out;
  };
  SECTION("a stand-in in the query, the path or a header that is not a credential header") {
    std::string out = refused({"-H", key, url + "?key=" + world.stand_in}, "credential-misplaced");
    REQUIRE_THAT(out, Contains("only as the whole value of a credential header"));
    refused({url + "/" + world.stand_in}, "credential-misplaced");
    out =
        refused({"-H", key, "-H", "X-Reflect-Me: " + world.stand_in, url}, "credential-misplaced");
    REQUIRE_THAT(out, Contains("header X-Reflect-Me"));
  }
  SECTION("TRACE and TRACK") {
    refused({"-X", "TRACE", "-H", key, url}, "method-not-allowed");
    refused({"-X", "TRACK", "-H", key, url}, "method-not-allowed");
  }
  SECTION("a Host header or an absolute-form authority naming another host") {
    std::string out = refused({"-H", key, "-H", "Host: attacker.example", url}, "host-mismatch");
    REQUIRE_THAT(out, Contains("attacker.example"));
    refused({"-H", key, "--request-target", "https://attacker.example/reflect", url},
            "host-mismatch");
  }
}

TEST_CASE("proxy: base-URL mode and plain http against a reflecting upstream",
          "[proxy][reflect][refusal]") {
  if (!HaveCurl()) MOJOUP_SKIP("curl is not installed");
  World world;
  const std::string base = fmt::format("http://{}/api.test:{}", world.address, world.api.port());
  Run run =
      RunWithEnv({}, {"curl", "-sS", "-i", "--max-time", "20", "-H", "x-api-key: " + world.stand_in,
                      base + "/reflect?gzip=1&chunked=1&split=3"});
  INFO(run.result.out << run.result.err);
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(world.api.seen().back().Header("x-api-key") == world.real);
  REQUIRE_THAT(run.result.out, Contains("x-api-key: " + world.stand_in + "\n"));
  RequireNoRealKey(world, run);
  const std::size_t forwarded = world.api.seen().size();
  run = RunWithEnv({}, {"curl", "-sS", "-i", "--max-time", "20", "-X", "TRACE", base + "/"});
  REQUIRE_THAT(run.result.out, Contains("X-Mojoup-Proxy-Error: method-not-allowed"));
  run = RunWithEnv(
      {}, {"curl", "-sS", "-i", "--max-time", "20", base + "/reflect?key=" + world.stand_in});
  REQUIRE_THAT(run.result.out, Contains("X-Mojoup-Proxy-Error: credential-misplaced"));
  REQUIRE(world.api.seen().size() == forwarded);

  const std::string plain = world.Url("plain.test", world.plain.port(), "/reflect", false);
  run = world.Curl({"-i", "-X", "TRACE", plain});
  REQUIRE_THAT(run.result.out, Contains("X-Mojoup-Proxy-Error: method-not-allowed"));
  // A stand-in in a plain-http body is cut off before it is sent.
  run = world.Curl({"-i", "--data-binary", "leak=" + world.stand_in, plain});
  REQUIRE_THAT(run.result.out, Contains("X-Mojoup-Proxy-Error: credential-host-mismatch"));
  REQUIRE_THAT(run.result.out, Contains("in the request body"));
  REQUIRE(world.plain.seen().empty());
  // Host comes from the target, whatever the client said.
  run = world.Curl({"-i", "-H", "Host: attacker.example", plain});
  REQUIRE(run.result.exit_code == 0);
  REQUIRE(world.plain.seen().back().Header("host") ==
          fmt::format("plain.test:{}", world.plain.port()));
}

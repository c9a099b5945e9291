// Escape suite: host names and addresses. From inside a real native session,
// as a normal user, curl tries the spellings that once slipped past the
// proxy: a policy wildcard made of numbers, a host with a trailing dot, and
// IPv6 addresses that lead to loopback or the metadata address.
#include "../support/echo_server.h"
#include "../support/real_user.h"
#include "../support/sandbox_image.h"
#include "../support/test_support.h"
#include "fmt/format.h"
#include "mojoup/credproxy/session_ca.h"

namespace {

using Catch::Matchers::Contains;
using mojoup::credproxy::SessionCa;
using mojoup::test::Described;
using mojoup::test::EchoServer;
using mojoup::test::RealUser;
using mojoup::test::Run;
using mojoup::test::UserNode;

constexpr const char* kRealKey = "tk-live-REALKEY0123456789abcdefghijklmnopqrstuvwxyz";

// An upstream for api.test with a CA of its own, which the user's session
// trusts through --upstream-ca.
struct Upstream {
  std::unique_ptr<SessionCa> ca = *SessionCa::Create("upstream test CA");
  EchoServer server{*ca->ServerContext("api.test")};
  std::string port = std::to_string(server.port());
  std::string ca_file;

  explicit Upstream(const UserNode& node) : ca_file(node.root + "/upstream-ca.pem") {
    node.user.Write(ca_file, ca->certificate_pem());
  }
};

TEST_CASE("escape: a policy wildcard made of numbers refuses the run before anything starts",
          "[escape][names]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  // *.0.0.1 once matched 127.0.0.1, and a matched address skipped the
  // blocked-address check: the session could reach the node's loopback.
  node.Policy(
      "{\"agents\": {\"network\": {\"allow\": [\n"
      "  {\"host\": \"*.0.0.1\", \"ports\": [22, 2375, 8080]}]}}}");
  Run run = node.Sh("echo SESSION-STARTED; curl -s http://127.0.0.1:8080/");
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 2);
  REQUIRE_THAT(run.result.out, !Contains("SESSION-STARTED"));
  REQUIRE_THAT(run.result.err, Contains(node.repo + "/.mojoup/policy.json:2:12: "
                                                    "/agents/network/allow/0/host: \"*.0.0.1\" "
                                                    "is a wildcard over numbers only"));
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("escape: a host with a trailing dot is swapped like the host, never sent as is",
          "[escape][names][credential]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  Upstream upstream(node);
  node.Policy(R"({"agents": {"network": {"allow": [{"host": "api.test", "ports": [)" +
              upstream.port + "]}]}}}");
  // CONNECT to api.test. and API.TEST. (curl keeps the dot), and base-URL
  // mode straight to the proxy's bridge with the dot in the path.
  Run run = node.Sh("curl -sS -H \"x-api-key: $TEST_KEY\" https://api.test.:" + upstream.port +
                        "/dot; echo; "
                        "curl -sS -H \"x-api-key: $TEST_KEY\" https://API.TEST.:" +
                        upstream.port +
                        "/caps; echo; "
                        "curl -sS --noproxy '*' -H \"x-api-key: $TEST_KEY\" "
                        "http://127.0.0.1:3128/api.test.:" +
                        upstream.port + "/base; echo; echo \"stand-in:$TEST_KEY\"",
                    {"--credential", "TEST_KEY=api.test", "--resolve",
                     "api.test:" + upstream.port + ":127.0.0.1", "--upstream-ca", upstream.ca_file},
                    {"TEST_KEY=" + std::string(kRealKey)});
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("stand-in:tk-live-"));
  REQUIRE_THAT(run.result.out, !Contains(kRealKey));
  // Every request arrived, and each carried the real key: the stand-in never
  // left the node unswapped.
  auto seen = upstream.server.seen();
  REQUIRE(seen.size() == 3);
  REQUIRE(seen[0].target == "/dot");
  REQUIRE(seen[1].target == "/caps");
  REQUIRE(seen[2].target == "/base");
  for (const auto& request : seen) REQUIRE(request.Header("x-api-key") == kRealKey);
  REQUIRE(node.Leftovers() == 0);
}

TEST_CASE("escape: IPv6 forms of loopback and metadata are refused, as literals and as names",
          "[escape][addresses]") {
  MOJOUP_REQUIRE_REAL_USER(user);
  UserNode node(*user);
  Upstream upstream(node);
  // Names a *.domain rule allows, which resolve (through a resolver the test
  // controls, standing in for DNS the agent's side could set up) to IPv6
  // addresses leading to 127.0.0.1 or 169.254.169.254.
  const std::vector<std::pair<std::string, std::string>> names = {
      {"v4compat.embedded.test", "::127.0.0.1"},
      {"nat64.embedded.test", "64:ff9b::7f00:1"},
      {"sixtofour.embedded.test", "2002:7f00:1::"},
      {"teredo.embedded.test", "2001:0:4136:e378:8000:63bf:80ff:fffe"},
      {"metadata.embedded.test", "64:ff9b::a9fe:a9fe"},
  };
  std::string table;
  std::string script;
  for (const auto& [name, address] : names) {
    table += (table.empty() ? "" : ",") + name + "=" + address;
    script += fmt::format(
        "echo {0}:$(curl -sv -o /dev/null https://{0}:{1}/ 2>&1 | tr -d '\\r' | "
        "grep -i '^< x-mojoup-proxy-error' | cut -d' ' -f3); ",
        name, upstream.port);
  }
  for (const char* literal : {"[::127.0.0.1]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]"}) {
    script +=
        fmt::format("echo '{0}':$(curl -s -o /dev/null -w '%{{http_connect}}' https://{0}:{1}/); ",
                    literal, upstream.port);
  }
  script += "echo attacks-done";
  const std::string resolver = node.root + "/fake_resolver.so";
  user->Write(resolver, mojoup::test::Slurp(MOJOUP_FAKE_RESOLVER), 0755);
  node.Policy(R"({"agents": {"network": {"allow": [{"host": "*.embedded.test", "ports": [)" +
              upstream.port + "]}]}}}");

  Run run = node.Sh(script, {},
                    {"LD_PRELOAD=" + resolver, "MOJOUP_FAKE_HOSTS=" + table,
                     "ASAN_OPTIONS=verify_asan_link_order=0"});
  INFO(Described(run));
  REQUIRE(run.result.exit_code == 0);
  REQUIRE_THAT(run.result.out, Contains("attacks-done"));
  for (const auto& [name, address] : names) {
    INFO(name << " -> " << address);
    REQUIRE_THAT(run.result.out, Contains(name + ":blocked-address\n"));
  }
  for (const char* literal : {"[::127.0.0.1]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]"}) {
    REQUIRE_THAT(run.result.out, Contains(std::string(literal) + ":403\n"));
  }
  REQUIRE(upstream.server.seen().empty());
  REQUIRE(node.Leftovers() == 0);
}

}  // namespace

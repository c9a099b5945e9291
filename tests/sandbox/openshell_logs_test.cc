// OpenShell's refusals as `openshell logs` prints them, read as untrusted
// text, and what the runtime's ask never asks about. (The CLI calls it
// makes are in openshell_cli_test.cc.)
#include "runtime/openshell/openshell_logs.h"

#include <catch2/catch.hpp>
#include <string>

#include "mojoup/policy/network_rules.h"
#include "session/runtime_ask.h"

using mojoup::sandbox::OpenShellDenial;
using mojoup::sandbox::OpenShellDenialReader;
using mojoup::sandbox::ParseOpenShellDenial;

namespace {

// print_log_line's shape (v0.0.111 crates/openshell-cli/src/run.rs).
std::string PrintedLine(const std::string& time, const std::string& message) {
  return "[" + time + "] [sandbox] [OCSF ] [ocsf] " + message;
}

constexpr const char* kDeniedConnect =
    "NET:OPEN [MED] DENIED /usr/bin/curl(42) -> api.example.com:443 [policy:- engine:opa] "
    "[reason:endpoint api.example.com:443 is not allowed by any policy]";

}  // namespace

TEST_CASE("openshell logs: a CONNECT and a forwarded request refused by the policy",
          "[openshell]") {
  std::optional<OpenShellDenial> connect =
      ParseOpenShellDenial(PrintedLine("1733300000.042", kDeniedConnect));
  REQUIRE(connect);
  CHECK(connect->timestamp_ms == 1733300000042);
  CHECK(connect->method == "CONNECT");
  CHECK(connect->host == "api.example.com");
  CHECK(connect->port == 443);
  CHECK(connect->path.empty());
  CHECK(connect->program == "/usr/bin/curl");
  CHECK(connect->engine == "opa");
  CHECK(connect->reason == "endpoint api.example.com:443 is not allowed by any policy");

  std::optional<OpenShellDenial> forward = ParseOpenShellDenial(PrintedLine(
      "1733300001.000",
      "HTTP:POST [MED] DENIED -(0) -> POST http://Plain.Example.org:8080/up/load "
      "[policy:- engine:opa] [reason:endpoint plain.example.org:8080 is not allowed by any "
      "policy]"));
  REQUIRE(forward);
  CHECK(forward->method == "POST");
  CHECK(forward->host == "plain.example.org");
  CHECK(forward->port == 8080);
  CHECK(forward->path == "/up/load");
  CHECK(forward->program == "-");

  // http's own port is left out of the URL; an address refused is ssrf.
  forward = ParseOpenShellDenial(
      PrintedLine("1.000",
                  "HTTP:GET [MED] DENIED -(0) -> GET http://a.example/x?token=1 [policy:- "
                  "engine:opa]"));
  REQUIRE(forward);
  CHECK(forward->port == 80);
  CHECK(forward->path == "/x");
  CHECK(forward->reason.empty());
  std::optional<OpenShellDenial> ssrf = ParseOpenShellDenial(
      PrintedLine("2.000",
                  "NET:OPEN [MED] DENIED -(0) -> inside.example:443 [policy:- engine:ssrf] "
                  "[reason:internal address]"));
  REQUIRE(ssrf);
  CHECK(ssrf->engine == "ssrf");
}

TEST_CASE("openshell logs: other lines, and lines that only look like a denial, are skipped",
          "[openshell]") {
  for (const std::string& line : std::vector<std::string>{
           // Not the sandbox's, not OCSF, not a denial.
           "[1.000] [gateway] [OCSF ] [ocsf] " + std::string(kDeniedConnect),
           "[1.000] [sandbox] [INFO ] [openshell_sandbox] " + std::string(kDeniedConnect),
           PrintedLine("1.000",
                       "NET:OPEN [INFO] ALLOWED /usr/bin/curl(42) -> api.example.com:443 "
                       "[policy:allow_api engine:opa]"),
           // Broken times, hosts, ports, engines, methods.
           "[x.000] [sandbox] [OCSF ] [ocsf] " + std::string(kDeniedConnect),
           "[1.0] [sandbox] [OCSF ] [ocsf] " + std::string(kDeniedConnect),
           PrintedLine("1.000",
                       "NET:OPEN [MED] DENIED -(0) -> bad..host:443 [policy:- engine:opa]"),
           PrintedLine("1.000", "NET:OPEN [MED] DENIED -(0) -> a.example:0 [policy:- engine:opa]"),
           PrintedLine("1.000",
                       "NET:OPEN [MED] DENIED -(0) -> a.example:65536 [policy:- engine:opa]"),
           PrintedLine("1.000",
                       "NET:OPEN [MED] DENIED -(0) -> a.example:443 [policy:- engine:rego]"),
           PrintedLine("1.000", "NET:OPEN [MED] DENIED -(0) -> a.example:443"),
           PrintedLine("1.000",
                       "HTTP:get [MED] DENIED -(0) -> get http://a.example/ [policy:- engine:opa]"),
           PrintedLine("1.000",
                       "HTTP:GET [MED] DENIED -(0) -> GET ftp://a.example/ [policy:- engine:opa]"),
           "", "[", "[1.000] [sandbox]", "not a log line at all"}) {
    INFO(line);
    CHECK_FALSE(ParseOpenShellDenial(line).has_value());
  }
  // Longer than a line may be.
  CHECK_FALSE(ParseOpenShellDenial(
                  PrintedLine("1.000", std::string(kDeniedConnect) +
                                           std::string(mojoup::sandbox::kMaxOpenShellLogLine, 'x')))
                  .has_value());
}

TEST_CASE("openshell logs: a program named like a destination does not move the destination",
          "[openshell]") {
  // The program's path is the sandbox's to choose; the one " -> " that is
  // followed by a destination and the policy's bracket is read, and a
  // control character in the path is not passed on.
  std::optional<OpenShellDenial> denial = ParseOpenShellDenial(PrintedLine(
      "3.000",
      "NET:OPEN [MED] DENIED /tmp/a -> b\x01(7) -> real.example:443 [policy:- engine:opa] "
      "[reason:r]"));
  REQUIRE(denial);
  CHECK(denial->host == "real.example");
  CHECK(denial->program == "/tmp/a -> b ");
  // A reason is bounded.
  denial = ParseOpenShellDenial(PrintedLine("3.000",
                                            "NET:OPEN [MED] DENIED -(0) -> r.example:443 "
                                            "[policy:- engine:opa] [reason:" +
                                                std::string(2000, 'y') + "]"));
  REQUIRE(denial);
  CHECK(denial->reason.size() == 512);
}

TEST_CASE("openshell logs: a whole denial's tail inside the program's name is not believed",
          "[openshell]") {
  // An agent copies curl to a path that holds a destination and the
  // brackets after it, then asks for real.example: read from the left, the
  // line names evil.example; either way it could be read two ways, and is
  // skipped rather than guessed at.
  const std::string real_tail =
      " -> real.example:443 [policy:- engine:opa] [reason:endpoint real.example:443 is not "
      "allowed by any policy]";
  for (const std::string& message : std::vector<std::string>{
           "NET:OPEN [MED] DENIED /tmp/x -> evil.example:443 [policy:- engine:opa] "
           "[reason:aaa(42)" +
               real_tail,
           "HTTP:GET [MED] DENIED /tmp/x -> GET http://evil.example/ [policy:- engine:opa] "
           "[reason:a(42) -> GET http://real.example/ [policy:- engine:opa] [reason:endpoint "
           "real.example:80 is not allowed]",
           // A refusal for the address (engine:ssrf, never asked about)
           // relabelled as one of the list's (engine:opa) inside the name.
           "NET:OPEN [MED] DENIED /tmp/x -> inside.example:443 [policy:- engine:opa] "
           "[reason:z(42) -> inside.example:443 [policy:- engine:ssrf] [reason:internal "
           "address]",
           // A reason (unescaped, and it may quote a path) holding a whole tail.
           "NET:OPEN [MED] DENIED /tmp/x(42) -> real.example:443 [policy:- engine:opa] "
           "[reason:ancestor /tmp/y -> evil.example:443 [policy:- engine:opa] [reason:z]"}) {
    INFO(message);
    CHECK_FALSE(ParseOpenShellDenial(PrintedLine("4.000", message)).has_value());
  }
  // One reading only: a name's tail that does not end the line, or an
  // arrow and brackets in the reason that do not make a tail, leave the
  // destination where it is.
  std::optional<OpenShellDenial> denial = ParseOpenShellDenial(PrintedLine(
      "4.000",
      "NET:OPEN [MED] DENIED /tmp/x -> evil.example:443 [policy:- engine:opa](42)" + real_tail));
  REQUIRE(denial);
  CHECK(denial->host == "real.example");
  CHECK(denial->program == "/tmp/x -> evil.example:443 [policy:- engine:opa]");
  denial = ParseOpenShellDenial(
      PrintedLine("4.000",
                  "NET:OPEN [MED] DENIED /tmp/x(42) -> real.example:443 [policy:- engine:opa] "
                  "[reason:ancestor /tmp/a -> b] failed]"));
  REQUIRE(denial);
  CHECK(denial->host == "real.example");
  CHECK(denial->reason == "ancestor /tmp/a -> b] failed");
}

TEST_CASE("openshell logs: a line stamped in the future does not hide later refusals",
          "[openshell]") {
  std::int64_t now = 100'000;
  OpenShellDenialReader reader([&now] { return now; });
  // A program's path with a line break in it forges a line from the year
  // 2286; it is not read, and real refusals after it still are.
  const std::string forged = PrintedLine("9999999999.000", kDeniedConnect) + "\n";
  const std::string at_99 = PrintedLine("99.000", kDeniedConnect) + "\n";
  OpenShellDenialReader::Read read = reader.Next(forged + at_99, 200);
  CHECK(read.denials.size() == 1);
  now = 102'000;
  read = reader.Next(forged + at_99 + PrintedLine("101.000", kDeniedConnect) + "\n", 200);
  REQUIRE(read.denials.size() == 1);
  CHECK(read.denials[0].timestamp_ms == 101000);
  // A clock a little ahead of this node's is read.
  read = reader.Next(PrintedLine("130.000", kDeniedConnect) + "\n", 200);
  CHECK(read.denials.size() == 1);
}

TEST_CASE(
    "openshell logs: each read gives the denials not read before, and says when some were "
    "missed",
    "[openshell]") {
  OpenShellDenialReader reader;
  const std::string one = PrintedLine("10.000", kDeniedConnect);
  const std::string two =
      PrintedLine("10.000", kDeniedConnect);  // the same request again, the same ms
  const std::string other = "[10.500] [sandbox] [INFO ] [openshell_sandbox] loaded";
  const std::string three = PrintedLine("11.000", std::string(kDeniedConnect));

  OpenShellDenialReader::Read read = reader.Next(one + "\n", 200);
  CHECK(read.denials.size() == 1);
  CHECK_FALSE(read.gap);
  // The gateway's last lines again, with what came since.
  read = reader.Next(one + "\n" + two + "\n" + other + "\n", 200);
  CHECK(read.denials.size() == 1);
  read = reader.Next(one + "\n" + two + "\n" + other + "\n" + three + "\n", 200);
  REQUIRE(read.denials.size() == 1);
  CHECK(read.denials[0].timestamp_ms == 11000);
  read = reader.Next(two + "\n" + other + "\n" + three + "\n", 200);
  CHECK(read.denials.empty());
  // Every line new, as many as asked for: some before them may be missed.
  read = reader.Next(
      PrintedLine("12.000", kDeniedConnect) + "\n" + PrintedLine("12.001", kDeniedConnect) + "\n",
      2);
  CHECK(read.denials.size() == 2);
  CHECK(read.gap);
}

TEST_CASE("runtime ask: what the session's proxy would never ask about is not asked",
          "[openshell]") {
  using Rule = mojoup::policy::NetworkRules::Rule;
  Rule deny;
  deny.deny = true;
  deny.host.host = "blocked.example";
  Rule allow;
  allow.host.host = "allowed.example";
  allow.host.ports = {443};
  const auto rules = mojoup::policy::NetworkRules::FromRules({deny, allow});
  using mojoup::sandbox::NotAskable;
  CHECK(NotAskable(rules, "127.0.0.1", 443) != "");
  CHECK(NotAskable(rules, "169.254.169.254", 80) != "");
  CHECK(NotAskable(rules, "[::1]", 443) != "");
  CHECK(NotAskable(rules, "127.1", 443) != "");      // a number, resolved
  CHECK(NotAskable(rules, "localhost", 443) != "");  // resolves to loopback
  CHECK_THAT(NotAskable(rules, "blocked.example", 8443),
             Catch::Matchers::Contains("a rule denies the host"));
  CHECK_THAT(NotAskable(rules, "allowed.example", 443),
             Catch::Matchers::Contains("the session's rules allow it"));
  // No rule and a public address: asked.
  CHECK(NotAskable(rules, "8.8.8.8", 443) == "");
  // A name this node cannot resolve could lead anywhere once granted; the
  // operator's own pin for it stands for resolving.
  CHECK_THAT(NotAskable(rules, "nowhere.invalid", 443),
             Catch::Matchers::Contains("nowhere.invalid does not resolve on this node"));
  CHECK(NotAskable(rules, "nowhere.invalid", 443, {{"nowhere.invalid:443", "172.17.0.1"}}) == "");
  CHECK(NotAskable(rules, "nowhere.invalid", 80, {{"nowhere.invalid:443", "172.17.0.1"}}) != "");
}

// The JSON the sandbox library writes, byte for byte, against the golden
// files in tests/golden/sandbox/: the image and status lines of
// `--json`, the proxy's ready line, OpenShell's driver configuration and a
// repository's policy history; and what the readers of Docker's answers and
// of policy histories take and skip.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../support/golden.h"
#include "../support/test_support.h"
#include "mojoup/probe/docker_api.h"
#include "mojoup/sandbox/agent_image.h"
#include "mojoup/sandbox/mount.h"
#include "mojoup/sandbox/node.h"
#include "mojoup/sandbox/policy_watch.h"
#include "node/proxy_ready.h"
#include "runtime/openshell/openshell_host.h"

namespace {

using mojoup::sandbox::AgentImage;
using mojoup::sandbox::SessionRecord;

AgentImage Image() {
  return {.reference = "mojoup/agents:0.1.0",
          .id = "sha256:7a121f86eae0",
          .base = "debian:12-slim \"pinned\"\\\n",
          .agents = {{"claude-code", "2.1.332"}, {"codex", "0.171.0"}, {"odd\"tool", "1\t2"}},
          .size_bytes = 4'294'967'296 + 17};
}

SessionRecord Record(const std::string& id, const std::string& tool) {
  SessionRecord record;
  record.id = id;
  record.user = "alice";
  record.repo = "/home/alice/src/\"quoted\" repo";
  record.tool = tool;
  record.runtime = "native";
  record.sandbox = "c0ffee";
  record.state = "running";
  record.started_at = "2026-12-04T12:00:00Z";
  record.started_ns = 1'796'385'600'000'000'000;
  record.pid = 4242;
  record.pid_start = 123456789012;
  record.dir = "/var/lib/mojoup/sessions/" + id;
  record.problem = "not written in the status";
  return record;
}

// A line without its newline (golden files end without one).
std::string Line(const std::string& text) {
  CHECK(text.ends_with("\n"));
  return text.substr(0, text.size() - 1);
}

}  // namespace

TEST_CASE("golden: the agent image as --json prints it", "[golden]") {
  CHECK_GOLDEN("sandbox/agent_image.json", mojoup::sandbox::AgentImageToJson(Image()));
  CHECK_GOLDEN("sandbox/agent_image.empty.json", mojoup::sandbox::AgentImageToJson(AgentImage{}));
}

TEST_CASE("golden: status --json with an image and sessions, with and without a tool", "[golden]") {
  const mojoup::probe::Verdict verdict{true, std::nullopt};
  CHECK_GOLDEN(
      "sandbox/status.json",
      Line(mojoup::StatusJson(verdict, {Record("s1", "claude-code"), Record("s2", "")}, Image())));
  const mojoup::probe::Verdict refused{
      false, "user namespaces are off (\"kernel.unprivileged_userns_clone\" is 0)."};
  CHECK_GOLDEN("sandbox/status.no_image.json",
               Line(mojoup::StatusJson(refused, {}, absl::NotFoundError("no image"))));
}

TEST_CASE("golden: the proxy's ready line, over TCP and over a socket", "[golden]") {
  CHECK_GOLDEN("sandbox/proxy_ready.tcp.json",
               mojoup::ProxyReadyJson(
                   {.listen = "127.0.0.1:40123",
                    .socket = "",
                    .ca_cert = "/tmp/proxy-1/ca.pem",
                    .env = {{"HTTPS_PROXY", "http://127.0.0.1:40123"}, {"ODD\"NAME", "a\\b"}}}));
  CHECK_GOLDEN("sandbox/proxy_ready.socket.json",
               mojoup::ProxyReadyJson({.listen = "",
                                       .socket = "/run/proxy \"1\".sock",
                                       .ca_cert = "/tmp/proxy-1/ca.pem",
                                       .env = {}}));
}

TEST_CASE("golden: OpenShell's driver configuration", "[golden]") {
  CHECK_GOLDEN("sandbox/openshell_driver_config.json",
               mojoup::sandbox::OpenShellDriverConfig(
                   {{"/home/alice/src/repo", "/workspace", false},
                    {"/var/lib/mojoup/s1/home \"x\"", "/home/agent", true}}));
  CHECK_GOLDEN("sandbox/openshell_driver_config.empty.json",
               mojoup::sandbox::OpenShellDriverConfig({}));
}

namespace {

// A Docker daemon that answers GETs whose target (after the API version)
// starts with a prefix, first match first; 404 for any other.
class AnsweringDocker : public mojoup::probe::DockerApi {
 public:
  std::vector<std::pair<std::string, std::string>> answers;  // target prefix, body

  mojoup::probe::DockerReply Send(const mojoup::probe::DockerEndpoint&, std::string_view,
                                  std::string_view target, std::string_view,
                                  std::chrono::milliseconds) override {
    mojoup::probe::DockerReply reply;
    reply.failure = mojoup::probe::DockerReply::Failure::kNone;
    reply.status = 404;
    target.remove_prefix(std::min(target.size(), target.find('/', 1)));
    for (const auto& [prefix, body] : answers) {
      if (target.starts_with(prefix)) {
        reply.status = 200;
        reply.body = body;
        break;
      }
    }
    return reply;
  }
  mojoup::probe::DockerReply Upgrade(const mojoup::probe::DockerEndpoint&, std::string_view,
                                     std::string_view, std::string_view, std::chrono::milliseconds,
                                     mojoup::probe::DockerStream&) override {
    return {};
  }
};

}  // namespace

TEST_CASE("The OpenShell bridge's gateway, read from Docker's answers of any shape",
          "[openshell]") {
  using mojoup::sandbox::FindOpenShellHost;
  const mojoup::probe::DockerEndpoint endpoint{"unix:///fake", "default"};
  AnsweringDocker docker;
  // The labelled bridge named openshell-docker wins; entries of other shapes are skipped.
  docker.answers = {
      {"/networks?", R"([1,{"Name":2},{"Name":"other"},{"Name":"openshell-docker"},{}])"},
      {"/networks/openshell-docker",
       R"({"IPAM":{"Config":[7,{"Gateway":5},{"Gateway":"fd00::1"},{"Gateway":"172.18.0.1"}]}})"},
      {"/networks/other", R"({"IPAM":{"Config":[{"Gateway":"10.0.0.1"}]}})"}};
  auto host = FindOpenShellHost(docker, endpoint);
  CHECK(host.address == "172.18.0.1");
  CHECK(host.problem.empty());

  // The first labelled one otherwise.
  docker.answers[0].second = R"([{"Name":"other"},{"Name":"third"}])";
  CHECK(FindOpenShellHost(docker, endpoint).address == "10.0.0.1");

  // No list (not an array): the default name.
  docker.answers[0].second = R"({"Name":"other"})";
  CHECK(FindOpenShellHost(docker, endpoint).address == "172.18.0.1");

  // Answers with no usable gateway: the sentence saying what to do.
  for (const char* answer :
       {R"([])", R"({"IPAM":null})", R"({"IPAM":{"Config":{}}})",
        R"({"IPAM":{"Config":[{"Gateway":"fd00::1"}]}})", R"(not json)", R"({"IPAM":{}})"}) {
    docker.answers = {{"/networks/openshell-docker", answer}};
    auto none = FindOpenShellHost(docker, endpoint);
    INFO(answer);
    CHECK(none.address.empty());
    CHECK(none.problem ==
          "the OpenShell Docker driver's network is missing (no network labelled "
          "openshell.ai/managed-by=openshell and no `openshell-docker` with an IPv4 gateway), so "
          "sandboxes could not reach the credential proxy; start the OpenShell gateway with its "
          "Docker driver, or set node.sandbox.openshell_host_address");
  }
}

TEST_CASE("A sandbox's host alias, read from Docker's answers of any shape", "[openshell]") {
  using mojoup::sandbox::OpenShellHostOf;
  const mojoup::probe::DockerEndpoint endpoint{"unix:///fake", "default"};
  AnsweringDocker docker;
  docker.answers = {
      {"/containers/json?", R"([3,{"Id":4},{"Id":"aa"},{"Id":"bb"}])"},
      {"/containers/aa/json", R"({"HostConfig":{"ExtraHosts":[1,"x:1.2.3.4"]}})"},
      {"/containers/bb/json",
       R"({"HostConfig":{"ExtraHosts":[null,"host.openshell.internal:172.18.0.1"]}})"}};
  CHECK(OpenShellHostOf(docker, endpoint, "s1") == "172.18.0.1");

  docker.answers[2].second =
      R"({"HostConfig":{"ExtraHosts":["host.openshell.internal:host-gateway"]}})";
  CHECK(OpenShellHostOf(docker, endpoint, "s1") == "host-gateway");

  for (const char* answer :
       {R"({"HostConfig":{"ExtraHosts":"host.openshell.internal:1.1.1.1"}})", R"({"HostConfig":7})",
        R"({"HostConfig":null})", R"({})", R"([])", R"({"HostConfig":{"ExtraHosts":[]}})"}) {
    docker.answers[2].second = answer;
    INFO(answer);
    CHECK_FALSE(OpenShellHostOf(docker, endpoint, "s1"));
  }
  docker.answers = {{"/containers/json?", R"({"Id":"bb"})"}};
  CHECK_FALSE(OpenShellHostOf(docker, endpoint, "s1"));
}

namespace {

using mojoup::sandbox::PolicyWatch;

PolicyWatch::Clock::time_point At(std::int64_t nanoseconds) {
  return PolicyWatch::Clock::time_point(std::chrono::duration_cast<PolicyWatch::Clock::duration>(
      std::chrono::nanoseconds(nanoseconds)));
}

// The one history file under `state`.
std::string HistoryFile(const std::string& state) {
  std::ostringstream text;
  for (const auto& entry : std::filesystem::directory_iterator(state + "/repos")) {
    if (entry.path().extension() == ".json") text << std::ifstream(entry.path()).rdbuf();
  }
  return text.str();
}

}  // namespace

TEST_CASE("golden: a repository's policy history", "[golden]") {
  mojoup::test::TempDir state;
  PolicyWatch watch(state.path());
  const std::string repo = "/home/ada/\"odd\"\\repo";
  REQUIRE(watch.SessionStarted(repo, "s1", At(1'000'000'000)).ok());
  CHECK_GOLDEN("sandbox/repo_sessions.started.json", HistoryFile(state.path()));
  REQUIRE(watch.SessionEnded(repo, "s1", At(2'000'000'000)).ok());
  REQUIRE(watch.SessionStarted(repo, "s2", At(5'000'000'000'000'000'000)).ok());
  REQUIRE(watch.Accept(repo, {{repo + "/.mojoup", 5}, {repo + "/.mojoup/policy.json", 7}}).ok());
  REQUIRE(watch.Accept(repo + "/sub", {{repo + "/sub/.mojoup", 9}}).ok());
  CHECK_GOLDEN("sandbox/repo_sessions.json", HistoryFile(state.path()));
}

TEST_CASE("A policy history is read whole or not at all, its acceptances one by one",
          "[policy_watch]") {
  const std::string repo = "/nonexistent/mojoup-test-repo";
  const std::map<std::string, std::int64_t> changed{{repo + "/.mojoup", 15}};
  auto change_with = [&](const std::string& history) {
    mojoup::test::TempDir state;
    state.Write("repos/h.json", history);
    std::filesystem::permissions(state / "repos", std::filesystem::perms::owner_all);
    return PolicyWatch(state.path()).FindChange(repo, changed);
  };
  const std::string sessions = R"("sessions":[{"id":"s1","start":10,"end":20}])";
  auto found = change_with(R"({"repo":")" + repo + R"(",)" + sessions + "}");
  REQUIRE(found);
  CHECK(found->session == "s1");
  CHECK(found->path == repo + "/.mojoup");
  // Acceptances: an entry of another type is skipped, the others count.
  CHECK_FALSE(change_with(R"({"repo":")" + repo + R"(",)" + sessions + R"(,"accepted":{"x":"y",")" +
                          repo + R"(":15}})"));
  CHECK(change_with(R"({"repo":")" + repo + R"(",)" + sessions + R"(,"accepted":{")" + repo +
                    R"(":"15"}})"));
  CHECK(change_with(R"({"repo":")" + repo + R"(",)" + sessions + R"(,"accepted":[15]})"));
  CHECK(change_with(R"({"schema":"other","extra":1,"repo":")" + repo + R"(",)" + sessions + "}"));
  // Anything else wrong: the history is not one the node wrote.
  for (const std::string& bad :
       {R"({"repo":")" + repo + R"(","sessions":[{"id":"s1","start":10}]})",
        R"({"repo":")" + repo + R"(","sessions":[{"id":"s1","start":10.5,"end":20}]})",
        R"({"repo":")" + repo + R"(","sessions":[{"id":1,"start":10,"end":20}]})",
        R"({"repo":")" + repo + R"(","sessions":[7]})",
        R"({"repo":")" + repo + R"(","sessions":{}})", R"({"repo":")" + repo + R"("})",
        R"({"repo":1,)" + sessions + "}", R"({)" + sessions + "}", std::string("[]"),
        std::string("not json")}) {
    INFO(bad);
    CHECK_FALSE(change_with(bad));
  }
}

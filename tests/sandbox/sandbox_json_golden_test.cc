// The JSON the sandbox library writes, byte for byte, against the golden
// files in tests/golden/sandbox/: the image and status lines of
// `--json`, the proxy's ready line and OpenShell's driver configuration.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "../support/golden.h"
#include "mojoup/sandbox/agent_image.h"
#include "mojoup/sandbox/mount.h"
#include "mojoup/sandbox/node.h"
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

// mojoup-node proxy: the credential proxy on its own, in the foreground.
#include "mojoup/sandbox/credproxy/proxy.h"

#include <arpa/inet.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "commands.h"
#include "mojoup/policy/effective_policy.h"
#include "mojoup/policy/node_config.h"
#include "mojoup/sandbox/session.h"

namespace mojoup::cli {
namespace {

// The proxy hands its address to sandboxed processes as HTTP(S)_PROXY and
// serves whoever connects: only a loopback address keeps it on this node.
std::string LoopbackListenProblem(const std::string& listen) {
  const std::size_t colon = listen.rfind(':');
  std::string host = colon == std::string::npos ? listen : listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  unsigned char bytes[16];
  const bool loopback = (inet_pton(AF_INET, host.c_str(), bytes) == 1 && bytes[0] == 127) ||
                        host == "::1" || host == "localhost";
  if (colon == std::string::npos || !loopback) {
    return "--listen " + listen +
           ": not a loopback address; the proxy serves whoever reaches it, so it listens only on "
           "127.0.0.1 (or another 127.x.y.z) or [::1], with a port (0 for any free one)";
  }
  return {};
}

constexpr std::string_view kUsage =
    "mojoup-node proxy [--repo DIR | --policy FILE] [--tool NAME] [--listen 127.0.0.1:0]\n"
    "                  [--socket PATH] [--credential NAME[=HOST,HOST...]]...\n"
    "                  [--resolve HOST:PORT:ADDR]... [--upstream-ca FILE] [--audit FILE]";

std::string ReadyLine(const sandbox::credproxy::Proxy& proxy) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("schema");
  w.String("mojoup.proxy/v1");
  w.Key("listen");
  if (proxy.tcp_address().empty())
    w.Null();
  else
    w.String(proxy.tcp_address());
  w.Key("socket");
  if (proxy.socket_path().empty())
    w.Null();
  else
    w.String(proxy.socket_path());
  w.Key("ca_cert");
  w.String(proxy.ca_cert_path());
  w.Key("env");
  w.StartObject();
  for (const auto& [name, value] : proxy.Environment()) {
    w.Key(name.c_str());
    w.String(value);
  }
  w.EndObject();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace

int Proxy(std::vector<std::string> args) {
  cxxopts::Options options("mojoup-node proxy",
                           "Run one session's egress proxy and credential swap until SIGINT or "
                           "SIGTERM.");
  options.add_options()("repo", "take the rules from this repository's policy (and the hub's)",
                        cxxopts::value<std::string>())(
      "policy", "take the rules from this policy file alone", cxxopts::value<std::string>())(
      "tool", "the agent tool whose own service hosts are allowed", cxxopts::value<std::string>())(
      "listen", "loopback TCP address to listen on", cxxopts::value<std::string>())(
      "socket", "unix socket to listen on", cxxopts::value<std::string>())(
      "credential", "NAME[=HOST,...]: keep $NAME, hand out a stand-in, bind it to the hosts",
      cxxopts::value<std::vector<std::string>>())(
      "resolve", "HOST:PORT:ADDR: connect to ADDR for HOST:PORT (may be loopback)",
      cxxopts::value<std::vector<std::string>>())(
      "upstream-ca", "PEM file of extra CAs to trust upstream", cxxopts::value<std::string>())(
      "audit", "append one JSON line per decision to FILE", cxxopts::value<std::string>())(
      "config", "node config file", cxxopts::value<std::string>());
  cxxopts::ParseResult parsed;
  if (auto stop = Parse(options, std::string(kUsage), std::move(args), parsed)) return *stop;
  if (parsed.count("repo") && parsed.count("policy")) {
    return Fail("proxy", "give --repo or --policy, not both");
  }
  int failed = kExitUsage;
  auto config = LoadConfig("proxy", parsed, failed);
  if (!config) return failed;

  auto tool = ToolFlag("proxy", parsed);
  if (!tool) return kExitUsage;
  absl::StatusOr<policy::EffectivePolicy> effective;
  if (parsed.count("policy")) {
    auto file = policy::LoadPolicyFile(parsed["policy"].as<std::string>(), policy::Level::kRepo);
    if (!file.ok()) return Fail("proxy", file.status());
    effective = policy::Layer({*file});
  } else {
    std::optional<std::string> repo = ".";
    if (parsed.count("repo")) {
      repo = DirectoryFlag("proxy", "--repo", parsed["repo"].as<std::string>());
      if (!repo) return kExitUsage;
    }
    effective = policy::LoadEffectivePolicy(policy::PolicyPathsFor(*repo, *config));
    if (!effective.ok()) return Fail("proxy", effective.status());
  }

  sandbox::credproxy::ProxyOptions proxy_options;
  proxy_options.session = "proxy-" + std::to_string(getpid());
  proxy_options.rules = policy::NetworkRules::Build(*effective, *tool);
  proxy_options.credential_headers = sandbox::credproxy::CredentialHeaders(*tool);
  if (parsed.count("listen")) proxy_options.listen = parsed["listen"].as<std::string>();
  if (parsed.count("socket")) {
    proxy_options.socket = parsed["socket"].as<std::string>();
    if (std::string problem = NewFileProblem("--socket", proxy_options.socket); !problem.empty()) {
      return Fail("proxy", problem);
    }
  }
  if (proxy_options.listen.empty() && proxy_options.socket.empty()) {
    proxy_options.listen = "127.0.0.1:0";
  }
  if (!proxy_options.listen.empty()) {
    if (std::string problem = LoopbackListenProblem(proxy_options.listen); !problem.empty()) {
      return Fail("proxy", problem);
    }
  }
  if (parsed.count("upstream-ca")) {
    proxy_options.upstream_ca = parsed["upstream-ca"].as<std::string>();
    if (std::string problem = UpstreamCaProblem(proxy_options.upstream_ca); !problem.empty()) {
      return Fail("proxy", problem);
    }
  }
  if (parsed.count("audit")) {
    proxy_options.audit_file = parsed["audit"].as<std::string>();
    if (std::string problem = NewFileProblem("--audit", proxy_options.audit_file);
        !problem.empty()) {
      return Fail("proxy", problem);
    }
  }

  const sandbox::Getenv getenv = sandbox::SystemGetenv();
  if (parsed.count("credential")) {
    for (const std::string& spec : parsed["credential"].as<std::vector<std::string>>()) {
      if (absl::Status added = sandbox::AddCredential(spec, *config, getenv, proxy_options.vault);
          !added.ok()) {
        return Fail("proxy", added);
      }
    }
  }
  if (parsed.count("resolve")) {
    for (const std::string& spec : parsed["resolve"].as<std::vector<std::string>>()) {
      if (absl::Status pinned = sandbox::AddPin(spec, proxy_options.pins); !pinned.ok()) {
        return Fail("proxy", pinned);
      }
    }
  }

  // A proxy holds two sockets and two pipes per tunnel: take the hard limit.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  const std::string ca_dir = sandbox::DefaultStateDir() + "/" + proxy_options.session;
  proxy_options.ca_dir = ca_dir;
  // Signals wait for sigwait below; the proxy's thread inherits the mask.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  auto proxy = sandbox::credproxy::Proxy::Start(std::move(proxy_options));
  if (!proxy.ok()) {
    std::error_code ec;
    std::filesystem::remove_all(ca_dir, ec);
    return Fail("proxy", proxy.status());
  }
  std::cout << ReadyLine(**proxy) << std::endl;
  int signal = 0;
  sigwait(&stop, &signal);
  proxy->reset();
  std::error_code ec;
  std::filesystem::remove_all(ca_dir, ec);
  return kExitOk;
}

}  // namespace mojoup::cli

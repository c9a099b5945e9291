// mojoup-node proxy: the credential proxy on its own, in the foreground.
#include <signal.h>

#include <iostream>

#include "commands.h"

namespace mojoup::cli {
namespace {

void IgnorePipe(int) {}

}  // namespace

int Proxy(std::vector<std::string> args) {
  constexpr std::string_view kUsage =
      "mojoup-node proxy [--repo DIR | --policy FILE] [--tool NAME] [--listen 127.0.0.1:0]\n"
      "                  [--socket PATH] [--credential NAME[=HOST,HOST...]]...\n"
      "                  [--resolve HOST:PORT:ADDR]... [--upstream-ca FILE] [--audit FILE]";
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
      "audit", "append one JSON line per decision to FILE", cxxopts::value<std::string>());
  cxxopts::ParseResult parsed;
  if (auto stop = Parse(options, std::string(kUsage), std::move(args), parsed)) return *stop;
  if (parsed.count("repo") && parsed.count("policy")) {
    return PrintError("proxy", "give --repo or --policy, not both");
  }
  int failed = kExitUsage;
  auto node = OpenNode("proxy", parsed, failed);
  if (!node) return failed;

  ProxyRequest request;
  if (parsed.count("repo")) request.workdir = parsed["repo"].as<std::string>();
  request.policy_file = FlagValue(parsed, "policy");
  request.tool = FlagValue(parsed, "tool");
  request.listen = FlagValue(parsed, "listen");
  request.socket = FlagValue(parsed, "socket");
  request.credentials = FlagValues(parsed, "credential");
  request.resolve = FlagValues(parsed, "resolve");
  request.upstream_ca = FlagValue(parsed, "upstream-ca");
  request.audit_file = FlagValue(parsed, "audit");
  // A client that goes away is an EPIPE error on its connection, never the
  // end of the proxy (the library's threads block SIGPIPE already; this is
  // for the program's own). A handler that does nothing rather than SIG_IGN:
  // exec resets a handler, where SIG_IGN would be inherited by whatever this
  // process starts. Only here, not in main: `run` streams a command's output
  // and must still end when the reader of its own output goes away.
  struct sigaction pipe_action {};
  pipe_action.sa_handler = IgnorePipe;
  pipe_action.sa_flags = SA_RESTART;
  sigemptyset(&pipe_action.sa_mask);
  sigaction(SIGPIPE, &pipe_action, nullptr);
  // Signals wait for sigwait below; the proxy's thread inherits the mask.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  auto proxy = node->StartProxy(std::move(request));
  if (!proxy.ok()) return PrintError("proxy", proxy.status());
  std::cout << (*proxy)->ReadyJson() << std::endl;
  int signal = 0;
  sigwait(&stop, &signal);
  return kExitOk;
}

}  // namespace mojoup::cli

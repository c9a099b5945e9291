// Node::StartProxy: one session's credential proxy on its own.
#include <arpa/inet.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>

#include "fmt/format.h"
#include "mojoup/internal/file_checks.h"
#include "mojoup/internal/json_codec.h"
#include "mojoup/internal/safe_file.h"
#include "mojoup/policy/effective_policy.h"
#include "mojoup/policy/network_rules.h"
#include "mojoup/policy/policy.h"
#include "mojoup/policy/tool_profiles.h"
#include "node/node_state.h"
#include "node/proxy_ready.h"
#include "supervisor/command_line.h"

namespace mojoup {
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

class StandaloneProxy : public RunningProxy {
 public:
  StandaloneProxy(std::unique_ptr<credproxy::Proxy> proxy, std::string ca_dir)
      : proxy_(std::move(proxy)), ca_dir_(std::move(ca_dir)) {}
  ~StandaloneProxy() override {
    proxy_.reset();
    std::error_code ec;
    std::filesystem::remove_all(ca_dir_, ec);
  }

  const credproxy::Proxy& proxy() const override { return *proxy_; }

  std::string ReadyJson() const override {
    return ProxyReadyJson({.listen = proxy_->tcp_address(),
                           .socket = proxy_->socket_path(),
                           .ca_cert = proxy_->ca_cert_path(),
                           .env = proxy_->Environment()});
  }

 private:
  std::unique_ptr<credproxy::Proxy> proxy_;
  std::string ca_dir_;
};

absl::Status Invalid(const std::string& problem) {
  return problem.empty() ? absl::OkStatus() : absl::InvalidArgumentError(problem);
}

}  // namespace

std::string ProxyReadyJson(const ProxyReady& ready) {
  namespace json = internal::json;
  static constexpr auto kReady = json::Message<ProxyReady>(
      json::Const("schema", "mojoup.proxy/v1"),
      json::Field("listen", &ProxyReady::listen).EmptyAsNull(),
      json::Field("socket", &ProxyReady::socket).EmptyAsNull(),
      json::Field("ca_cert", &ProxyReady::ca_cert), json::Field("env", &ProxyReady::env));
  return json::ToJson(ready, kReady);
}

absl::StatusOr<std::unique_ptr<RunningProxy>> Node::StartProxy(ProxyRequest request) const {
  const State& node = *state_;
  if (absl::Status tool = CheckTool(request.tool); !tool.ok()) return tool;
  absl::StatusOr<policy::EffectivePolicy> effective;
  if (!request.policy_file.empty()) {
    auto file = policy::LoadPolicyFile(request.policy_file, policy::Level::kRepo);
    if (!file.ok()) return absl::InvalidArgumentError(file.status().message());
    effective = policy::Layer({*file});
  } else {
    auto repo = RepositoryDirectory(request.workdir);
    if (!repo.ok()) return repo.status();
    effective = node.PolicyFor(*repo);
    if (!effective.ok()) return effective.status();
  }

  credproxy::ProxyOptions options;
  options.session = "proxy-" + std::to_string(getpid());
  options.rules = policy::NetworkRules::Build(*effective, request.tool);
  options.credential_headers = credproxy::CredentialHeaders(request.tool);
  options.listen = request.listen;
  options.socket = request.socket;
  if (!options.socket.empty()) {
    if (absl::Status bad = Invalid(internal::NewFileProblem("--socket", options.socket));
        !bad.ok()) {
      return bad;
    }
  }
  if (options.listen.empty() && options.socket.empty()) options.listen = "127.0.0.1:0";
  // A socket alone is reached as the native runtime's supervisor bridges it.
  if (options.listen.empty()) options.sandbox_address = std::string(supervisor::kProxyAddress);
  if (!options.listen.empty()) {
    if (absl::Status bad = Invalid(LoopbackListenProblem(options.listen)); !bad.ok()) return bad;
  }
  if (absl::Status inputs =
          AddProxyInputs(node.config, request.credentials, request.resolve, request.upstream_ca,
                         request.audit_file, node.options.getenv, options);
      !inputs.ok()) {
    return inputs;
  }

  // A proxy holds two sockets and two pipes per tunnel: take the hard limit.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  // The CA's directory is the user's alone, in a state directory that is too.
  if (absl::Status made = internal::MakePrivateDir(node.state_dir, "the node's state directory");
      !made.ok()) {
    return made;
  }
  const std::string ca_dir = node.state_dir + "/" + options.session;
  if (absl::Status made = internal::MakePrivateDir(ca_dir, "the proxy's directory"); !made.ok()) {
    return made;
  }
  options.ca_dir = ca_dir;
  auto proxy = credproxy::Proxy::Start(std::move(options));
  if (!proxy.ok()) {
    std::error_code ec;
    std::filesystem::remove_all(ca_dir, ec);
    return absl::InvalidArgumentError(proxy.status().message());
  }
  return std::make_unique<StandaloneProxy>(*std::move(proxy), ca_dir);
}

}  // namespace mojoup

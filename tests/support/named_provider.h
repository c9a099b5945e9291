// NamedProvider: a FakeProvider under a provider's real name (api.anthropic.com,
// platform.claude.com, ...) for the sessions of a UserNode: it listens on port
// 443 of a loopback address of its own, and the session's proxy reaches it
// there (`--resolve NAME:443:ADDRESS`) and trusts its CA (`--upstream-ca`),
// so a request takes the path it takes on a user's node, through the proxy's
// interception and swap.
//
//   NamedProvider anthropic(node, "api.anthropic.com", "127.0.13.1", "the answer");
//   if (!anthropic.fake->error().empty()) MOJOUP_SKIP(anthropic.fake->error());
//   node.Sh(script, anthropic.Flags());
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fake_provider.h"
#include "mojoup/credproxy/session_ca.h"
#include "real_user.h"

namespace mojoup::test {

struct NamedProvider {
  NamedProvider(const UserNode& node, const std::string& name, const std::string& at,
                const std::string& answer)
      : host(name), address(at) {
    auto made = credproxy::SessionCa::Create("fake " + host);
    if (!made.ok()) throw std::runtime_error(std::string(made.status().message()));
    ca = std::move(*made);
    auto tls = ca->ServerContext(host);
    if (!tls.ok()) throw std::runtime_error(std::string(tls.status().message()));
    fake = std::make_unique<FakeProvider>(*tls, address, answer);
    ca_file = node.root + "/" + host + "-ca.pem";
    node.user.Write(ca_file, ca->certificate_pem());
  }

  // Another name, under the CA of `first` (one --upstream-ca for both).
  NamedProvider(const NamedProvider& first, const std::string& name, const std::string& at,
                const std::string& answer)
      : host(name), address(at), ca_file(first.ca_file) {
    auto tls = first.ca->ServerContext(host);
    if (!tls.ok()) throw std::runtime_error(std::string(tls.status().message()));
    fake = std::make_unique<FakeProvider>(*tls, address, answer);
  }

  // run's flags that send the host to the fake.
  std::vector<std::string> Flags() const {
    return {"--resolve", host + ":443:" + address, "--upstream-ca", ca_file};
  }

  std::string host;
  std::string address;
  std::unique_ptr<credproxy::SessionCa> ca;  // null for a second name
  std::unique_ptr<FakeProvider> fake;
  std::string ca_file;
};

}  // namespace mojoup::test

// What the proxy tests hand the credential proxy: a key shaped like a real
// Anthropic API key (no test sends it anywhere real), and the network rules
// of a repository policy's JSON.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "mojoup/policy/effective_policy.h"
#include "mojoup/policy/network_rules.h"
#include "mojoup/policy/policy.h"

namespace mojoup::test {

inline const std::string kReal =
    "sk-ant-api03-Q9vX2mKpL7rT4wYz8bN3cF6hJ1dS5gA0eR-tU_iO2pZ7xC4vB9nM";

// The network rules of `json`, read as a repository's policy file.
inline policy::NetworkRules Rules(const std::string& json) {
  auto file = policy::ParsePolicy(json, "p.json", policy::Level::kRepo);
  REQUIRE(file.ok());
  return policy::NetworkRules::Build(policy::Layer({*file}), "");
}

}  // namespace mojoup::test

// bench_matcher: the network rule matcher with 10,000 rules and a million
// lookups, timed in batches of 1,000; prints the median time per decision.
// Goal: under 1 us.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "mojoup/policy/network_rules.h"

using mojoup::policy::NetworkRules;

int main() {
  constexpr int kRules = 10000;
  constexpr int kBatches = 1000;
  constexpr int kBatch = 1000;
  std::mt19937 random(42);

  std::vector<NetworkRules::Rule> rules;
  for (int i = 0; i < kRules; ++i) {
    NetworkRules::Rule rule;
    rule.deny = i % 7 == 0;
    rule.host.host = (i % 3 == 0 ? "*.svc" : "host") + std::to_string(i) + ".corp.example.com";
    rule.host.ports = {443, static_cast<std::uint16_t>(8000 + i % 100)};
    rules.push_back(std::move(rule));
  }
  NetworkRules matcher = NetworkRules::FromRules(std::move(rules));

  // A mix a proxy sees: exact hits, deep wildcard hits, and misses.
  std::vector<std::string> hosts;
  for (int i = 0; i < 4096; ++i) {
    int n = static_cast<int>(random() % kRules);
    switch (i % 4) {
      case 0:
        hosts.push_back("host" + std::to_string(n) + ".corp.example.com");
        break;
      case 1:
        hosts.push_back("a.b.svc" + std::to_string(n - n % 3) + ".corp.example.com");
        break;
      case 2:
        hosts.push_back("Registry.NPMJS.org");
        break;
      default:
        hosts.push_back("x" + std::to_string(n) + ".unknown.example.net");
    }
  }

  std::vector<double> per_decision_ns;
  std::size_t allowed = 0;
  std::size_t next = 0;
  for (int b = 0; b < kBatches; ++b) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) {
      const std::string& host = hosts[next++ & 4095];
      allowed += matcher.RuleOn(host, 443).allowed ? 1 : 0;
    }
    auto took = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start);
    per_decision_ns.push_back(took.count() / kBatch);
  }
  std::sort(per_decision_ns.begin(), per_decision_ns.end());
  const double median = per_decision_ns[per_decision_ns.size() / 2];
  std::printf("rules:               %d\n", kRules);
  std::printf("lookups:             %d (%zu allowed)\n", kBatches * kBatch, allowed);
  std::printf("median per decision: %.1f ns\n", median);
  std::printf("p99 per decision:    %.1f ns\n", per_decision_ns[per_decision_ns.size() * 99 / 100]);
  std::printf("ratio to the 1 us goal: %.3f\n", median / 1000.0);
  return 0;
}

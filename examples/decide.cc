// decide REPO USER: what this node would decide for USER running an agent in
// the repository holding REPO, and why, in one line:
//
//   $ decide ~/src/app alice
//   sandboxed: the repository's policy requires a sandbox and this machine can run one.
//
// The same steps the node takes before a run: probe the host, layer the
// repository's policy under the hub's, and decide. Exit 0 with a decision, 2
// when the config or a policy is broken.
#include <iostream>

#include "mojoup/mojoup.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: decide REPO USER\n";
    return 2;
  }
  const std::string dir = argv[1];
  const std::string user = argv[2];

  absl::StatusOr<mojoup::Node> node = mojoup::Node::Open({});
  if (!node.ok()) {
    std::cerr << "decide: " << node.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<mojoup::policy::EffectivePolicy> policy =
      mojoup::policy::LoadEffectivePolicy(mojoup::policy::PolicyPathsFor(dir, node->config()));
  if (!policy.ok()) {
    std::cerr << "decide: " << policy.status().message() << "\n";
    return 2;
  }
  const mojoup::probe::Report report = node->Doctor();
  const mojoup::policy::SandboxDecision decision =
      mojoup::policy::Decide(mojoup::CapabilityOf(report.verdict), node->config(), *policy, user);
  std::cout << mojoup::policy::ResultName(decision.result) << ": " << decision.reason << "\n";
  return 0;
}

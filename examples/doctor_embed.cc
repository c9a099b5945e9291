// A host program that links libmojoup_sandbox and asks whether this machine
// can run agents in a sandbox, as `mojoup-node doctor` does: the first line
// is the verdict, then one line per failing check. Exit 0 when it can, 1 when
// it cannot, 2 when the node config is broken.
#include <iostream>

#include "mojoup/sandbox/node.h"

int main() {
  // The node's own config (MOJOUP_NODE_CONFIG, else the default path) picks
  // the runtime, and so which checks are required.
  absl::StatusOr<mojoup::Node> node = mojoup::Node::Open({});
  if (!node.ok()) {
    std::cerr << "doctor_embed: " << node.status().message() << "\n";
    return 2;
  }
  mojoup::probe::Report report = node->Doctor();
  std::cout << report.verdict.Line() << "\n";
  for (const mojoup::probe::Check& check : report.checks) {
    if (check.status == mojoup::probe::Status::kFail) {
      std::cout << "  " << check.id << ": " << check.summary << "\n";
    }
  }
  return report.verdict.can_sandbox ? 0 : 1;
}

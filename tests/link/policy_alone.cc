// Links against mojoup::policy and nothing else: the layer is a complete link
// line on its own (it reaches RapidJSON's parser and libidn2 through its own
// archive). `policy_alone run REPO` loads the repository's effective policy.
#include <iostream>
#include <string_view>

#include "mojoup/policy/effective_policy.h"

int main(int argc, char** argv) {
  if (argc > 2 && std::string_view(argv[1]) == "run") {
    mojoup::policy::PolicyPaths paths;
    paths.repo_root = mojoup::policy::FindRepoRoot(argv[2]);
    paths.repo = paths.repo_root + "/.mojoup/policy.json";
    auto effective = mojoup::policy::LoadEffectivePolicy(paths);
    std::cout << (effective.ok() ? "ok" : std::string(effective.status().message())) << "\n";
  }
  return 0;
}

// Links against mojoup::probe and nothing else: the layer is a complete link
// line on its own. The call is behind an argument so that the test only
// proves the link; `probe_alone run` really probes.
#include <iostream>
#include <string_view>

#include "mojoup/probe/probe.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "run") {
    mojoup::probe::ProbeOptions options;
    options.require_openshell = false;
    std::cout << mojoup::probe::ProbeSystem(options).verdict.Line() << "\n";
  }
  return 0;
}

// A host program that links libmojoup_sandbox and asks whether this machine
// can run agents in a sandbox. Build it against an installed copy with
//   find_package(mojoup_sandbox CONFIG REQUIRED)
//   target_link_libraries(app PRIVATE mojoup::mojoup_sandbox)
// or: c++ -std=c++20 doctor_embed.cc $(pkg-config --cflags --libs mojoup_sandbox)
#include <iostream>

#include "mojoup/probe/probe.h"

int main() {
  mojoup::probe::ProbeOptions options;
  options.require_openshell = false;  // this host uses the native Docker runtime
  mojoup::probe::Report report = mojoup::probe::ProbeSystem(options);
  std::cout << report.verdict.Line() << "\n";
  for (const mojoup::probe::Check& check : report.checks) {
    if (check.status == mojoup::probe::Status::kFail) {
      std::cout << "  " << check.id << ": " << check.summary << "\n";
    }
  }
  return report.verdict.can_sandbox ? 0 : 1;
}

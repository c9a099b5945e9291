// Where the test doubles that are programs (fake-openshell, fake-dockerd) are,
// for a harness that runs them from a build tree or from an installed package.
//
//   std::string fake = mojoup::sandbox::testing::FindTestingProgram("fake-dockerd");
//   if (fake.empty()) SKIP("fake-dockerd is not installed");
#pragma once

#include <string>
#include <string_view>

namespace mojoup::sandbox::testing {

// The first of: $MOJOUP_TESTING_PROGRAMS/<name>; <name> beside the running
// program; <dir of the running program>/../libexec/mojoup/<name> (an installed
// tree, wherever it was moved); <the libexec dir this library was built to
// install into>/mojoup/<name>. Empty when none is executable.
std::string FindTestingProgram(std::string_view name);

}  // namespace mojoup::sandbox::testing

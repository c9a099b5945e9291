// Where the test doubles that are programs (fake-openshell, fake-dockerd) are,
// for a harness that runs them from a build tree or from an installed package.
//
//   std::string fake = mojoup::sandbox::testing::FindTestingProgram("fake-dockerd");
//   if (fake.empty()) SKIP("fake-dockerd is not installed");
#pragma once

#include <string>
#include <string_view>

namespace mojoup::sandbox::testing {

// The package's own programs directory, as the build tells the compiler:
// mojoup::mojoup_sandbox_testing's CMake target defines it (its libexec/mojoup
// wherever the package is installed, or the build tree's bin/). With
// pkg-config, pass its `libexecdir` variable in $MOJOUP_TESTING_PROGRAMS.
#ifndef MOJOUP_TESTING_PROGRAMS_DIR
#define MOJOUP_TESTING_PROGRAMS_DIR ""
#endif

// The first of: $MOJOUP_TESTING_PROGRAMS/<name>; <programs_dir>/<name>;
// <name> beside the running program; <dir of the running
// program>/../libexec/mojoup/<name> (a program installed beside the package);
// <the libexec dir the package was configured to install into>/mojoup/<name>.
// Empty when none is executable.
std::string FindTestingProgram(std::string_view name,
                               std::string_view programs_dir = MOJOUP_TESTING_PROGRAMS_DIR);

}  // namespace mojoup::sandbox::testing

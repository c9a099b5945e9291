// The installed test doubles find their programs: beside the running
// program in a build tree, or where MOJOUP_TESTING_PROGRAMS says.
#include <stdlib.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "../support/test_support.h"
#include "mojoup/sandbox/testing/programs.h"

using mojoup::sandbox::testing::FindTestingProgram;

TEST_CASE("FindTestingProgram finds the doubles beside the running program", "[testing]") {
  ::unsetenv("MOJOUP_TESTING_PROGRAMS");
  CHECK(FindTestingProgram("fake-openshell") == mojoup::test::BinDir() + "/fake-openshell");
  CHECK(FindTestingProgram("fake-dockerd") == mojoup::test::BinDir() + "/fake-dockerd");
  CHECK(FindTestingProgram("no-such-double").empty());
}

TEST_CASE("MOJOUP_TESTING_PROGRAMS comes first", "[testing]") {
  mojoup::test::TempDir dir;
  dir.Write("fake-dockerd", "#!/bin/sh\n");
  REQUIRE(::chmod((dir / "fake-dockerd").c_str(), 0755) == 0);
  ::setenv("MOJOUP_TESTING_PROGRAMS", dir.path().c_str(), 1);
  CHECK(FindTestingProgram("fake-dockerd") == dir / "fake-dockerd");
  // Not there: the next place.
  CHECK(FindTestingProgram("fake-openshell") == mojoup::test::BinDir() + "/fake-openshell");
  ::unsetenv("MOJOUP_TESTING_PROGRAMS");
}

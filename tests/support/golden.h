// Golden files: the exact bytes a wire format had when its writer was
// written by hand, kept under tests/golden/ so that a change of the writer
// that changes one byte fails a test.
//
//   CHECK_GOLDEN("mojoup.policy.v1.json", ExplainJson(policy, decision));
//
// MOJOUP_UPDATE_GOLDEN=1 in the environment writes the file instead (and
// still fails the test, so an update is never silent): use it once, with
// the writer as it was, then commit the file.
#pragma once

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace mojoup::testing {

inline std::string GoldenPath(const std::string& name) {
  return std::string(MOJOUP_SOURCE_DIR) + "/tests/golden/" + name;
}

inline std::string ReadGolden(const std::string& name) {
  std::ifstream file(GoldenPath(name), std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace mojoup::testing

#define CHECK_GOLDEN(name, bytes)                                                         \
  do {                                                                                    \
    const std::string golden_bytes = (bytes);                                             \
    if (std::getenv("MOJOUP_UPDATE_GOLDEN") != nullptr) {                                 \
      std::ofstream(mojoup::testing::GoldenPath(name), std::ios::binary) << golden_bytes; \
      FAIL_CHECK("wrote " << mojoup::testing::GoldenPath(name));                          \
    }                                                                                     \
    CHECK(golden_bytes == mojoup::testing::ReadGolden(name));                             \
  } while (false)

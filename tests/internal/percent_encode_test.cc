#include "mojoup/internal/percent_encode.h"

#include <catch2/catch.hpp>

using mojoup::internal::PercentEncode;

TEST_CASE("PercentEncode leaves the unreserved characters and encodes every other byte",
          "[percent_encode]") {
  REQUIRE(PercentEncode("mojoup-s1_a.b~c") == "mojoup-s1_a.b~c");
  REQUIRE(PercentEncode("{\"label\":[\"a=b\"]}") == "%7B%22label%22%3A%5B%22a%3Db%22%5D%7D");
  REQUIRE(PercentEncode("a b/c") == "a%20b%2Fc");
  REQUIRE(PercentEncode("\xc3\xa9") == "%C3%A9");
  REQUIRE(PercentEncode("").empty());
}

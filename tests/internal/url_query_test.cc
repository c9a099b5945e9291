#include "mojoup/internal/url_query.h"

#include <catch2/catch.hpp>

using mojoup::internal::ParseNumberQuery;

TEST_CASE("ParseNumberQuery gives the numbers present and nothing for the absent", "[url_query]") {
  auto numbers = ParseNumberQuery("after=3&wait=20000", {"after", "wait"});
  REQUIRE(numbers.ok());
  CHECK(numbers->at("after") == 3);
  CHECK(numbers->at("wait") == 20000);
  auto some = ParseNumberQuery("&wait=0&", {"after", "wait"});
  REQUIRE(some.ok());
  CHECK(some->count("after") == 0);
  CHECK(some->at("wait") == 0);
  // A name not asked for is not ours to judge (a console's cache-buster).
  auto other = ParseNumberQuery("after=1&_=1733300000&colour=red", {"after", "wait"});
  REQUIRE(other.ok());
  CHECK(other->size() == 1);
  CHECK(other->at("after") == 1);
  auto none = ParseNumberQuery("", {"since"});
  REQUIRE(none.ok());
  CHECK(none->empty());
  CHECK(ParseNumberQuery("since=999999999999999999", {"since"})->at("since") ==
        999999999999999999ULL);
}

TEST_CASE("ParseNumberQuery refuses a value that is not one whole number, naming it",
          "[url_query]") {
  auto message = [](std::string_view query) {
    auto numbers = ParseNumberQuery(query, {"after", "wait"});
    REQUIRE_FALSE(numbers.ok());
    CHECK(numbers.status().code() == absl::StatusCode::kInvalidArgument);
    return std::string(numbers.status().message());
  };
  CHECK(message("after=-1") == "query parameter after must be a whole number");
  CHECK(message("after=") == "query parameter after must be a whole number");
  CHECK(message("wait") == "query parameter wait must be a whole number");
  CHECK(message("after=0x10") == "query parameter after must be a whole number");
  CHECK(message("after=1000000000000000000") == "query parameter after must be a whole number");
  CHECK(message("after=1&after=2") == "query parameter after is given twice");
}

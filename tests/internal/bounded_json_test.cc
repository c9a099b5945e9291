#include "mojoup/internal/bounded_json.h"

#include <catch2/catch.hpp>
#include <string>

using Catch::Matchers::Contains;
using mojoup::internal::JsonBounds;
using mojoup::internal::ParseBoundedJson;

namespace {

std::string Nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace

TEST_CASE("ParseBoundedJson reads an object whole", "[bounded_json]") {
  rapidjson::Document doc;
  REQUIRE(
      ParseBoundedJson(R"( {"a": [1, "b\u00e9", true, null], "c": {"d": -2.5}} )", doc, "the reply")
          .ok());
  REQUIRE(doc.IsObject());
  REQUIRE(doc["a"].Size() == 4);
  REQUIRE(std::string(doc["a"][1].GetString()) == "b\xc3\xa9");
  REQUIRE(doc["c"]["d"].GetDouble() == -2.5);
}

TEST_CASE("ParseBoundedJson refuses a million opening brackets without recursing",
          "[bounded_json]") {
  rapidjson::Document doc;
  std::size_t offset = 0;
  const absl::Status status = ParseBoundedJson(std::string(1000000, '['), doc, "the request body",
                                               {.max_bytes = 2 << 20, .max_depth = 64}, &offset);
  REQUIRE(status.code() == absl::StatusCode::kInvalidArgument);
  REQUIRE(status.message() == "the request body nests deeper than 64 levels");
  REQUIRE(offset == 64);
  REQUIRE(doc.IsNull());
}

TEST_CASE("ParseBoundedJson takes exactly the depth cap and refuses one more", "[bounded_json]") {
  rapidjson::Document doc;
  REQUIRE(ParseBoundedJson(Nested(64), doc, "x").ok());
  REQUIRE(doc.IsArray());
  const absl::Status deeper = ParseBoundedJson(Nested(65), doc, "x");
  REQUIRE(deeper.code() == absl::StatusCode::kInvalidArgument);
  REQUIRE(deeper.message() == "x nests deeper than 64 levels");
  const std::string objects = R"({"a":{"a":{"a":1}}})";
  REQUIRE(ParseBoundedJson(objects, doc, "x", {.max_depth = 3}).ok());
  REQUIRE_THAT(std::string(ParseBoundedJson(objects, doc, "x", {.max_depth = 2}).message()),
               Contains("nests deeper than 2 levels"));
}

TEST_CASE("ParseBoundedJson checks the size before it reads a byte", "[bounded_json]") {
  rapidjson::Document doc;
  // Not JSON at all: only the size is looked at.
  const absl::Status status =
      ParseBoundedJson(std::string(1025, '['), doc, "the body", {.max_bytes = 1024});
  REQUIRE(status.code() == absl::StatusCode::kResourceExhausted);
  REQUIRE(status.message() == "the body is 1025 bytes, over the 1024 allowed");
  REQUIRE(ParseBoundedJson("[" + std::string(1022, ' ') + "]", doc, "the body", {.max_bytes = 1024})
              .ok());
}

TEST_CASE("ParseBoundedJson refuses bad JSON with the offset and RapidJSON's reason",
          "[bounded_json]") {
  rapidjson::Document doc;
  std::size_t offset = 0;
  absl::Status status = ParseBoundedJson("{\"a\": \"\xff\"}", doc, "the file", {}, &offset);
  REQUIRE(status.code() == absl::StatusCode::kInvalidArgument);
  REQUIRE_THAT(std::string(status.message()),
               Contains("the file is not valid JSON: Invalid encoding"));
  // Paths are bytes: JSON our writers made of them is read as it is.
  REQUIRE(ParseBoundedJson("{\"a\": \"\xff\"}", doc, "the file", {.utf8 = false}).ok());
  REQUIRE(std::string(doc["a"].GetString()) == "\xff");
  status = ParseBoundedJson("{} {}", doc, "the file", {}, &offset);
  REQUIRE(status.message() ==
          "the file is not valid JSON: The document root must not be followed by other values. "
          "(byte offset 3)");
  REQUIRE(offset == 3);
  REQUIRE_FALSE(ParseBoundedJson("", doc, "the file").ok());
  REQUIRE_FALSE(ParseBoundedJson("{\"a\": ", doc, "the file").ok());
}

TEST_CASE("ParseBoundedJson reads the length given, not up to a NUL", "[bounded_json]") {
  rapidjson::Document doc;
  const std::string text("{\"a\": 1}\0{\"b\": 2}", 17);
  std::size_t offset = 0;
  const absl::Status status = ParseBoundedJson(text, doc, "the packet", {}, &offset);
  REQUIRE(status.code() == absl::StatusCode::kInvalidArgument);
  REQUIRE(offset == 8);
  // A view into a longer buffer ends where the view does.
  const std::string longer = "[1, 2]garbage";
  REQUIRE(ParseBoundedJson(std::string_view(longer).substr(0, 6), doc, "x").ok());
  REQUIRE(doc.Size() == 2);
}

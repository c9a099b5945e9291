#include "mojoup/internal/docker_filters.h"

#include <catch2/catch.hpp>

using mojoup::internal::DockerLabelFilters;

TEST_CASE("DockerLabelFilters is the filters JSON of the labels, percent-encoded",
          "[docker_filters]") {
  // {"label":["mojoup.session=s1","openshell.ai/managed-by"]}
  CHECK(DockerLabelFilters({"mojoup.session=s1", "openshell.ai/managed-by"}) ==
        "%7B%22label%22%3A%5B%22mojoup.session%3Ds1%22%2C%22openshell.ai%2Fmanaged-by%22%5D%7D");
  // {"label":[]}
  CHECK(DockerLabelFilters({}) == "%7B%22label%22%3A%5B%5D%7D");
}

TEST_CASE("DockerLabelFilters keeps a label with a quote or a backslash one label",
          "[docker_filters]") {
  // {"label":["a=\"b\\"]}: the quote and the backslash escaped, not ending
  // the string.
  CHECK(DockerLabelFilters({"a=\"b\\"}) == "%7B%22label%22%3A%5B%22a%3D%5C%22b%5C%5C%22%5D%7D");
}

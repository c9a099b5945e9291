#include "mojoup/internal/sha256.h"

#include <catch2/catch.hpp>
#include <string>

using mojoup::internal::Sha256Hex;

TEST_CASE("Sha256Hex gives the FIPS 180-2 digests in lowercase hex", "[sha256]") {
  REQUIRE(Sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  REQUIRE(Sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Docker names a context's directory after the digest of its name.
  REQUIRE(Sha256Hex("default").size() == 64);
}

TEST_CASE("Sha256Hex digests every byte, NULs included", "[sha256]") {
  const std::string with_nul("a\0b", 3);
  REQUIRE(Sha256Hex(with_nul) != Sha256Hex("a"));
  REQUIRE(Sha256Hex(with_nul) == Sha256Hex(std::string("a\0b", 3)));
}

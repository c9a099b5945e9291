#include "mojoup/internal/fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <utility>

using mojoup::internal::Fd;

namespace {

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

}  // namespace

TEST_CASE("an Fd closes what it owns when destroyed", "[fd]") {
  int raw = -1;
  {
    Fd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    REQUIRE(fd.ok());
    raw = fd.get();
    REQUIRE(IsOpen(raw));
  }
  REQUIRE_FALSE(IsOpen(raw));
}

TEST_CASE("an Fd moves ownership and closes the one it replaces", "[fd]") {
  Fd first(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  Fd second(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int first_raw = first.get();
  const int second_raw = second.get();
  second = std::move(first);
  REQUIRE_FALSE(first.ok());
  REQUIRE(second.get() == first_raw);
  REQUIRE_FALSE(IsOpen(second_raw));

  Fd third(std::move(second));
  REQUIRE(third.get() == first_raw);
  REQUIRE_FALSE(second.ok());
}

TEST_CASE("Close and Reset close early, once", "[fd]") {
  Fd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int raw = fd.get();
  REQUIRE(fd.Close() == 0);
  REQUIRE_FALSE(fd.ok());
  REQUIRE_FALSE(IsOpen(raw));
  REQUIRE(fd.Close() == 0);  // nothing left to close
  fd.Reset();

  Fd empty;
  REQUIRE_FALSE(empty.ok());
  REQUIRE(empty.get() == -1);
}

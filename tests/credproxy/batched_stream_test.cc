// The layer under the proxy's TLS streams that moves several records per
// syscall while a body streams: what it holds, when it lets go, and that it
// is invisible outside a body. Over a real loopback TCP connection.
#include "batched_stream.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "../support/stream_pair.h"

using mojoup::credproxy::Batched;
namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::ip::tcp;

namespace {

using BatchedPair = mojoup::test::StreamPair<Batched<beast::tcp_stream>>;

std::string Bytes(std::size_t n, char c) { return std::string(n, c); }

}  // namespace

TEST_CASE("batched stream: outside a batch a write goes at once and nothing is held") {
  BatchedPair pair;
  const std::string record = Bytes(17 * 1024, 'a');
  pair.Run([&]() -> asio::awaitable<void> {
    co_await asio::async_write(pair.near, asio::buffer(record), asio::use_awaitable);
  }());
  CHECK(pair.near.held() == 0);
  CHECK(pair.Waiting() == record.size());
}

TEST_CASE("batched stream: in a batch writes are held until flushed, then go in order") {
  BatchedPair pair;
  std::string sent;
  pair.near.Batch(true);
  pair.Run([&]() -> asio::awaitable<void> {
    for (char c : std::string("abc")) {
      const std::string record = Bytes(16 * 1024, c);
      co_await asio::async_write(pair.near, asio::buffer(record), asio::use_awaitable);
      sent += record;
    }
  }());
  CHECK(pair.near.held() == sent.size());
  CHECK(pair.Waiting() == 0);
  beast::error_code ec;
  pair.Run([&]() -> asio::awaitable<void> { co_await pair.near.Flush(ec); }());
  REQUIRE_FALSE(ec);
  CHECK(pair.near.held() == 0);
  std::string got(sent.size(), '\0');
  asio::read(pair.far, asio::buffer(got));
  CHECK(got == sent);
}

TEST_CASE("batched stream: a batch never holds more than its bound") {
  BatchedPair pair;
  pair.near.Batch(true);
  const std::string record = Bytes(16 * 1024, 'x');
  std::size_t written = 0;
  pair.Run([&]() -> asio::awaitable<void> {
    for (int i = 0; i < 10; ++i) {
      co_await asio::async_write(pair.near, asio::buffer(record), asio::use_awaitable);
      written += record.size();
      CHECK(pair.near.held() < Batched<beast::tcp_stream>::kBatchBytes);
    }
  }());
  CHECK(pair.Waiting() + pair.near.held() == written);
}

TEST_CASE("batched stream: a batch reads ahead and hands out what was asked, in order") {
  BatchedPair pair;
  std::string sent;
  for (char c : std::string("pqrs")) sent += Bytes(16 * 1024, c);
  asio::write(pair.far, asio::buffer(sent));
  pair.near.Batch(true);
  std::string got;
  pair.Run([&]() -> asio::awaitable<void> {
    char piece[17 * 1024];
    while (got.size() < sent.size()) {
      const std::size_t n =
          co_await pair.near.async_read_some(asio::buffer(piece), asio::use_awaitable);
      CHECK(n <= sizeof piece);
      got.append(piece, n);
    }
  }());
  CHECK(got == sent);
  CHECK(pair.near.ahead() == 0);
}

TEST_CASE("batched stream: bytes read ahead are handed out after the batch ends") {
  BatchedPair pair;
  const std::string sent = Bytes(40 * 1024, 'k') + "tail";
  asio::write(pair.far, asio::buffer(sent));
  pair.near.Batch(true);
  std::string got;
  pair.Run([&]() -> asio::awaitable<void> {
    char piece[1024];
    got.append(piece, co_await pair.near.async_read_some(asio::buffer(piece), asio::use_awaitable));
  }());
  pair.near.Batch(false);
  REQUIRE(pair.near.ahead() > 0);
  pair.Run([&]() -> asio::awaitable<void> {
    char piece[4096];
    while (got.size() < sent.size()) {
      got.append(piece,
                 co_await pair.near.async_read_some(asio::buffer(piece), asio::use_awaitable));
    }
  }());
  CHECK(got == sent);
  CHECK(pair.near.ahead() == 0);
}

TEST_CASE("batched stream: what a batch left held goes ahead of the next write") {
  BatchedPair pair;
  pair.near.Batch(true);
  pair.Run([&]() -> asio::awaitable<void> {
    co_await asio::async_write(pair.near, asio::buffer(std::string("first ")),
                               asio::use_awaitable);
  }());
  pair.near.Batch(false);
  pair.Run([&]() -> asio::awaitable<void> {
    co_await asio::async_write(pair.near, asio::buffer(std::string("second")),
                               asio::use_awaitable);
  }());
  CHECK(pair.near.held() == 0);
  std::string got(12, '\0');
  asio::read(pair.far, asio::buffer(got));
  CHECK(got == "first second");
}

TEST_CASE("batched stream: the peer's end reaches a batched read as end of stream") {
  BatchedPair pair;
  asio::write(pair.far, asio::buffer(std::string("last")));
  pair.far.shutdown(tcp::socket::shutdown_send);
  pair.near.Batch(true);
  std::string got;
  beast::error_code ec;
  pair.Run([&]() -> asio::awaitable<void> {
    char piece[64];
    while (!ec) {
      got.append(piece, co_await pair.near.async_read_some(
                            asio::buffer(piece), asio::redirect_error(asio::use_awaitable, ec)));
    }
  }());
  CHECK(got == "last");
  CHECK(ec == asio::error::eof);
}

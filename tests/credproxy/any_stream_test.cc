// The one stream type the proxy's relays are compiled for: that it moves
// bytes as the stream it erases would, gathers a write's buffers, completes
// a handler on the executor the handler asks for, and reaches the layers
// beneath. Over a real loopback TCP connection.
#include "any_stream.h"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "../support/stream_pair.h"

using mojoup::credproxy::AnyStream;
using mojoup::credproxy::Batched;
using mojoup::credproxy::Erase;
using mojoup::credproxy::kRelayChunk;
namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::ip::tcp;

namespace {

using TcpPair = mojoup::test::StreamPair<beast::tcp_stream>;

}  // namespace

TEST_CASE("any stream: a write gathers all its buffers, in order") {
  TcpPair pair;
  AnyStream near = Erase(pair.near);
  const std::string a = "head ", b(3000, 'b'), c = " tail";
  const std::vector<asio::const_buffer> pieces{asio::buffer(a), asio::buffer(b), asio::buffer(c)};
  std::size_t wrote = 0;
  pair.Run([&]() -> asio::awaitable<void> {
    wrote = co_await near.async_write_some(pieces, asio::use_awaitable);
  }());
  // A loopback socket takes a few KiB at once: one write_some, all three.
  CHECK(wrote == a.size() + b.size() + c.size());
  std::string got(wrote, '\0');
  asio::read(pair.far, asio::buffer(got));
  CHECK(got == a + b + c);
}

TEST_CASE("any stream: reads give what arrived, and the peer's end as end of stream") {
  TcpPair pair;
  AnyStream near = Erase(pair.near);
  const std::string sent(100 * 1024, 'r');
  asio::write(pair.far, asio::buffer(sent));
  pair.far.shutdown(tcp::socket::shutdown_send);
  std::string got;
  beast::error_code ec;
  pair.Run([&]() -> asio::awaitable<void> {
    std::vector<char> piece(near.read_most());
    while (!ec) {
      const std::size_t n = co_await near.async_read_some(
          asio::buffer(piece), asio::redirect_error(asio::use_awaitable, ec));
      got.append(piece.data(), n);
    }
  }());
  CHECK(got == sent);
  CHECK(ec == asio::error::eof);
}

TEST_CASE("any stream: a handler completes on the executor it is bound to") {
  TcpPair pair;
  AnyStream near = Erase(pair.near);
  auto strand = asio::make_strand(pair.io);
  asio::write(pair.far, asio::buffer(std::string("x")));
  char byte = 0;
  bool on_strand = false;
  near.async_read_some(asio::buffer(&byte, 1),
                       asio::bind_executor(strand, [&](beast::error_code, std::size_t) {
                         on_strand = strand.running_in_this_thread();
                       }));
  pair.io.run_for(std::chrono::seconds(10));
  CHECK(on_strand);
  CHECK(byte == 'x');
}

TEST_CASE("any stream: a handler never runs inside the call that starts it") {
  TcpPair pair;
  AnyStream near = Erase(pair.near);
  asio::write(pair.far, asio::buffer(std::string("x")));
  char byte = 0;
  bool ran = false;
  near.async_read_some(asio::buffer(&byte, 1), [&](beast::error_code, std::size_t) { ran = true; });
  CHECK_FALSE(ran);
  pair.io.run_for(std::chrono::seconds(10));
  CHECK(ran);
}

TEST_CASE("any stream: a pending operation's handler is freed, not run, with its io_context") {
  bool ran = false;
  {
    TcpPair pair;
    AnyStream near = Erase(pair.near);
    auto owned = std::make_shared<int>(0);
    char byte = 0;
    near.async_read_some(asio::buffer(&byte, 1),
                         [&ran, owned](beast::error_code, std::size_t) { ran = true; });
    pair.io.poll();
  }
  CHECK_FALSE(ran);
}

TEST_CASE("any stream: a socket's read gives up to a relay chunk, and its close is the socket's") {
  TcpPair pair;
  AnyStream near = Erase(pair.near);
  CHECK(near.read_most() == kRelayChunk);
  CHECK(near.ahead() == 0);
  CHECK(near.held() == 0);
  REQUIRE(pair.near.socket().is_open());
  near.Close();
  CHECK_FALSE(pair.near.socket().is_open());
}

TEST_CASE("any stream: TLS reads a record at most, and batches in its Batched layer") {
  TcpPair pair;
  asio::ssl::context context(asio::ssl::context::tls_client);
  asio::ssl::stream<Batched<beast::tcp_stream>> tls(std::move(pair.near), context);
  AnyStream secured = Erase(tls);
  CHECK(secured.read_most() == 16 * 1024);
  const std::string record(16 * 1024, 's');
  secured.Batch(true);
  pair.Run([&]() -> asio::awaitable<void> {
    co_await asio::async_write(tls.next_layer(), asio::buffer(record), asio::use_awaitable);
  }());
  CHECK(secured.held() == record.size());
  beast::error_code ec;
  pair.Run([&]() -> asio::awaitable<void> { co_await secured.Flush(ec); }());
  REQUIRE_FALSE(ec);
  CHECK(secured.held() == 0);
  secured.Batch(false);
  std::string got(record.size(), '\0');
  asio::read(pair.far, asio::buffer(got));
  CHECK(got == record);
  secured.Close();
  CHECK_FALSE(beast::get_lowest_layer(tls).socket().is_open());
}

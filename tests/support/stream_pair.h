// A connected pair over a real loopback TCP connection, for the tests of the
// proxy's stream layers: the layer under test on one end, a plain socket on
// the other.
#pragma once

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <exception>
#include <string>
#include <utility>

namespace mojoup::test {

// `near` is a Near made on a beast::tcp_stream (a tcp_stream itself, or a
// layer over one); `far` is the plain socket it is connected to.
template <typename Near>
struct StreamPair {
  boost::asio::io_context io;
  Near near{boost::beast::tcp_stream(io)};
  boost::asio::ip::tcp::socket far{io};

  StreamPair() {
    using boost::asio::ip::tcp;
    tcp::acceptor acceptor(io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    boost::beast::get_lowest_layer(near).connect(acceptor.local_endpoint());
    acceptor.accept(far);
  }

  // Bytes the far end can read without waiting (read and dropped).
  std::size_t Waiting() {
    far.non_blocking(true);
    std::string bytes(1 << 20, '\0');
    boost::system::error_code ec;
    std::size_t got = 0;
    for (;;) {
      const std::size_t n =
          far.read_some(boost::asio::buffer(bytes.data() + got, bytes.size() - got), ec);
      if (ec) break;
      got += n;
    }
    far.non_blocking(false);
    return got;
  }

  // Runs `work` on the pair's context to its end (10 s at most).
  void Run(boost::asio::awaitable<void> work) {
    bool done = false;
    boost::asio::co_spawn(io, std::move(work), [&](std::exception_ptr e) {
      done = true;
      if (e) std::rethrow_exception(e);
    });
    io.run_for(std::chrono::seconds(10));
    REQUIRE(done);
    io.restart();
  }
};

}  // namespace mojoup::test

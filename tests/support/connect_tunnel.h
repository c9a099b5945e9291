// The first step of every CONNECT client in the proxy's tests: the request
// on a socket connected to the proxy, and its 200 read (left-over bytes stay
// in `buffer`).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>
#include <string>

namespace mojoup::test {

inline void OpenTunnel(boost::asio::ip::tcp::socket& socket, boost::beast::flat_buffer& buffer,
                       const std::string& target) {
  namespace http = boost::beast::http;
  boost::asio::write(socket, boost::asio::buffer("CONNECT " + target +
                                                 " HTTP/1.1\r\nHost: " + target + "\r\n\r\n"));
  http::response_parser<http::empty_body> established;
  established.skip(true);
  http::read_header(socket, buffer, established);
  REQUIRE(established.get().result_int() == 200);
}

}  // namespace mojoup::test

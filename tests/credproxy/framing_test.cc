// The proxy's framing decision on its own: which heads it refuses, how long
// it takes the bodies of the rest to be, and the fields it writes instead of
// the sender's. The same messages through the running proxy, against two
// careless upstreams, are the escape suite's desync tests.
#include "framing.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace mojoup::credproxy;
namespace http = boost::beast::http;

namespace {

struct Verdict {
  const char* name;
  std::string head;
  bool refused;
  Framing::Kind kind = Framing::Kind::kNone;
  std::uint64_t length = 0;
  const char* why = "";  // a part of the refusal's sentence
};

std::string Post(const std::string& fields) {
  return "POST /x HTTP/1.1\r\nHost: a.test\r\n" + fields + "\r\n";
}

}  // namespace

TEST_CASE("a request head is refused when two parsers could frame it two ways", "[framing]") {
  using K = Framing::Kind;
  const std::vector<Verdict> verdicts = {
      {"no body", Post(""), false, K::kNone},
      {"length", Post("Content-Length: 5\r\n"), false, K::kLength, 5},
      {"length with leading zeros", Post("Content-Length: 005\r\n"), false, K::kLength, 5},
      {"length repeated alike", Post("Content-Length: 5\r\ncontent-length: 5\r\n"), false,
       K::kLength, 5},
      {"length in white space", Post("Content-Length: \t5 \r\n"), false, K::kLength, 5},
      {"chunked", Post("Transfer-Encoding: chunked\r\n"), false, K::kChunked},
      {"chunked in capitals", Post("TRANSFER-ENCODING: CHUNKED\r\n"), false, K::kChunked},
      {"two codings fields", Post("Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n"),
       true, K::kNone, 0, "more than once"},
      {"two fields in other cases",
       Post("Transfer-Encoding: chunked\r\ntransfer-encoding: cow\r\n"), true, K::kNone, 0,
       "more than once"},
      {"a list", Post("Transfer-Encoding: identity, chunked\r\n"), true, K::kNone, 0,
       "only \"chunked\""},
      {"chunked twice in a list", Post("Transfer-Encoding: chunked, chunked\r\n"), true},
      {"an unknown coding", Post("Transfer-Encoding: xchunked\r\n"), true},
      {"a coding with parameters", Post("Transfer-Encoding: chunked;q=1\r\n"), true},
      {"coding and length", Post("Content-Length: 3\r\nTransfer-Encoding: chunked\r\n"), true,
       K::kNone, 0, "both given"},
      {"coding in HTTP/1.0", "POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", true,
       K::kNone, 0, "HTTP/1.0"},
      {"lengths that differ", Post("Content-Length: 3\r\nContent-Length: 4\r\n"), true, K::kNone, 0,
       "given twice"},
      {"a signed length", Post("Content-Length: +3\r\n"), true, K::kNone, 0, "plain decimal"},
      {"a negative length", Post("Content-Length: -1\r\n"), true},
      {"a hex length", Post("Content-Length: 0x3\r\n"), true},
      {"a list of lengths", Post("Content-Length: 3, 3\r\n"), true},
      {"a length past 18 digits", Post("Content-Length: 1234567890123456789\r\n"), true},
      {"a length with a space inside", Post("Content-Length: 1 2\r\n"), true},
      {"an underscore for a dash", Post("Transfer_Encoding: chunked\r\n"), true, K::kNone, 0,
       "underscore"},
      {"space before the colon", Post("Transfer-Encoding : chunked\r\n"), true, K::kNone, 0,
       "white space before its colon"},
      {"a tab before the colon", Post("Content-Length\t: 3\r\n"), true},
      {"a vertical tab in a value",
       Post("Transfer-Encoding: \x0b"
            "chunked\r\n"),
       true, K::kNone, 0, "control byte"},
      {"obs-fold", Post("X-A: a\r\n b\r\n"), true, K::kNone, 0, "obs-fold"},
      {"a fold that hides a coding", Post("X-A: a\r\n Transfer-Encoding: chunked\r\n"), true},
      {"a bare LF ending a line", "POST /x HTTP/1.1\r\nHost: a.test\nX: y\r\n\r\n", true, K::kNone,
       0, "bare line feed"},
      {"bare LFs throughout", "POST /x HTTP/1.1\nHost: a.test\n\n", true},
      {"a bare CR", Post("X-A: a\rb\r\n"), true, K::kNone, 0, "bare carriage return"},
      {"a NUL", Post(std::string("X-A: a\0b\r\n", 10)), true, K::kNone, 0, "NUL"},
      {"two Hosts", Post("Host: evil.test\r\n"), true, K::kNone, 0, "Host"},
      {"two spaces in the request line", "POST  /x HTTP/1.1\r\n\r\n", true},
      {"a tab in the request line", "POST\t/x HTTP/1.1\r\n\r\n", true},
      {"a lowercase version", "POST /x http/1.1\r\n\r\n", true},
      {"HTTP/2 in an HTTP/1 head", "POST /x HTTP/2.0\r\n\r\n", true},
      {"no colon", Post("X-A\r\n"), true, K::kNone, 0, "no colon"},
  };
  for (const Verdict& verdict : verdicts) {
    INFO(verdict.name);
    const Framing framing = RequestFraming(verdict.head);
    REQUIRE(framing.ok() == !verdict.refused);
    if (verdict.refused) {
      REQUIRE_THAT(framing.error, Catch::Matchers::Contains(verdict.why));
      continue;
    }
    REQUIRE(framing.kind == verdict.kind);
    REQUIRE(framing.length == verdict.length);
  }
}

TEST_CASE("a response is framed as RFC 9112 says, and refused where it is ambiguous", "[framing]") {
  using K = Framing::Kind;
  auto response = [](const std::string& status, const std::string& fields) {
    return "HTTP/1.1 " + status + "\r\n" + fields + "\r\n";
  };
  REQUIRE(ResponseFraming(response("200 OK", "Content-Length: 3\r\n"), false).kind == K::kLength);
  REQUIRE(ResponseFraming(response("200 OK", ""), false).kind == K::kUntilClose);
  REQUIRE(ResponseFraming(response("200 OK", "Transfer-Encoding: chunked\r\n"), false).kind ==
          K::kChunked);
  // No body whatever the fields say; a HEAD's or a 304's length is kept.
  const Framing head = ResponseFraming(response("200 OK", "Content-Length: 30\r\n"), true);
  REQUIRE(head.kind == K::kNone);
  REQUIRE(head.informational_length);
  REQUIRE(head.length == 30);
  REQUIRE(ResponseFraming(response("304 Not Modified", "Content-Length: 9\r\n"), false)
              .informational_length);
  REQUIRE(ResponseFraming(response("204 No Content", "Content-Length: 9\r\n"), false).kind ==
          K::kNone);
  REQUIRE(ResponseFraming(response("100 Continue", ""), false).kind == K::kNone);
  REQUIRE(ResponseFraming("HTTP/1.1 200\r\n\r\n", false).ok());
  // The same ambiguities as a request's.
  for (const char* fields : {"Transfer-Encoding: gzip, chunked\r\n",
                             "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
                             "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n",
                             "Content-Length: 3\r\nContent-Length: 30\r\n", "X: a\r\n b\r\n"}) {
    INFO(fields);
    REQUIRE_FALSE(ResponseFraming(response("200 OK", fields), false).ok());
  }
  REQUIRE_FALSE(ResponseFraming("HTTP/1.1 200 OK\nContent-Length: 3\n\n", false).ok());
  REQUIRE_FALSE(ResponseFraming("HTTP/1.1 2000 OK\r\n\r\n", false).ok());
}

TEST_CASE("a head ends at its empty line, bare line feeds included", "[framing]") {
  REQUIRE(HeadLength("GET / HTTP/1.1\r\nHost: a\r\n\r\nbody") == 27);
  REQUIRE(HeadLength("GET / HTTP/1.1\r\nHost: a\r\n") == 0);
  REQUIRE(HeadLength("GET / HTTP/1.1\nHost: a\n\nbody") == 24);
  // Searching again from where the last search stopped finds the same end.
  const std::string head = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
  for (std::size_t from = 0; from + 2 < head.size(); ++from) {
    INFO(from);
    REQUIRE(HeadLength(head, from) == head.size());
  }
}

TEST_CASE("the proxy writes framing and hop-by-hop fields of its own", "[framing]") {
  http::request<http::empty_body> request{http::verb::post, "/x", 11};
  request.set(http::field::host, "a.test");
  request.insert(http::field::transfer_encoding, "chunked");
  request.insert(http::field::connection, "keep-alive, X-Hop, Content-Length");
  request.insert("X-Hop", "hop");
  request.insert(http::field::keep_alive, "timeout=5");
  request.insert(http::field::te, "trailers");
  request.insert(http::field::trailer, "X-Checksum");
  request.insert(http::field::upgrade, "h2c");
  request.insert(http::field::proxy_connection, "keep-alive");
  Framing framing;
  framing.kind = Framing::Kind::kLength;
  framing.length = 12;
  REQUIRE_FALSE(Reframe(request.base(), framing, false));
  REQUIRE(request[http::field::content_length] == "12");
  REQUIRE(request.count(http::field::content_length) == 1);
  REQUIRE(request.count(http::field::transfer_encoding) == 0);
  REQUIRE(request[http::field::connection] == "close");
  for (auto name : {http::field::keep_alive, http::field::te, http::field::trailer,
                    http::field::upgrade, http::field::proxy_connection}) {
    REQUIRE(request.count(name) == 0);
  }
  REQUIRE(request.count("X-Hop") == 0);
  REQUIRE(request[http::field::host] == "a.test");

  framing.kind = Framing::Kind::kChunked;
  REQUIRE(Reframe(request.base(), framing, true));
  REQUIRE(request[http::field::transfer_encoding] == "chunked");
  REQUIRE(request.count(http::field::content_length) == 0);
  REQUIRE(request.count(http::field::connection) == 0);

  // A WebSocket upgrade keeps its Upgrade, and says so itself.
  http::request<http::empty_body> upgrade{http::verb::get, "/ws", 11};
  upgrade.set(http::field::connection, "keep-alive, Upgrade");
  upgrade.set(http::field::upgrade, "websocket");
  Reframe(upgrade.base(), Framing{}, true);
  REQUIRE(upgrade[http::field::upgrade] == "websocket");
  REQUIRE(upgrade[http::field::connection] == "Upgrade");

  // A body of unknown length: chunked to an HTTP/1.1 client, ended by
  // closing to an HTTP/1.0 one.
  http::response<http::empty_body> response{http::status::ok, 11};
  response.set(http::field::content_length, "3");
  framing.kind = Framing::Kind::kUntilClose;
  Reframe(response.base(), framing, true, 11);
  REQUIRE(response[http::field::transfer_encoding] == "chunked");
  REQUIRE(response.count(http::field::content_length) == 0);
  Reframe(response.base(), framing, true, 10);
  REQUIRE(response.count(http::field::transfer_encoding) == 0);
  REQUIRE(response[http::field::connection] == "close");
  REQUIRE_FALSE(KeepsOpen(framing, 10));
}

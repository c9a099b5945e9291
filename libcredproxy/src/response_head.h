// What the proxy does to a response's head on a connection that could have
// carried a real key upstream: scrub it, and learn how its body is coded so
// that the scrubber can read the body as a client would.
#pragma once

#include <boost/beast/http.hpp>
#include <string>

#include "scrubber.h"

namespace mojoup::credproxy {

// The coding of a response body, Content-Encoding and any Transfer-Encoding
// other than chunked together. One layer of gzip or deflate the proxy can
// undo; anything else it cannot read, so cannot scrub.
enum class BodyCoding { kIdentity, kGzip, kDeflate, kUnreadable };
BodyCoding CodingOf(const boost::beast::http::response_header<>& header, std::string& names);

// Marks a response whose body the proxy sends decoded: no Content-Encoding,
// no Content-Length, no coding but chunked; chunked for an HTTP/1.1 client,
// else ended by closing the connection.
void MarkDecoded(boost::beast::http::response_header<>& header, unsigned client_version);

// Scrubs the reason phrase and every field's name and value, keeping the
// fields' order and repeats.
void ScrubHead(boost::beast::http::response_header<>& header, const Scrubber& scrubber);

}  // namespace mojoup::credproxy

// A careless HTTP/1.1 request parser, the kind of upstream request
// smuggling feeds on (lenient_server.h serves with it).
//
// It reads what strict parsers refuse, the way lax servers in the wild do
// (the request-smuggling research's catalogue: Kettle's "HTTP Desync
// Attacks", 2019; RFC 9112 §11.2):
//   - a line ends at LF, with or without CR before it;
//   - a field name is what precedes the colon, white space trimmed, its
//     case ignored and '_' read as '-';
//   - a line starting with a space or tab continues the field before it;
//   - of repeated fields, the first or the last counts (`Repeated`): run
//     both, and a message that two such servers read differently shows;
//   - Transfer-Encoding counts as chunked when "chunked" appears anywhere in
//     it, and wins over Content-Length;
//   - Content-Length and chunk sizes are read as far as they are digits,
//     after an optional '+', so "0x10" is 0 and "5 ; x" is 5.
//
//   LenientParse parsed = ParseLeniently(bytes, Repeated::kLast);
//   for (const LenientRequest& request : parsed.requests) ...
//
// Bounded: at most 64 KiB of head and 16 MiB of body a request.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mojoup::test {

enum class Repeated { kFirst, kLast };

struct LenientRequest {
  std::string method;
  std::string target;
  std::string host;
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased
  std::string body;
  std::string Header(std::string_view name) const;
};

struct LenientParse {
  std::vector<LenientRequest> requests;
  std::size_t used = 0;  // bytes the whole requests took
  bool error = false;    // something not even this parser reads
};

// Every whole request at the start of `bytes`, one after another.
LenientParse ParseLeniently(std::string_view bytes, Repeated repeated);

}  // namespace mojoup::test

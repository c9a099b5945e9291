#include "response_head.h"

#include <utility>
#include <vector>

#include "request_head.h"

namespace mojoup::credproxy {
namespace {

namespace http = boost::beast::http;

// The codings listed in one field, lowercased, without identity (and
// without chunked, which Beast undoes).
std::vector<std::string> Codings(const http::response_header<>& header, http::field name) {
  std::vector<std::string> out;
  auto range = header.equal_range(name);
  for (auto it = range.first; it != range.second; ++it) {
    const std::string value = Str(it->value());
    std::size_t start = 0;
    while (start <= value.size()) {
      std::size_t comma = value.find(',', start);
      if (comma == std::string::npos) comma = value.size();
      std::string token = value.substr(start, comma - start);
      const std::size_t semicolon = token.find(';');  // parameters
      if (semicolon != std::string::npos) token.resize(semicolon);
      const std::size_t first = token.find_first_not_of(" \t");
      const std::size_t last = token.find_last_not_of(" \t");
      token = first == std::string::npos ? "" : token.substr(first, last - first + 1);
      for (char& c : token) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
      if (!token.empty() && token != "identity" && token != "chunked") out.push_back(token);
      start = comma + 1;
    }
  }
  return out;
}

}  // namespace

BodyCoding CodingOf(const http::response_header<>& header, std::string& names) {
  std::vector<std::string> codings = Codings(header, http::field::content_encoding);
  for (std::string& coding : Codings(header, http::field::transfer_encoding)) {
    codings.push_back(std::move(coding));
  }
  names.clear();
  for (const std::string& coding : codings) names += (names.empty() ? "" : ", ") + coding;
  if (codings.empty()) return BodyCoding::kIdentity;
  if (codings.size() > 1) return BodyCoding::kUnreadable;
  if (codings[0] == "gzip" || codings[0] == "x-gzip") return BodyCoding::kGzip;
  if (codings[0] == "deflate") return BodyCoding::kDeflate;
  return BodyCoding::kUnreadable;
}

void MarkDecoded(http::response_header<>& header, unsigned client_version) {
  header.erase(http::field::content_encoding);
  header.erase(http::field::content_length);
  header.erase(http::field::transfer_encoding);
  if (client_version >= 11) {
    header.set(http::field::transfer_encoding, "chunked");
  } else {
    header.set(http::field::connection, "close");
  }
}

void ScrubHead(http::response_header<>& header, const Scrubber& scrubber) {
  if (scrubber.empty()) return;
  const std::string reason = Str(header.reason());
  if (std::string scrubbed = scrubber.Scrub(reason); scrubbed != reason) header.reason(scrubbed);
  std::vector<std::pair<std::string, std::string>> fields;
  bool changed = false;
  for (const auto& field : header) {
    const std::string name = Str(field.name_string());
    const std::string value = Str(field.value());
    std::string scrubbed_name = scrubber.Scrub(name);
    std::string scrubbed_value = scrubber.Scrub(value);
    changed = changed || scrubbed_name != name || scrubbed_value != value;
    fields.emplace_back(std::move(scrubbed_name), std::move(scrubbed_value));
  }
  if (!changed) return;
  while (header.begin() != header.end()) header.erase(header.begin());
  for (const auto& [name, value] : fields) header.insert(name, value);
}

}  // namespace mojoup::credproxy

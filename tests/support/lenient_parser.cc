#include "lenient_parser.h"

namespace mojoup::test {
namespace {
constexpr std::size_t kHeadLimit = 64 * 1024;
constexpr std::size_t kBodyLimit = 16 * 1024 * 1024;

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    if (c == '_') c = '-';
  }
  return out;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

// The next line at `at` (LF-ended; a CR before the LF dropped), or false
// when no LF has come yet.
bool NextLine(std::string_view bytes, std::size_t& at, std::string_view& line) {
  const std::size_t lf = bytes.find('\n', at);
  if (lf == std::string_view::npos) return false;
  line = bytes.substr(at, lf - at);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  at = lf + 1;
  return true;
}

// Digits as far as they go, after white space and an optional '+'.
std::size_t LeadingNumber(std::string_view text, int base) {
  text = Trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  std::size_t value = 0;
  for (char c : text) {
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (base == 16 && c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (base == 16 && c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (digit < 0) break;
    value = value * static_cast<std::size_t>(base) + static_cast<std::size_t>(digit);
    if (value > kBodyLimit) return kBodyLimit + 1;
  }
  return value;
}

enum class Step { kWhole, kIncomplete, kError };

// The chunked body at `at`; false while incomplete.
Step ReadChunked(std::string_view bytes, std::size_t& at, std::string& body) {
  for (;;) {
    std::string_view line;
    if (!NextLine(bytes, at, line)) return Step::kIncomplete;
    const std::size_t size = LeadingNumber(line, 16);
    if (size > kBodyLimit || body.size() + size > kBodyLimit) return Step::kError;
    if (size == 0) {
      // Trailer lines, to the empty one.
      for (;;) {
        if (!NextLine(bytes, at, line)) return Step::kIncomplete;
        if (line.empty()) return Step::kWhole;
      }
    }
    if (bytes.size() < at + size) return Step::kIncomplete;
    body.append(bytes.substr(at, size));
    at += size;
    if (!NextLine(bytes, at, line)) return Step::kIncomplete;  // the chunk's line end
  }
}

// One request at `at`.
Step ReadOne(std::string_view bytes, std::size_t& at, Repeated repeated, LenientRequest& out) {
  std::string_view line;
  do {
    if (!NextLine(bytes, at, line)) {
      return bytes.size() - at > kHeadLimit ? Step::kError : Step::kIncomplete;
    }
  } while (Trim(line).empty());
  const std::size_t space = line.find_first_of(" \t");
  if (space == std::string_view::npos) return Step::kError;
  out.method = std::string(line.substr(0, space));
  std::string_view rest = Trim(line.substr(space));
  out.target = std::string(rest.substr(0, rest.find_first_of(" \t")));
  for (;;) {
    if (!NextLine(bytes, at, line)) return Step::kIncomplete;
    if (line.empty()) break;
    if ((line.front() == ' ' || line.front() == '\t') && !out.headers.empty()) {
      out.headers.back().second += " " + std::string(Trim(line));
      continue;
    }
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    out.headers.emplace_back(Lower(Trim(line.substr(0, colon))),
                             std::string(Trim(line.substr(colon + 1))));
  }
  auto chosen = [&](std::string_view name) -> const std::string* {
    const std::string* found = nullptr;
    for (const auto& [field, value] : out.headers) {
      if (field != name) continue;
      found = &value;
      if (repeated == Repeated::kFirst) break;
    }
    return found;
  };
  if (const std::string* host = chosen("host")) out.host = *host;
  if (const std::string* coding = chosen("transfer-encoding");
      coding && Lower(*coding).find("chunked") != std::string::npos) {
    return ReadChunked(bytes, at, out.body);
  }
  if (const std::string* length = chosen("content-length")) {
    const std::size_t size = LeadingNumber(*length, 10);
    if (size > kBodyLimit) return Step::kError;
    if (bytes.size() < at + size) return Step::kIncomplete;
    out.body = std::string(bytes.substr(at, size));
    at += size;
  }
  return Step::kWhole;
}

}  // namespace

std::string LenientRequest::Header(std::string_view name) const {
  for (const auto& [field, value] : headers) {
    if (field == name) return value;
  }
  return {};
}

LenientParse ParseLeniently(std::string_view bytes, Repeated repeated) {
  LenientParse parsed;
  while (parsed.used < bytes.size()) {
    std::size_t at = parsed.used;
    LenientRequest request;
    const Step step = ReadOne(bytes, at, repeated, request);
    if (step == Step::kError) parsed.error = true;
    if (step != Step::kWhole) break;
    parsed.requests.push_back(std::move(request));
    parsed.used = at;
  }
  return parsed;
}

}  // namespace mojoup::test

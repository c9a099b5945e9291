#include "framing.h"

#include <array>
#include <vector>

#include "fmt/format.h"

namespace mojoup::credproxy {
namespace {

namespace http = boost::beast::http;

// tchar (RFC 9110 §5.6.2): the characters of a token, such as a field name.
constexpr std::array<bool, 256> TokenChars() {
  std::array<bool, 256> table{};
  for (int c = '0'; c <= '9'; ++c) table[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) table[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c) table[c] = true;
  for (char c : std::string_view("!#$%&'*+-.^_`|~")) table[static_cast<unsigned char>(c)] = true;
  return table;
}
constexpr std::array<bool, 256> kTokenChars = TokenChars();

bool IsToken(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!kTokenChars[static_cast<unsigned char>(c)]) return false;
  }
  return true;
}

char LowerAscii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (LowerAscii(a[i]) != LowerAscii(b[i])) return false;
  }
  return true;
}

std::string_view TrimOws(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// What a refusal quotes of a value: printable, and short.
std::string Quoted(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 40)) {
    const auto byte = static_cast<unsigned char>(c);
    out += byte >= 0x20 && byte < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", byte);
  }
  if (text.size() > 40) out += "...";
  return out;
}

struct Field {
  std::string_view name;
  std::string_view value;  // without the OWS around it
};

// The head's lines, each checked for the line ending RFC 9112 §2.2 asks
// for; `error` says which line broke it. The empty line that ends the head
// is not among them.
struct Lines {
  std::vector<std::string_view> lines;
  std::string error;
};

Lines SplitLines(std::string_view head) {
  Lines out;
  std::size_t start = 0;
  for (std::size_t at = 0; at < head.size(); ++at) {
    const char c = head[at];
    if (c == '\r') {
      if (at + 1 >= head.size() || head[at + 1] != '\n') {
        out.error = fmt::format("line {} holds a bare carriage return", out.lines.size() + 1);
        return out;
      }
      if (at == start) return out;  // the empty line
      out.lines.push_back(head.substr(start, at - start));
      start = at + 2;
      ++at;
    } else if (c == '\n') {
      out.error = fmt::format("line {} ends in a bare line feed, not CRLF", out.lines.size() + 1);
      return out;
    } else if (c == '\0') {
      out.error = fmt::format("line {} holds a NUL byte", out.lines.size() + 1);
      return out;
    }
  }
  out.error = "the head does not end with an empty line";
  return out;
}

// One field line (RFC 9112 §5): name ":" OWS value OWS, the name a token
// with nothing between it and the colon, the value visible characters,
// spaces and tabs only.
std::string ParseField(std::string_view line, Field& field) {
  if (line.front() == ' ' || line.front() == '\t') {
    return "a field is continued on the next line (obs-fold)";
  }
  const std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    return fmt::format("the field line \"{}\" has no colon", Quoted(line));
  }
  field.name = line.substr(0, colon);
  if (!IsToken(field.name)) {
    const char last = field.name.empty() ? ':' : field.name.back();
    if (last == ' ' || last == '\t') {
      return fmt::format("the field name \"{}\" has white space before its colon",
                         Quoted(TrimOws(field.name)));
    }
    return fmt::format("the field name \"{}\" is not a token", Quoted(field.name));
  }
  const std::string_view value = line.substr(colon + 1);
  for (char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\t') || byte == 0x7f) {
      return fmt::format("the field {} holds the control byte \\x{:02x}", Quoted(field.name), byte);
    }
  }
  field.value = TrimOws(value);
  return {};
}

// What the head's fields say of the body's length; `error` when they say
// it two ways or in a way not every parser reads alike.
struct LengthFields {
  int transfer_encodings = 0;
  std::string_view transfer_encoding;
  bool has_length = false;
  std::uint64_t length = 0;
  int hosts = 0;
  std::string error;
};

std::string CheckContentLength(std::string_view value, LengthFields& fields) {
  if (value.empty() || value.size() > 18 ||
      value.find_first_not_of("0123456789") != std::string_view::npos) {
    return fmt::format("Content-Length \"{}\" is not a plain decimal number", Quoted(value));
  }
  std::uint64_t length = 0;
  for (char c : value) length = length * 10 + static_cast<std::uint64_t>(c - '0');
  if (fields.has_length && length != fields.length) {
    return fmt::format("Content-Length is given twice, as {} and {}", fields.length, length);
  }
  fields.has_length = true;
  fields.length = length;
  return {};
}

LengthFields ReadFields(const std::vector<std::string_view>& lines) {
  LengthFields out;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    Field field;
    if (std::string why = ParseField(lines[i], field); !why.empty()) {
      out.error = std::move(why);
      return out;
    }
    if (EqualsNoCase(field.name, "transfer-encoding")) {
      ++out.transfer_encodings;
      out.transfer_encoding = field.value;
    } else if (EqualsNoCase(field.name, "content-length")) {
      out.error = CheckContentLength(field.value, out);
    } else if (EqualsNoCase(field.name, "host")) {
      ++out.hosts;
    } else if (EqualsNoCase(field.name, "transfer_encoding") ||
               EqualsNoCase(field.name, "content_length")) {
      out.error = fmt::format(
          "the field {} is spelt with an underscore, which some servers read as a framing field",
          Quoted(field.name));
    }
    if (!out.error.empty()) return out;
  }
  return out;
}

// The framing the fields decide (RFC 9112 §6.1 and §6.3), for a message
// that has a body at all.
Framing BodyFraming(const LengthFields& fields, bool http10, bool until_close) {
  Framing framing;
  if (fields.transfer_encodings > 1) {
    framing.error = "Transfer-Encoding is given more than once";
  } else if (fields.transfer_encodings == 1 && !EqualsNoCase(fields.transfer_encoding, "chunked")) {
    framing.error =
        fmt::format("Transfer-Encoding is \"{}\"; the proxy takes only \"chunked\", alone",
                    Quoted(fields.transfer_encoding));
  } else if (fields.transfer_encodings == 1 && fields.has_length) {
    framing.error = "Transfer-Encoding and Content-Length are both given";
  } else if (fields.transfer_encodings == 1 && http10) {
    framing.error = "Transfer-Encoding is given in an HTTP/1.0 message";
  } else if (fields.transfer_encodings == 1) {
    framing.kind = Framing::Kind::kChunked;
  } else if (fields.has_length) {
    framing.kind = Framing::Kind::kLength;
    framing.length = fields.length;
  } else {
    framing.kind = until_close ? Framing::Kind::kUntilClose : Framing::Kind::kNone;
  }
  return framing;
}

bool IsVersion(std::string_view text) { return text == "HTTP/1.1" || text == "HTTP/1.0"; }

// request-line = method SP request-target SP HTTP-version, single spaces,
// the target visible ASCII.
std::string CheckRequestLine(std::string_view line) {
  const std::size_t first = line.find(' ');
  const std::size_t last = line.rfind(' ');
  if (first == std::string_view::npos || first == last) {
    return fmt::format("the request line \"{}\" is not METHOD TARGET VERSION", Quoted(line));
  }
  if (!IsToken(line.substr(0, first))) {
    return fmt::format("the request method \"{}\" is not a token", Quoted(line.substr(0, first)));
  }
  const std::string_view target = line.substr(first + 1, last - first - 1);
  for (char c : target) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7f) {
      return fmt::format("the request target \"{}\" holds a byte other than visible ASCII",
                         Quoted(target));
    }
  }
  if (target.empty()) return "the request target is empty";
  if (!IsVersion(line.substr(last + 1))) {
    return fmt::format("the version \"{}\" is not HTTP/1.1 or HTTP/1.0",
                       Quoted(line.substr(last + 1)));
  }
  return {};
}

// status-line = HTTP-version SP 3DIGIT [SP reason-phrase]
std::string CheckStatusLine(std::string_view line, unsigned& status) {
  if (line.size() < 12 || !IsVersion(line.substr(0, 8)) || line[8] != ' ' ||
      line.substr(9, 3).find_first_not_of("0123456789") != std::string_view::npos ||
      (line.size() > 12 && line[12] != ' ')) {
    return fmt::format("the status line \"{}\" is not HTTP/1.x NNN REASON", Quoted(line));
  }
  for (char c : line.substr(12)) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\t') || byte == 0x7f) {
      return "the reason phrase holds a control byte";
    }
  }
  status = static_cast<unsigned>((line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0'));
  return {};
}

void SetRefused(Framing& framing, std::string why) {
  framing = Framing{};
  framing.error = std::move(why);
}

// The comma-separated tokens of every `name` field, white space trimmed.
std::vector<std::string_view> Tokens(const http::fields& fields, http::field name) {
  std::vector<std::string_view> out;
  auto range = fields.equal_range(name);
  for (auto it = range.first; it != range.second; ++it) {
    const std::string_view value(it->value().data(), it->value().size());
    std::size_t start = 0;
    while (start <= value.size()) {
      std::size_t comma = value.find(',', start);
      if (comma == std::string_view::npos) comma = value.size();
      const std::string_view token = TrimOws(value.substr(start, comma - start));
      if (!token.empty()) out.push_back(token);
      start = comma + 1;
    }
  }
  return out;
}

// Drops the framing and hop-by-hop fields; keeps an Upgrade when `upgrade`.
void DropHopByHop(http::fields& fields, bool upgrade) {
  // Connection's tokens name the fields a sender marked as for this hop only.
  std::vector<std::string> named;
  for (std::string_view token : Tokens(fields, http::field::connection)) {
    if (!(upgrade && EqualsNoCase(token, "upgrade"))) named.emplace_back(token);
  }
  for (const std::string& name : named) {
    fields.erase(boost::beast::string_view(name.data(), name.size()));
  }
  for (http::field name : {http::field::connection, http::field::keep_alive,
                           http::field::proxy_connection, http::field::te, http::field::trailer,
                           http::field::transfer_encoding, http::field::content_length}) {
    fields.erase(name);
  }
  if (!upgrade) fields.erase(http::field::upgrade);
}

bool NamesToken(const http::fields& fields, http::field name, std::string_view token) {
  for (std::string_view named : Tokens(fields, name)) {
    if (EqualsNoCase(named, token)) return true;
  }
  return false;
}

// The Connection field for a connection kept open or not, after
// DropHopByHop took the sender's.
void SetKeepAlive(http::fields& fields, unsigned version, bool keep_alive) {
  if (version >= 11 && !keep_alive) fields.set(http::field::connection, "close");
  if (version < 11 && keep_alive) fields.set(http::field::connection, "keep-alive");
}

}  // namespace

std::size_t HeadLength(std::string_view bytes, std::size_t from) {
  for (std::size_t at = bytes.find('\n', from); at != std::string_view::npos;
       at = bytes.find('\n', at + 1)) {
    if (at + 1 < bytes.size() && bytes[at + 1] == '\n') return at + 2;
    if (at + 2 < bytes.size() && bytes[at + 1] == '\r' && bytes[at + 2] == '\n') return at + 3;
  }
  return 0;
}

Framing RequestFraming(std::string_view head) {
  Framing framing;
  Lines lines = SplitLines(head);
  if (!lines.error.empty()) {
    SetRefused(framing, std::move(lines.error));
    return framing;
  }
  if (lines.lines.empty()) {
    SetRefused(framing, "the request has no request line");
    return framing;
  }
  if (std::string why = CheckRequestLine(lines.lines[0]); !why.empty()) {
    SetRefused(framing, std::move(why));
    return framing;
  }
  LengthFields fields = ReadFields(lines.lines);
  if (!fields.error.empty()) {
    SetRefused(framing, std::move(fields.error));
    return framing;
  }
  if (fields.hosts > 1) {
    SetRefused(framing, "Host is given more than once");
    return framing;
  }
  const bool http10 = lines.lines[0].substr(lines.lines[0].size() - 3) == "1.0";
  return BodyFraming(fields, http10, /*until_close=*/false);
}

Framing ResponseFraming(std::string_view head, bool head_request) {
  Framing framing;
  Lines lines = SplitLines(head);
  unsigned status = 0;
  std::string why = lines.error;
  if (why.empty() && lines.lines.empty()) why = "the response has no status line";
  if (why.empty()) why = CheckStatusLine(lines.lines[0], status);
  LengthFields fields;
  if (why.empty()) {
    fields = ReadFields(lines.lines);
    why = fields.error;
  }
  if (!why.empty()) {
    SetRefused(framing, std::move(why));
    return framing;
  }
  framing = BodyFraming(fields, lines.lines[0].substr(5, 3) == "1.0", /*until_close=*/true);
  if (!framing.ok()) return framing;
  // RFC 9112 §6.3 rules 1 and 2: no body whatever the fields say.
  if (head_request || status / 100 == 1 || status == 204 || status == 304) {
    const bool named = framing.kind == Framing::Kind::kLength;
    framing.kind = Framing::Kind::kNone;
    framing.informational_length = named && (head_request || status == 304);
    if (!framing.informational_length) framing.length = 0;
  }
  return framing;
}

bool Reframe(http::request_header<>& header, const Framing& framing, bool keep_alive) {
  const bool upgrade = NamesToken(header, http::field::connection, "upgrade") &&
                       header.find(http::field::upgrade) != header.end();
  DropHopByHop(header, upgrade);
  if (upgrade) header.set(http::field::connection, "Upgrade");
  const bool chunked = framing.kind == Framing::Kind::kChunked;
  if (chunked) header.set(http::field::transfer_encoding, "chunked");
  if (framing.kind == Framing::Kind::kLength) {
    header.set(http::field::content_length, std::to_string(framing.length));
  }
  if (!upgrade) SetKeepAlive(header, header.version(), keep_alive);
  return chunked;
}

void Reframe(http::response_header<>& header, const Framing& framing, bool keep_alive,
             unsigned peer_version) {
  const bool upgrade = header.result_int() == 101;
  DropHopByHop(header, upgrade);
  if (upgrade) header.set(http::field::connection, "Upgrade");
  const bool unknown_length =
      framing.kind == Framing::Kind::kChunked || framing.kind == Framing::Kind::kUntilClose;
  if (unknown_length && peer_version >= 11) {
    header.set(http::field::transfer_encoding, "chunked");
  }
  if (framing.kind == Framing::Kind::kLength || framing.informational_length) {
    header.set(http::field::content_length, std::to_string(framing.length));
  }
  if (!upgrade)
    SetKeepAlive(header, header.version(), keep_alive && KeepsOpen(framing, peer_version));
}

bool KeepsOpen(const Framing& framing, unsigned client_version) {
  const bool unknown_length =
      framing.kind == Framing::Kind::kChunked || framing.kind == Framing::Kind::kUntilClose;
  return !(unknown_length && client_version < 11);
}

}  // namespace mojoup::credproxy

#include "scrubber.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace mojoup::credproxy {
namespace {

// The characters of base64(`skew` bytes, `value`, ...) that only `value`'s
// bits decide: wherever `value` sits in encoded text, at an offset of `skew`
// modulo 3, these characters appear whatever surrounds it.
std::string Base64Core(const std::string& value, std::size_t skew) {
  std::string input(skew, '\0');
  input += value;
  input.append((3 - input.size() % 3) % 3, '\0');
  std::string encoded(4 * input.size() / 3 + 1, '\0');
  EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                  reinterpret_cast<const unsigned char*>(input.data()),
                  static_cast<int>(input.size()));
  encoded.resize(4 * input.size() / 3);
  // Character k holds input bits [6k, 6k + 6); value's are [8 skew, 8 (skew + n)).
  const std::size_t first = (8 * skew + 5) / 6;
  const std::size_t end = 8 * (skew + value.size()) / 6;
  return end > first ? encoded.substr(first, end - first) : std::string();
}

std::string UrlSafe(std::string text) {
  for (char& c : text) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return text;
}

bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
char ToLower(char c) { return IsUpper(c) ? static_cast<char>(c + 32) : c; }
char ToUpper(char c) { return IsLower(c) ? static_cast<char>(c - 32) : c; }

std::string Lowered(std::string text) {
  for (char& c : text) c = ToLower(c);
  return text;
}

std::string Hex(const std::string& text) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (char c : text) {
    out += kDigits[static_cast<unsigned char>(c) >> 4];
    out += kDigits[static_cast<unsigned char>(c) & 15];
  }
  return out;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Whether `text` (cut off at the stream's end) could still become a whole
// escape of `length` bytes whose bytes from `digits_from` on are hex digits.
bool CutOff(std::string_view text, std::size_t length, std::size_t digits_from) {
  if (text.size() >= length) return false;
  for (std::size_t i = digits_from; i < text.size(); ++i) {
    if (HexValue(text[i]) < 0) return false;
  }
  return true;
}

struct Escape {
  enum class State { kNone, kWhole, kCutOff } state = State::kNone;
  unsigned char value = 0;
  std::uint8_t length = 1;
  Scrubber::Written written = Scrubber::Written::kPlain;
};

// Stands for a \u escape of a character beyond one byte: no text has it.
constexpr unsigned char kWide = 0xff;

Escape ReadHexEscape(std::string_view at, std::size_t digits, Scrubber::Written written) {
  Escape escape;
  const std::size_t length = 2 + digits;
  if (CutOff(at, length, 2)) {
    escape.state = Escape::State::kCutOff;
    return escape;
  }
  if (at.size() < length) return escape;
  unsigned value = 0;
  for (std::size_t i = 2; i < length; ++i) {
    const int digit = HexValue(at[i]);
    if (digit < 0) return escape;
    value = value * 16 + static_cast<unsigned>(digit);
  }
  escape.state = Escape::State::kWhole;
  escape.value = value > 0xff ? kWide : static_cast<unsigned char>(value);
  escape.length = static_cast<std::uint8_t>(length);
  escape.written = written;
  return escape;
}

// The escape at the start of `at` (which begins with '%' or '\\').
Escape ReadEscape(std::string_view at) {
  Escape escape;
  if (at[0] == '%') {
    if (CutOff(at, 3, 1)) {
      escape.state = Escape::State::kCutOff;
    } else if (at.size() >= 3 && HexValue(at[1]) >= 0 && HexValue(at[2]) >= 0) {
      escape = {Escape::State::kWhole,
                static_cast<unsigned char>(HexValue(at[1]) * 16 + HexValue(at[2])), 3,
                Scrubber::Written::kPercent};
    }
    return escape;
  }
  if (at.size() < 2) {
    escape.state = Escape::State::kCutOff;
    return escape;
  }
  static constexpr std::string_view kShortFrom = "\"\\/bfnrt";
  static constexpr std::string_view kShortTo = "\"\\/\b\f\n\r\t";
  if (at[1] == 'u') return ReadHexEscape(at, 4, Scrubber::Written::kUnicode);
  if (at[1] == 'x') return ReadHexEscape(at, 2, Scrubber::Written::kHex);
  if (const std::size_t which = kShortFrom.find(at[1]); which != std::string_view::npos) {
    escape = {Escape::State::kWhole, static_cast<unsigned char>(kShortTo[which]), 2,
              Scrubber::Written::kShort};
  }
  return escape;
}

// Where the next byte that may begin something other than a plain
// character is, from `at` on: memchr for each kind, whose last answers
// `next` keeps (npos: none left) until the stream passes them.
class SpecialFinder {
 public:
  explicit SpecialFinder(std::string_view in) : in_(in) {
    for (std::size_t i = 0; i < kBytes.size(); ++i) next_[i] = Find(i, 0);
  }
  std::size_t From(std::size_t at) {
    std::size_t nearest = in_.size();
    for (std::size_t i = 0; i < kBytes.size(); ++i) {
      if (next_[i] < at) next_[i] = Find(i, at);
      nearest = std::min(nearest, next_[i]);
    }
    return nearest;
  }

 private:
  // The next of byte `i` from `at` on, or the input's size.
  std::size_t Find(std::size_t i, std::size_t at) const {
    const void* found = std::memchr(in_.data() + at, kBytes[i], in_.size() - at);
    return found ? static_cast<std::size_t>(static_cast<const char*>(found) - in_.data())
                 : in_.size();
  }
  static constexpr std::array<char, 4> kBytes = {'%', '\\', '\r', '\n'};
  std::string_view in_;
  std::array<std::size_t, 4> next_{};
};

// Decodes `in` into `view`. Line breaks, as bytes or as escapes, are left
// out: the text on either side of one is read as if it were not there.
void Decode(std::string_view in, Scrubber::View& view) {
  view.owned.clear();
  view.units.clear();
  view.incomplete = in.size();
  SpecialFinder specials(in);
  if (specials.From(0) == in.size()) {
    view.text = in;  // nothing to decode: the stream is its own view
    return;
  }
  bool moved = false;  // the next character does not simply follow the last
  std::size_t at = 0;
  while (at < in.size()) {
    const std::size_t run = specials.From(at);
    if (run > at) {
      if (moved) view.units.push_back({view.owned.size(), at, 1, Scrubber::Written::kPlain});
      moved = false;
      view.owned.append(in.data() + at, run - at);
      at = run;
      continue;
    }
    const char c = in[at];
    if (c == '\r' || c == '\n') {
      ++at;
      moved = true;
      continue;
    }
    const Escape escape = ReadEscape(in.substr(at));
    if (escape.state == Escape::State::kCutOff) {
      view.incomplete = at;
      break;
    }
    if (escape.state == Escape::State::kNone) {
      if (moved) view.units.push_back({view.owned.size(), at, 1, Scrubber::Written::kPlain});
      moved = false;
      view.owned.push_back(c);
      ++at;
      continue;
    }
    at += escape.length;
    if (escape.value == '\r' || escape.value == '\n') {
      moved = true;
      continue;
    }
    view.units.push_back({view.owned.size(), at - escape.length, escape.length, escape.written});
    view.owned.push_back(static_cast<char>(escape.value));
    moved = false;
  }
  view.text = view.owned;
}

// The skip search's block: two bytes, case folded, hashed to 13 bits
// (Fibonacci hashing, so that blocks that differ in one bit land apart).
constexpr std::size_t kBlocks = 1 << 13;
std::uint16_t Block(char first, char second) {
  const std::uint32_t pair = static_cast<std::uint32_t>(static_cast<unsigned char>(ToLower(first))) << 8 |
                             static_cast<unsigned char>(ToLower(second));
  return static_cast<std::uint16_t>((pair * 40503u) >> 3 & (kBlocks - 1));
}

bool EqualsFolded(std::string_view text, std::string_view lowered) {
  for (std::size_t i = 0; i < lowered.size(); ++i) {
    if (ToLower(text[i]) != lowered[i]) return false;
  }
  return true;
}

void WriteHexDigits(char* at, unsigned char value, std::size_t digits, bool upper) {
  static constexpr char kLower[] = "0123456789abcdef";
  static constexpr char kUpper[] = "0123456789ABCDEF";
  const char* table = upper ? kUpper : kLower;
  for (std::size_t i = 0; i < digits; ++i) {
    const std::size_t shift = 4 * (digits - 1 - i);
    at[i] = shift >= 8 ? '0' : table[(value >> shift) & 15];
  }
}

// Writes `to` over the unit's bytes in `output`, the way the unit was
// written in `original`.
void Rewrite(const Scrubber::Unit& unit, std::string_view original, char to, std::string& output) {
  char* at = output.data() + unit.offset;
  const std::string_view was = original.substr(unit.offset, unit.length);
  const bool upper = std::any_of(was.begin() + 1, was.end(), IsUpper);
  const auto value = static_cast<unsigned char>(to);
  switch (unit.written) {
    case Scrubber::Written::kPlain:
      at[0] = to;
      return;
    case Scrubber::Written::kPercent:
      WriteHexDigits(at + 1, value, 2, upper);
      return;
    case Scrubber::Written::kUnicode:
      WriteHexDigits(at + 2, value, 4, upper);
      return;
    case Scrubber::Written::kHex:
      WriteHexDigits(at + 2, value, 2, upper);
      return;
    case Scrubber::Written::kShort:
      // Two bytes that decode to one character: `to` escaped when it can
      // be, else written twice (the text then no longer decodes to `from`).
      if (to == '/' || to == '"' || to == '\\') {
        at[0] = '\\';
        at[1] = to;
      } else {
        at[0] = at[1] = to;
      }
      return;
  }
}

// `to` in the case the stream had where it differed from `from`.
char InCaseOf(char decoded, char from, char to) {
  if (decoded == from) return to;
  if (IsUpper(decoded)) return ToUpper(to);
  if (IsLower(decoded)) return ToLower(to);
  return to;
}

}  // namespace

Scrubber::Unit Scrubber::View::At(std::size_t decoded) const {
  auto after = std::upper_bound(units.begin(), units.end(), decoded,
                                [](std::size_t d, const Unit& unit) { return d < unit.decoded; });
  if (after == units.begin()) return Unit{decoded, decoded, 1, Written::kPlain};
  const Unit& before = *(after - 1);
  if (before.decoded == decoded) return before;
  return Unit{decoded, before.offset + before.length + (decoded - before.decoded - 1), 1,
              Written::kPlain};
}

std::vector<Scrubber::Pair> ReflectedForms(const std::string& real, const std::string& shown) {
  std::vector<Scrubber::Pair> forms;
  auto add = [&forms](std::string from, std::string to, bool any_case) {
    if (from.empty() || from == to) return;
    for (const Scrubber::Pair& form : forms) {
      if (form.any_case == any_case &&
          (any_case ? Lowered(form.from) == Lowered(from) : form.from == from)) {
        return;
      }
    }
    forms.push_back({std::move(from), std::move(to), any_case});
  };
  add(real, shown, true);
  // The key in upper, lower or swapped case, then encoded: a client that
  // knows which case was changed turns it back.
  using Recase = char (*)(char);
  static constexpr Recase kRecases[] = {
      [](char c) { return c; }, ToUpper, ToLower,
      [](char c) { return IsUpper(c) ? ToLower(c) : ToUpper(c); }};
  for (Recase recase : kRecases) {
    std::string real_cased = real;
    std::string shown_cased = shown;
    std::transform(real_cased.begin(), real_cased.end(), real_cased.begin(), recase);
    std::transform(shown_cased.begin(), shown_cased.end(), shown_cased.begin(), recase);
    add(Hex(real_cased), Hex(shown_cased), true);
    for (std::size_t skew = 0; skew < 3; ++skew) {
      std::string real_core = Base64Core(real_cased, skew);
      std::string shown_core = Base64Core(shown_cased, skew);
      add(UrlSafe(real_core), UrlSafe(shown_core), false);
      add(std::move(real_core), std::move(shown_core), false);
    }
  }
  return forms;
}

Scrubber::Scrubber(std::vector<Pair> pairs, Hold hold) {
  std::size_t longest = 0;
  for (Pair& pair : pairs) {
    if (pair.from.empty() || pair.from.size() != pair.to.size()) continue;
    std::size_t shared = 0;
    if (hold == Hold::kDifferences) {
      while (shared < pair.from.size() && pair.from[shared] == pair.to[shared]) ++shared;
    }
    longest = std::max(longest, pair.from.size());
    shared_.push_back(shared);
    needles_.push_back(pair.any_case ? Lowered(pair.from) : pair.from);
    pairs_.push_back(std::move(pair));
  }
  // A text's characters escaped at most six bytes each, and a few line
  // breaks among them.
  context_ = 6 * longest + 32;
  if (pairs_.empty()) return;
  shortest_ = longest;
  for (const std::string& needle : needles_) shortest_ = std::min(shortest_, needle.size());
  if (shortest_ < 2) return;  // Search looks at each pair on its own
  // The window (the shortest text's length) may move on until its last
  // block could be the block at some place in some text's first `shortest_`.
  const std::size_t most = std::min<std::size_t>(shortest_ - 1, 255);
  shift_.assign(kBlocks, static_cast<std::uint8_t>(most));
  for (const std::string& needle : needles_) {
    for (std::size_t q = 1; q < shortest_; ++q) {
      std::uint8_t& shift = shift_[Block(needle[q - 1], needle[q])];
      shift = static_cast<std::uint8_t>(std::min<std::size_t>(shift, shortest_ - 1 - q));
    }
    last_block_.push_back(Block(needle[shortest_ - 2], needle[shortest_ - 1]));
  }
}

bool Scrubber::MatchesAt(std::size_t pair, std::string_view text, std::size_t at) const {
  const std::string& needle = needles_[pair];
  if (at + needle.size() > text.size()) return false;
  const std::string_view here = text.substr(at, needle.size());
  return pairs_[pair].any_case ? EqualsFolded(here, needle) : here == needle;
}

template <class Found>
void Scrubber::Search(std::string_view text, Found found) const {
  if (shift_.empty()) {
    for (std::size_t i = 0; i < pairs_.size(); ++i) {
      for (std::size_t at = 0; at < text.size(); ++at) {
        if (MatchesAt(i, text, at)) found(i, at);
      }
    }
    return;
  }
  for (std::size_t end = shortest_ - 1; end < text.size();) {
    const std::uint16_t block = Block(text[end - 1], text[end]);
    if (const std::uint8_t shift = shift_[block]; shift > 0) {
      end += shift;
      continue;
    }
    const std::size_t at = end + 1 - shortest_;
    for (std::size_t i = 0; i < pairs_.size(); ++i) {
      if (last_block_[i] == block && MatchesAt(i, text, at)) found(i, at);
    }
    ++end;
  }
}

const std::string* Scrubber::ReplaceAll(const View& view, std::string_view original,
                                        std::string& output, bool& rewritten) const {
  const std::string* found = nullptr;
  Search(view.text, [&](std::size_t i, std::size_t at) {
    const Pair& pair = pairs_[i];
    if (found == nullptr) found = &pair.from;
    if (!rewritten) {
      output.assign(original);
      rewritten = true;
    }
    for (std::size_t k = 0; k < pair.from.size(); ++k) {
      if (pair.from[k] == pair.to[k]) continue;  // its bytes stay as they were
      const char to =
          pair.any_case ? InCaseOf(view.text[at + k], pair.from[k], pair.to[k]) : pair.to[k];
      Rewrite(view.At(at + k), original, to, output);
    }
  });
  return found;
}

std::size_t Scrubber::HoldFrom(const View& view, std::size_t size) const {
  // An escape cut off at the end could be part of any text; so could the
  // end of the decoded text, from where it stops matching a replacement on.
  std::size_t hold = std::min(view.incomplete, size);
  const std::string_view text = view.text;
  for (std::size_t i = 0; i < pairs_.size(); ++i) {
    const std::string& needle = needles_[i];
    const bool any_case = pairs_[i].any_case;
    for (std::size_t begun = std::min(needle.size() - 1, text.size()); begun > shared_[i];
         --begun) {
      const char first = text[text.size() - begun];
      if ((any_case ? ToLower(first) : first) != needle[0]) continue;
      const std::string_view tail = text.substr(text.size() - begun);
      const std::string_view start = std::string_view(needle).substr(0, begun);
      if (any_case ? EqualsFolded(tail, start) : tail == start) {
        hold = std::min(hold, view.At(text.size() - begun + shared_[i]).offset);
        break;
      }
    }
  }
  return hold;
}

std::string Scrubber::Feed(std::string_view piece) {
  std::string send;
  Feed(piece, send);
  return send;
}

void Scrubber::Feed(std::string_view piece, std::string& out) {
  if (pairs_.empty()) {
    out.append(piece);
    return;
  }
  original_.append(piece);
  if (rewritten_) output_.append(piece);
  Decode(original_, view_);
  const std::string* found = ReplaceAll(view_, original_, output_, rewritten_);
  if (found != nullptr && first_match_.empty()) first_match_ = *found;
  // Never less than what has gone already: that can no longer be held.
  const std::size_t end = std::max(HoldFrom(view_, original_.size()), sent_);
  out.append(rewritten_ ? output_ : original_, sent_, end - sent_);
  const std::size_t drop = std::min(end, original_.size() - std::min(original_.size(), context_));
  original_.erase(0, drop);
  if (rewritten_) {
    output_.erase(0, drop);
    // Once nothing replaced is left in the context, the output is the
    // stream itself again and is not copied piece by piece.
    if (output_ == original_) {
      output_.clear();
      rewritten_ = false;
    }
  }
  sent_ = end - drop;
}

std::string Scrubber::Finish() {
  std::string rest = (rewritten_ ? output_ : original_).substr(sent_);
  original_.clear();
  output_.clear();
  rewritten_ = false;
  sent_ = 0;
  return rest;
}

std::string Scrubber::Scrub(std::string_view text) const {
  std::string output(text);
  if (pairs_.empty()) return output;
  View view;
  Decode(text, view);
  bool rewritten = true;
  ReplaceAll(view, text, output, rewritten);
  return output;
}

}  // namespace mojoup::credproxy

// Scrubber: replaces, in a byte stream that arrives in pieces, every
// occurrence of some texts by others of the same length, so that a
// response's length never changes. The proxy uses it to turn a real key an
// upstream reflects back into the stand-in the sandbox sent.
//
// It decodes before it compares. The stream is read as a client could
// decode it: percent escapes (%73), JSON escapes (\u0073, \/), \x73 escapes
// and line breaks (which wrapped base64 puts between its lines) are undone,
// and a text marked `any_case` is found whatever the case of its letters.
// Each character of a text found is replaced where it stands, written the
// way it was (a %73 becomes the replacement's %XX), so the length holds.
//
// A text split across two pieces is still found: the scrubber keeps the last
// bytes it has seen to match against what follows, and holds back, unsent,
// those of them that could be part of a text where it differs from its
// replacement, and an escape cut off at a piece's end. The start a text
// shares with its replacement ("sk-ant-api03-" in a key and its stand-in)
// goes out at once: sending it gives nothing away, and a stream of
// server-sent events or WebSocket frames does not stall behind the proxy on
// every "s".
//
//   Scrubber scrubber({{real, stand_in, true}});
//   for (piece : body) send(scrubber.Feed(piece));
//   send(scrubber.Finish());
//
// Occurrences are looked for in the bytes as they arrived, never in bytes
// already replaced, so overlapping occurrences are all replaced.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mojoup::credproxy {

class Scrubber {
 public:
  struct Pair {
    std::string from;
    std::string to;         // as long as `from`
    bool any_case = false;  // `from` is found whatever the case of its letters
  };

  // What is held back at the end of a piece.
  enum class Hold {
    kDifferences,  // what could be part of a text where it differs from its replacement
    kWholeTexts,   // what could be part of a text at all: a watch for texts
                   // that must not be sent, not even in part
  };

  // Pairs whose texts are empty or differ in length are ignored: the proxy
  // never changes a message's length.
  explicit Scrubber(std::vector<Pair> pairs, Hold hold = Hold::kDifferences);

  // What can be sent of `piece` now (with what was held back before).
  std::string Feed(std::string_view piece);
  // The same, appended to `out` (whose memory is used again).
  void Feed(std::string_view piece, std::string& out);
  // What is still held back, at the end of the stream.
  std::string Finish();

  // `text` scrubbed on its own (a header value), without touching the stream.
  std::string Scrub(std::string_view text) const;

  // Whether any text has been found so far in the stream, and the first
  // (its `from`).
  bool matched() const { return !first_match_.empty(); }
  const std::string& first_match() const { return first_match_; }
  bool empty() const { return pairs_.empty(); }

  // How one decoded character is written in the stream.
  enum class Written : std::uint8_t {
    kPlain,    // as itself
    kPercent,  // %XX
    kUnicode,  // \uXXXX
    kHex,      // \xXX
    kShort,    // \/, \" and the like
  };
  // Where a decoded character came from. Only those that do not simply
  // follow the one before (escapes, and the first after a line break) are
  // listed.
  struct Unit {
    std::size_t decoded = 0;
    std::size_t offset = 0;
    std::uint8_t length = 1;
    Written written = Written::kPlain;
  };
  // The stream as a client could decode it: `text` is the stream itself
  // where nothing in it needed decoding, else `owned`.
  struct View {
    std::string_view text;
    std::string owned;
    std::vector<Unit> units;
    std::size_t incomplete = 0;  // offset of an escape cut off at the end, or the size
    Unit At(std::size_t decoded) const;
  };

 private:
  // Replaces in `output` every text found in the view of `original` (same
  // length), copying `original` into it first unless it is `rewritten`
  // already; returns the first text found, or nullptr.
  const std::string* ReplaceAll(const View& view, std::string_view original, std::string& output,
                                bool& rewritten) const;
  // Calls found(pair, at) for every occurrence in `text`: a skip search
  // (Wu and Manber's) on two-byte blocks, case folded, so that text no
  // pair's blocks occur in is passed over most of a pair's length a step.
  template <class Found>
  void Search(std::string_view text, Found found) const;
  bool MatchesAt(std::size_t pair, std::string_view text, std::size_t at) const;
  // The offset from which `original` (seen as `view`) must not be sent yet.
  std::size_t HoldFrom(const View& view, std::size_t size) const;

  std::vector<Pair> pairs_;
  std::vector<std::string> needles_;  // per pair: `from`, lowercase when any_case
  std::vector<std::size_t> shared_;   // per pair: how long from and to begin alike
  std::size_t context_ = 0;           // bytes kept to find a text across pieces
  // The skip search's tables: the shortest text's length, how far the
  // window may move on for each block hash, and each pair's last block's.
  std::size_t shortest_ = 0;
  std::vector<std::uint8_t> shift_;
  std::vector<std::uint16_t> last_block_;
  // The last bytes seen, as they arrived, then the piece being fed; and the
  // same as they go out, while anything in them was replaced (else the
  // output is `original_`). Kept between pieces, so no piece allocates.
  std::string original_;
  std::string output_;
  bool rewritten_ = false;
  std::size_t sent_ = 0;  // of the context, sent already
  View view_;
  std::string first_match_;
};

// `real` as an upstream could send it back, each against the same-length
// text to show instead: `real` itself in any case; its hex encoding, and
// the stretches of its base64 encoding that do not depend on the bytes
// around it (at each of the three offsets modulo 3, in the standard and the
// URL-safe alphabet); each of these also of `real` in upper, lower and
// swapped case. Escaped forms of all these are the Scrubber's to decode.
std::vector<Scrubber::Pair> ReflectedForms(const std::string& real, const std::string& shown);

}  // namespace mojoup::credproxy

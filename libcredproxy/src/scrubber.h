// Scrubber: replaces, in a byte stream that arrives in pieces, every
// occurrence of some texts by others of the same length, so that a
// response's length never changes. The proxy uses it to turn a real key an
// upstream reflects back into the stand-in the sandbox sent.
//
// A text split across two pieces is still found: the scrubber keeps the last
// bytes it has seen (the longest text's length less one) to match against
// what follows, and holds back, unsent, those of them that could be part of
// a text where it differs from its replacement. The start a text shares with
// its replacement ("sk-ant-api03-" in a key and its stand-in) goes out at
// once: sending it gives nothing away, and a stream of server-sent events or
// WebSocket frames does not stall behind the proxy on every "s".
//
//   Scrubber scrubber({{real, stand_in}});
//   for (piece : body) send(scrubber.Feed(piece));
//   send(scrubber.Finish());
//
// Occurrences are looked for in the bytes as they arrived, never in bytes
// already replaced, so overlapping occurrences are all replaced.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mojoup::credproxy {

class Scrubber {
 public:
  struct Pair {
    std::string from;
    std::string to;  // as long as `from`
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

  // Whether any text has been replaced so far in the stream, and the first.
  bool matched() const { return !first_match_.empty(); }
  const std::string& first_match() const { return first_match_; }
  bool empty() const { return pairs_.empty(); }

 private:
  // Replaces in `output` every occurrence found in `original` (same
  // length); returns the first text found, or nullptr.
  const std::string* ReplaceAll(std::string_view original, std::string& output) const;
  // Whether any text occurs in `original`.
  bool AnyIn(std::string_view original) const;
  void FeedClean(std::string_view piece, std::string& out);
  // How many bytes at the end of `text` must not be sent yet.
  std::size_t Unsendable(std::string_view text) const;

  std::vector<Pair> pairs_;
  std::vector<std::size_t> shared_;  // per pair: how long from and to begin alike
  std::size_t longest_ = 0;
  // The last bytes seen, as they arrived, then the piece being fed; and the
  // same as they go out. Kept between pieces, so no piece allocates.
  std::string context_original_;
  std::string context_output_;
  std::size_t context_sent_ = 0;  // of the context, sent already
  std::string first_match_;
};

// `real` as an upstream could send it back, each against the same-length
// text to show instead: `real` itself, and the stretches of its base64
// encoding that do not depend on the bytes around it (at each of the three
// offsets modulo 3, in the standard and the URL-safe alphabet).
std::vector<Scrubber::Pair> ReflectedForms(const std::string& real, const std::string& shown);

}  // namespace mojoup::credproxy

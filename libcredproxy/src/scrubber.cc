#include "scrubber.h"

#include <openssl/evp.h>

#include <algorithm>

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

}  // namespace

std::vector<Scrubber::Pair> ReflectedForms(const std::string& real, const std::string& shown) {
  std::vector<Scrubber::Pair> forms = {{real, shown}};
  for (std::size_t skew = 0; skew < 3; ++skew) {
    std::string real_core = Base64Core(real, skew);
    std::string shown_core = Base64Core(shown, skew);
    if (real_core.empty() || real_core == shown_core) continue;
    std::string real_url = UrlSafe(real_core);
    std::string shown_url = UrlSafe(shown_core);
    forms.push_back({std::move(real_core), std::move(shown_core)});
    if (real_url != forms.back().from) forms.push_back({std::move(real_url), std::move(shown_url)});
  }
  return forms;
}

Scrubber::Scrubber(std::vector<Pair> pairs, Hold hold) {
  for (Pair& pair : pairs) {
    if (pair.from.empty() || pair.from.size() != pair.to.size()) continue;
    std::size_t shared = 0;
    if (hold == Hold::kDifferences) {
      while (shared < pair.from.size() && pair.from[shared] == pair.to[shared]) ++shared;
    }
    longest_ = std::max(longest_, pair.from.size());
    shared_.push_back(shared);
    pairs_.push_back(std::move(pair));
  }
}

const std::string* Scrubber::ReplaceAll(std::string_view original, std::string& output) const {
  const std::string* found = nullptr;
  for (const Pair& pair : pairs_) {
    for (std::size_t at = original.find(pair.from); at != std::string_view::npos;
         at = original.find(pair.from, at + 1)) {
      output.replace(at, pair.to.size(), pair.to);
      if (found == nullptr) found = &pair.from;
    }
  }
  return found;
}

std::size_t Scrubber::Unsendable(std::string_view text) const {
  // For each text that the end of `text` could begin: everything from where
  // it stops matching its replacement on.
  std::size_t hold = 0;
  for (std::size_t i = 0; i < pairs_.size(); ++i) {
    const std::string& from = pairs_[i].from;
    for (std::size_t begun = std::min(from.size() - 1, text.size()); begun > shared_[i]; --begun) {
      if (begun - shared_[i] <= hold) break;
      if (from.compare(0, begun, text.substr(text.size() - begun)) == 0) {
        hold = begun - shared_[i];
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
  std::string& original = context_original_;
  std::string& output = context_output_;
  original.append(piece);
  if (!AnyIn(original)) return FeedClean(piece, out);
  output.append(piece);
  const std::string* found = ReplaceAll(original, output);
  if (found != nullptr && first_match_.empty()) first_match_ = *found;
  const std::size_t hold = Unsendable(original);
  const std::size_t keep = std::min(original.size(), longest_ - 1);
  // Never negative: what was held before is still held, or now complete.
  const std::size_t end = std::max(output.size() - hold, context_sent_);
  out.append(output, context_sent_, end - context_sent_);
  original.erase(0, original.size() - keep);
  output.erase(0, output.size() - keep);
  context_sent_ = keep - hold;
}

bool Scrubber::AnyIn(std::string_view original) const {
  return std::any_of(pairs_.begin(), pairs_.end(), [&](const Pair& pair) {
    return original.find(pair.from) != std::string_view::npos;
  });
}

// Feed where nothing is replaced (`piece` is already on the end of the
// original context): the output is the output context then `piece` as it
// is, so `piece` is copied once, to `out`, not through the output context.
void Scrubber::FeedClean(std::string_view piece, std::string& out) {
  std::string& original = context_original_;
  std::string& output = context_output_;
  const std::size_t before = output.size();  // the output context, then piece
  const std::size_t total = before + piece.size();
  const std::size_t hold = Unsendable(original);
  const std::size_t keep = std::min(total, longest_ - 1);
  const std::size_t end = std::max(total - hold, context_sent_);
  if (context_sent_ < before) out.append(output, context_sent_, std::min(end, before) - context_sent_);
  if (end > before) {
    const std::size_t from = std::max(context_sent_, before) - before;
    out.append(piece.substr(from, end - before - from));
  }
  if (keep <= piece.size()) {
    output.assign(piece.substr(piece.size() - keep));
  } else {
    output.erase(0, total - keep);
    output.append(piece);
  }
  original.erase(0, total - keep);
  context_sent_ = keep - hold;
}

std::string Scrubber::Finish() {
  std::string rest = context_output_.substr(context_sent_);
  context_original_.clear();
  context_output_.clear();
  context_sent_ = 0;
  return rest;
}

std::string Scrubber::Scrub(std::string_view text) const {
  std::string output(text);
  ReplaceAll(text, output);
  return output;
}

}  // namespace mojoup::credproxy

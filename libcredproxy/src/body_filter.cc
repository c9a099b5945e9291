#include "body_filter.h"

namespace mojoup::credproxy {
namespace {

// Decoded bytes per step: a small body that inflates to a large one leaves
// the proxy in slices of this size.
constexpr std::size_t kSlice = 64 * 1024;

}  // namespace

BodyFilter::BodyFilter(Scrubber scrubber, std::unique_ptr<Inflater> inflater)
    : scrubber_(std::move(scrubber)), inflater_(std::move(inflater)) {}

void BodyFilter::Input(std::string_view piece) {
  if (piece.empty()) return;
  had_input_ = true;
  if (inflater_) {
    inflater_->Input(piece);
  } else {
    // Scrubbed as it comes: what Next hands out is ready.
    scrubber_.Feed(piece, ready_);
    fed_ = true;
  }
}

BodyFilter::Step BodyFilter::Next(std::string& out) {
  out.clear();
  if (!inflater_) {
    // A step for every piece fed, even one wholly held back: the caller
    // looks at matched() after each.
    if (!fed_) return Step::kNeedInput;
    fed_ = false;
    out.swap(ready_);  // each keeps the other's memory for next time
    return Step::kOutput;
  }
  if (!inflater_->Read(decoded_, kSlice)) return Step::kCorrupt;
  if (decoded_.empty()) return Step::kNeedInput;
  scrubber_.Feed(decoded_, out);
  return Step::kOutput;
}

bool BodyFilter::Finish(std::string& out) {
  out = scrubber_.Finish();
  return !inflater_ || !had_input_ || inflater_->ended();
}

}  // namespace mojoup::credproxy

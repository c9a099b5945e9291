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
    pending_.append(piece);
  }
}

BodyFilter::Step BodyFilter::Next(std::string& out) {
  out.clear();
  if (!inflater_) {
    if (pending_.empty()) return Step::kNeedInput;
    scrubber_.Feed(pending_, out);
    pending_.clear();
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

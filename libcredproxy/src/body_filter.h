// BodyFilter: what happens to a body's bytes between the two connections.
// A response's body is decoded when the upstream compressed it anyway, then
// scrubbed of real values; a request's body is watched for stand-ins it may
// not carry. The bytes stream through: nothing holds a whole body.
//
//   BodyFilter filter(Scrubber(pairs), std::make_unique<Inflater>(Inflater::Coding::kGzip));
//   filter.Input(piece);
//   std::string out;
//   while (filter.Next(out) == BodyFilter::Step::kOutput) send(out);
//   ... at the end: filter.Finish(out); send(out);
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "inflater.h"
#include "scrubber.h"

namespace mojoup::credproxy {

class BodyFilter {
 public:
  explicit BodyFilter(Scrubber scrubber, std::unique_ptr<Inflater> inflater = nullptr);

  void Input(std::string_view piece);

  enum class Step {
    kOutput,     // `out` holds bytes to send (possibly none); call again
    kNeedInput,  // everything given so far has been passed on
    kCorrupt,    // the coded body cannot be decoded
  };
  Step Next(std::string& out);

  // At the end of the body: the bytes held back. False when a coded body
  // ended before its coding did.
  bool Finish(std::string& out);

  const Scrubber& scrubber() const { return scrubber_; }

 private:
  Scrubber scrubber_;
  std::unique_ptr<Inflater> inflater_;
  std::string ready_;    // without an inflater: input scrubbed, not yet passed on
  bool fed_ = false;     // ... and whether any has come since the last Next
  std::string decoded_;  // with one: the last slice it gave
  bool had_input_ = false;
};

}  // namespace mojoup::credproxy

// JSON from another process or a file, parsed so that its sender cannot
// exhaust the stack or the memory: the size is checked before a byte is
// read, the parse is RapidJSON's iterative one (no recursion), and nesting
// past a cap is refused. Each refusal is one sentence naming what was read.
//
//   rapidjson::Document doc;
//   auto parsed = mojoup::internal::ParseBoundedJson(body, doc, "the request body",
//                                                    {.max_bytes = 1 << 20});
//   if (parsed.code() == absl::StatusCode::kResourceExhausted) ...  // 413
//   if (!parsed.ok()) ...                                            // 400
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/reader.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"

namespace mojoup::internal {

struct JsonBounds {
  std::size_t max_bytes = 1 << 20;
  int max_depth = 64;
  // Refuse a string that is not UTF-8. False for JSON that our own writers
  // made from file paths, which are bytes, and for files whose programs
  // take any bytes.
  bool utf8 = true;
};

// Parses all of `text` (its length, not a NUL, ends it) into `doc`:
// iterative, with RapidJSON's UTF-8 validation unless `bounds.utf8` is
// false. `what` names the input in
// the sentences ("the request body"). Errors:
//   ResourceExhausted  "<what> is 67108864 bytes, over the 1048576 allowed"
//                      (checked before parsing)
//   InvalidArgument    "<what> nests deeper than 64 levels"
//                      "<what> is not valid JSON: <RapidJSON's reason> (byte offset N)"
// On error `doc` holds null and, when given, `*error_offset` the byte where
// parsing stopped.
absl::Status ParseBoundedJson(std::string_view text, rapidjson::Document& doc,
                              std::string_view what, JsonBounds bounds = {},
                              std::size_t* error_offset = nullptr);

// A SAX handler that forwards every event to `Handler` (a Document, say)
// and refuses (returns false, so the Reader stops with
// kParseErrorTermination) an array or object nested deeper than
// `max_depth`: for a caller that drives rapidjson::Reader itself, as an in
// situ parse does.
template <typename Handler>
class DepthCappedHandler {
 public:
  using Ch = typename Handler::Ch;

  DepthCappedHandler(Handler& handler, int max_depth) : handler_(handler), max_(max_depth) {}

  // True when the Reader stopped because of the cap.
  bool too_deep() const { return too_deep_; }

  bool Null() { return handler_.Null(); }
  bool Bool(bool b) { return handler_.Bool(b); }
  bool Int(int i) { return handler_.Int(i); }
  bool Uint(unsigned u) { return handler_.Uint(u); }
  bool Int64(std::int64_t i) { return handler_.Int64(i); }
  bool Uint64(std::uint64_t u) { return handler_.Uint64(u); }
  bool Double(double d) { return handler_.Double(d); }
  bool RawNumber(const Ch* s, rapidjson::SizeType length, bool copy) {
    return handler_.RawNumber(s, length, copy);
  }
  bool String(const Ch* s, rapidjson::SizeType length, bool copy) {
    return handler_.String(s, length, copy);
  }
  bool Key(const Ch* s, rapidjson::SizeType length, bool copy) {
    return handler_.Key(s, length, copy);
  }
  bool StartObject() { return Enter() && handler_.StartObject(); }
  bool EndObject(rapidjson::SizeType members) {
    --depth_;
    return handler_.EndObject(members);
  }
  bool StartArray() { return Enter() && handler_.StartArray(); }
  bool EndArray(rapidjson::SizeType elements) {
    --depth_;
    return handler_.EndArray(elements);
  }

 private:
  bool Enter() {
    if (depth_ >= max_) {
      too_deep_ = true;
      return false;
    }
    ++depth_;
    return true;
  }

  Handler& handler_;
  const int max_;
  int depth_ = 0;
  bool too_deep_ = false;
};

}  // namespace mojoup::internal

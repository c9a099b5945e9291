#include "mojoup/internal/bounded_json.h"

#include <rapidjson/encodedstream.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>

#include "fmt/format.h"

namespace mojoup::internal {

absl::Status ParseBoundedJson(std::string_view text, rapidjson::Document& doc,
                              std::string_view what, JsonBounds bounds, std::size_t* error_offset) {
  doc.SetNull();
  if (error_offset != nullptr) *error_offset = 0;
  if (text.size() > bounds.max_bytes) {
    return absl::ResourceExhaustedError(
        fmt::format("{} is {} bytes, over the {} allowed", what, text.size(), bounds.max_bytes));
  }
  constexpr unsigned kIterative = rapidjson::kParseIterativeFlag;
  constexpr unsigned kValidating = kIterative | rapidjson::kParseValidateEncodingFlag;
  rapidjson::MemoryStream bytes(text.data(), text.size());
  rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> stream(bytes);
  rapidjson::Reader reader;
  DepthCappedHandler<rapidjson::Document> capped(doc, bounds.max_depth);
  rapidjson::ParseResult result;
  auto generate = [&](rapidjson::Document& /*handler: doc, reached through `capped`*/) {
    result = bounds.utf8 ? reader.Parse<kValidating>(stream, capped)
                         : reader.Parse<kIterative>(stream, capped);
    return !result.IsError();
  };
  doc.Populate(generate);
  std::size_t offset = result.Offset();
  std::string reason;
  if (capped.too_deep()) {
    reason = fmt::format("{} nests deeper than {} levels", what, bounds.max_depth);
  } else if (result.IsError()) {
    reason = fmt::format("{} is not valid JSON: {} (byte offset {})", what,
                         rapidjson::GetParseError_En(result.Code()), offset);
  } else if (stream.Tell() != text.size()) {
    // The Reader stops at a NUL as at the end: whatever follows one is not
    // part of a document of this length.
    offset = stream.Tell();
    reason = fmt::format("{} is not valid JSON: a NUL byte follows the value (byte offset {})",
                         what, offset);
  } else {
    return absl::OkStatus();
  }
  doc.SetNull();
  if (error_offset != nullptr) *error_offset = offset;
  return absl::InvalidArgumentError(reason);
}

}  // namespace mojoup::internal
